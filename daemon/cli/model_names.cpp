#include "daemon/cli/model_names.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>

namespace ghostline::daemon {

namespace {

// Base (not instruct) models: completion wants a model trained on raw code with FIM tokens.
// Repositories and files as listed on huggingface.co (the repositories' "Files and versions"
// pages): ggml-org/* are the Q8_0 conversions llama.cpp's llama.vscode recommends for FIM;
// lmstudio-community/Qwen2.5-Coder-0.5B-GGUF is bartowski's conversion of the base 0.5B;
// TheBloke/deepseek-coder-1.3b-base-GGUF and second-state/StarCoder2-3B-GGUF convert the base
// models of DeepSeek and BigCode. Sizes are the hub's rounded figures; `pull` checks the exact
// size and SHA-256 from the hub's metadata. None of them has been downloaded here.
constexpr std::array kRecommended = {
    RecommendedModel{"qwen2.5-coder-0.5b", "lmstudio-community/Qwen2.5-Coder-0.5B-GGUF",
                     "Qwen2.5-Coder-0.5B-Q8_0.gguf", "Q8_0", 531'000'000,
                     "any CPU, 1 GB RAM; the draft for the 1.5b and 3b"},
    RecommendedModel{"qwen2.5-coder-1.5b", "ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF",
                     "qwen2.5-coder-1.5b-q8_0.gguf", "Q8_0", 1'650'000'000,
                     "CPU laptop (8 GB RAM) or any GPU, 2 GB"},
    RecommendedModel{"qwen2.5-coder-3b", "ggml-org/Qwen2.5-Coder-3B-Q8_0-GGUF",
                     "qwen2.5-coder-3b-q8_0.gguf", "Q8_0", 3'290'000'000,
                     "GPU with 6-8 GB, or a fast CPU with 16 GB RAM"},
    RecommendedModel{"deepseek-coder-1.3b", "TheBloke/deepseek-coder-1.3b-base-GGUF",
                     "deepseek-coder-1.3b-base.Q4_K_M.gguf", "Q4_K_M", 874'000'000,
                     "CPU laptop, 1.5 GB RAM"},
    RecommendedModel{"starcoder2-3b", "second-state/StarCoder2-3B-GGUF",
                     "starcoder2-3b-Q4_K_M.gguf", "Q4_K_M", 1'850'000'000,
                     "GPU with 4 GB, or a fast CPU with 8 GB RAM"},
};

bool in_set(char c, std::string_view extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         extra.find(c) != std::string_view::npos;
}

bool all_in_set(std::string_view s, std::string_view extra) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return in_set(c, extra); });
}

// A hub repository id: owner/name, each [A-Za-z0-9._-]+.
bool valid_repo(std::string_view repo) {
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos) return false;
  return all_in_set(repo.substr(0, slash), "._-") && all_in_set(repo.substr(slash + 1), "._-");
}

[[noreturn]] void refuse(std::string_view text, const std::string& why) {
  throw std::invalid_argument("model name '" + std::string(text) + "': " + why);
}

// Refusals that hold for every part of a name, before it is split.
void check_characters(std::string_view text) {
  if (text.find('\0') != std::string_view::npos)
    refuse("(with a NUL byte)", "NUL bytes are not allowed");
  if (text.find('\\') != std::string_view::npos) refuse(text, "backslashes are not allowed");
  if (text.find("..") != std::string_view::npos)
    refuse(text, "'..' is not allowed (a model never leaves the model folder)");
  if (text.starts_with('/')) refuse(text, "an absolute path is not a model name");
}

}  // namespace

std::span<const RecommendedModel> recommended_models() {
  return kRecommended;
}

const RecommendedModel* find_recommended(std::string_view name) {
  for (const auto& m : kRecommended)
    if (m.name == name) return &m;
  return nullptr;
}

HubFile parse_model_name(std::string_view text) {
  check_characters(text);
  HubFile f;
  std::string_view name = text;
  f.revision = "main";
  if (const size_t at = text.rfind('@'); at != std::string_view::npos) {
    name = text.substr(0, at);
    f.revision = text.substr(at + 1);
    if (!all_in_set(f.revision, "._-"))
      refuse(text, "the revision after '@' must be a branch, tag or commit of [A-Za-z0-9._-]");
  }
  f.name = name;
  if (const RecommendedModel* m = find_recommended(name)) {
    f.repo = m->repo;
    f.file = m->file;
    f.local_name = std::string(m->name) + ".gguf";
    return f;
  }
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos) {
    if (name.find('/') != std::string_view::npos)
      refuse(text, "name the file too: " + std::string(name) + ":FILE.gguf");
    std::string names;
    for (const auto& m : kRecommended) names += (names.empty() ? "" : ", ") + std::string(m.name);
    refuse(text, "not a recommended model (" + names + ") nor user/repo:FILE.gguf");
  }
  f.repo = name.substr(0, colon);
  f.file = name.substr(colon + 1);
  if (!valid_repo(f.repo))
    refuse(text, "the repository must be owner/name, each of [A-Za-z0-9._-]");
  // The file may sit in a folder of the repository; each part is a plain name.
  std::string flat;
  size_t begin = 0;
  while (true) {
    const size_t slash = f.file.find('/', begin);
    const std::string_view part = std::string_view(f.file).substr(begin, slash - begin);
    if (!all_in_set(part, "._+-") || part == ".")
      refuse(text, "the file must be a path of names of [A-Za-z0-9._+-] inside the repository");
    flat += (flat.empty() ? "" : "--") + std::string(part);
    if (slash == std::string::npos) break;
    begin = slash + 1;
  }
  if (!f.file.ends_with(".gguf")) refuse(text, "the file must be a .gguf file");
  const size_t slash = f.repo.find('/');
  f.local_name = f.repo.substr(0, slash) + "--" + f.repo.substr(slash + 1) + "--" + flat;
  if (f.local_name.size() + kPartSuffix.size() > 255)
    refuse(text, "the name is too long for a file name");
  return f;
}

bool is_model_name(std::string_view text) {
  const size_t at = text.rfind('@');
  const std::string_view name = at == std::string_view::npos ? text : text.substr(0, at);
  if (find_recommended(name)) return true;
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view repo = name.substr(0, colon);
  return std::count(repo.begin(), repo.end(), '/') == 1;
}

std::filesystem::path model_dir() {
  if (const char* dir = std::getenv("GHOSTLINE_MODEL_DIR"); dir && *dir) return dir;
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache == '/')
    return std::filesystem::path(cache) / "ghostline" / "models";
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd* pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : nullptr;
  }
  if (!home || !*home)
    throw std::runtime_error("no model folder: set GHOSTLINE_MODEL_DIR (HOME is not set)");
  return std::filesystem::path(home) / ".cache" / "ghostline" / "models";
}

std::string resolve_model_argument(std::string_view arg) {
  if (arg.ends_with(kPartSuffix))
    throw std::invalid_argument("'" + std::string(arg) +
                                "' is a partial download; run `ghostline pull` again to finish it");
  const std::string given(arg);
  struct stat st;
  if (::lstat(given.c_str(), &st) == 0 || !is_model_name(arg)) return given;

  const HubFile f = parse_model_name(arg);
  const std::filesystem::path path = model_dir() / f.local_name;
  if (::lstat(path.c_str(), &st) != 0)
    throw std::invalid_argument("model '" + f.name + "' is not pulled yet (no " + path.string() +
                                "): run `ghostline pull " + std::string(arg) + "`");
  if (S_ISLNK(st.st_mode))
    throw std::invalid_argument(path.string() +
                                " is a symbolic link; a pulled model must be a plain file in the "
                                "model folder (remove it and pull again)");
  if (!S_ISREG(st.st_mode)) throw std::invalid_argument(path.string() + " is not a regular file");
  return path.string();
}

}  // namespace ghostline::daemon
