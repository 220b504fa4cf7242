// `ghostline model-info FILE`: what a GGUF file holds and whether Ghostline can serve it.
#include <cstdio>
#include <map>
#include <string>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "daemon/cli/model_command.h"
#include "daemon/cli/model_names.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/model/fim.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {

int model_info_main(std::span<char* const> args) {
  std::string path;
  ArgParser parser("ghostline model-info",
                   "Print what a GGUF model file holds and whether Ghostline can serve it (exit 0: "
                   "servable, 3: readable but not servable, 1: unreadable).");
  parser.positional("FILE", "the GGUF file, or a model fetched by `ghostline pull NAME`", &path);
  if (auto rc = parser.parse(args)) return *rc;

  using namespace engine;
  std::unique_ptr<GgufFile> file;
  try {
    path = resolve_model_argument(path);
    file = GgufFile::open(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline model-info: %s\n", e.what());
    return 1;
  }
  auto str = [&](const std::string& key) {
    return std::string(file->get_string(key).value_or("(not set)"));
  };
  auto num = [&](const std::string& key) {
    auto v = file->get_int(key);
    return v ? std::to_string(*v) : std::string("(not set)");
  };

  std::printf("file:          %s\n", path.c_str());
  std::printf("size:          %s (GGUF v%u)\n", format_bytes(file->file_bytes()).c_str(),
              file->version());
  const std::string arch = str("general.architecture");
  std::printf("name:          %s\n", str("general.name").c_str());
  std::printf("architecture:  %s\n", arch.c_str());

  int64_t params = 0;
  std::map<std::string, int> types;
  for (const GgufTensor& t : file->tensors()) {
    params += t.elements();
    ++types[std::string(ggml_type_name(t.type))];
  }
  std::printf("parameters:    %s (%zu tensors)\n", format_count(params).c_str(),
              file->tensors().size());
  std::string type_list;
  for (const auto& [name, count] : types)
    type_list += (type_list.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  std::printf("tensor types:  %s\n", type_list.c_str());
  std::printf("context:       %s tokens (training)\n", num(arch + ".context_length").c_str());
  std::printf("shape:         embd %s, layers %s, heads %s, kv heads %s, ffn %s\n",
              num(arch + ".embedding_length").c_str(), num(arch + ".block_count").c_str(),
              num(arch + ".attention.head_count").c_str(),
              num(arch + ".attention.head_count_kv").c_str(),
              num(arch + ".feed_forward_length").c_str());
  if (auto theta = file->get_float(arch + ".rope.freq_base"))
    std::printf("rope:          theta %g%s\n", *theta,
                file->has(arch + ".rope.scaling.type")
                    ? (", scaling " + str(arch + ".rope.scaling.type")).c_str()
                    : "");

  std::unique_ptr<Tokenizer> tok;
  try {
    tok = Tokenizer::from_gguf(*file);
  } catch (const std::exception& e) {
    std::printf("vocabulary:    unusable: %s\n", e.what());
  }
  if (tok) {
    std::printf("vocabulary:    model %s, pre %s, %d tokens\n", std::string(tok->model()).c_str(),
                std::string(tok->pre()).c_str(), tok->n_vocab());
    const auto& s = tok->specials();
    const std::pair<const char*, std::optional<int32_t>> specials[] = {{"bos", s.bos},
                                                                       {"eos", s.eos},
                                                                       {"eot", s.eot},
                                                                       {"pad", s.pad},
                                                                       {"fim prefix", s.fim_pre},
                                                                       {"fim suffix", s.fim_suf},
                                                                       {"fim middle", s.fim_mid},
                                                                       {"fim pad", s.fim_pad},
                                                                       {"fim repo", s.fim_rep},
                                                                       {"fim sep", s.fim_sep}};
    std::printf("special tokens:");
    bool any = false;
    for (const auto& [label, id] : specials)
      if (id) {
        std::printf("%s %s %d %s", any ? "," : "", label, *id, quote(tok->token_text(*id)).c_str());
        any = true;
      }
    std::printf("%s\n", any ? "" : " none");
    std::printf("add bos:       %s\n", s.add_bos ? "yes" : "no");
    const auto fim = engine::fim_template(*tok, *file);
    if (fim.mode == engine::FimMode::PrefixOnly)
      std::printf("fim:           no (fill-in-the-middle tokens missing): prefix-only prompts\n");
    else
      std::printf("fim:           %s prompts of the %s family%s\n", engine::fim_mode_name(fim.mode),
                  engine::fim_family_name(fim.family),
                  fim.repo_context ? ", with other files as repository-level context" : "");
  }

  // One line per kind of problem: a file that repeats one on every layer reads as one line.
  const auto problems = Model::check(*file);
  if (problems.empty()) {
    std::printf("servable:      yes\n");
  } else {
    std::printf("servable:      no\n");
    for (const auto& group : group_problems(problems))
      std::printf("  - %s\n", describe(group).c_str());
  }
  return problems.empty() ? 0 : 3;
}

}  // namespace ghostline::daemon
