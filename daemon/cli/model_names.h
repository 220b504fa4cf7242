// Models by name: the recommended models that `ghostline pull` knows, `user/repo:file.gguf`
// names for any other GGUF on the Hugging Face hub, the user's model folder where pulled files
// live, and the resolution of a `--model` argument (a path or a pulled name) to a file.
//
// Every name maps to one plain file name directly in the model folder: nothing a user or the hub
// writes can name a path outside it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace ghostline::daemon {

struct RecommendedModel {
  std::string_view name;   // what the user types: qwen2.5-coder-1.5b
  std::string_view repo;   // on the hub: ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF
  std::string_view file;   // in the repository: qwen2.5-coder-1.5b-q8_0.gguf
  std::string_view quant;  // Q8_0
  uint64_t bytes;          // the download, as the hub lists it
  std::string_view suits;  // which machine it is for
};

std::span<const RecommendedModel> recommended_models();
const RecommendedModel* find_recommended(std::string_view name);

// One file on the hub and where it goes in the model folder.
struct HubFile {
  std::string name;        // as the user gave it (without @revision)
  std::string repo;        // user/repo
  std::string file;        // path inside the repository
  std::string revision;    // branch, tag or commit; "main" unless NAME@REVISION
  std::string local_name;  // the file name in the model folder (one path component)
};

// Parses a recommended name or `user/repo:file.gguf`, each optionally followed by @REVISION.
// Throws std::invalid_argument with the reason for anything else, including names that could
// leave the model folder (`..`, absolute paths, backslashes, NULs) and repository names that are
// not `[A-Za-z0-9._-]+/[A-Za-z0-9._-]+`.
HubFile parse_model_name(std::string_view text);

// Whether `text` is meant as a model name rather than a path: a recommended name, or
// `user/repo:file` syntax (a colon after one slash).
bool is_model_name(std::string_view text);

// The user's model folder: $GHOSTLINE_MODEL_DIR, else $XDG_CACHE_HOME/ghostline/models, else
// ~/.cache/ghostline/models. Not created here.
std::filesystem::path model_dir();

// The suffix of a download in progress; such a file is never used as a model.
inline constexpr std::string_view kPartSuffix = ".part";

// A `--model` (or `--draft`) argument as a file path: an existing file is taken as given; a model
// name maps to its file in the model folder, which must be there and be a regular file (not a
// symbolic link); otherwise the argument is returned unchanged for the loader to report. Throws
// std::invalid_argument when a name is not pulled yet (the message says `ghostline pull NAME`),
// when the pulled file is a symbolic link, or when the argument is a partial download.
std::string resolve_model_argument(std::string_view arg);

}  // namespace ghostline::daemon
