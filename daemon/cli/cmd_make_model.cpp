// `ghostline make-model -o FILE`: a GGUF file with random weights of a real model's shape
// (default: Qwen2.5-Coder-0.5B) for benchmarks.
#include <cctype>
#include <cstdio>
#include <map>
#include <string>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "daemon/cli/model_command.h"
#include "engine/gguf/ggml_type.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/quantize.h"
#include "engine/model/random_model.h"

namespace ghostline::daemon {

int make_model_main(std::span<char* const> args) {
  engine::RandomModelSpec spec;
  std::string out_path, type = "Q8_0";
  int seed = 1;
  bool untied = false;
  ArgParser parser("ghostline make-model",
                   "Write a GGUF model with random weights (default shape: Qwen2.5-Coder-0.5B).");
  parser.option("-o,--output", "FILE", "the file to write", &out_path);
  parser.option("--type", "TYPE",
                "weight type: F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K, "
                "Q4_K, Q5_K, Q6_K, or Q4_K_M / Q5_K_M for llama-quantize's mixes (Q4_K or Q5_K "
                "with Q6_K for the output, attn_v and ffn_down of some layers); K-quant and IQ4_XS "
                "rows that are not a multiple of 256 fall back as llama-quantize's do (Q4_K to "
                "Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, others to IQ4_NL)",
                &type);
  parser.option("--arch", "ARCH", "qwen2, llama, starcoder2 or gemma", &spec.arch);
  parser.option("--vocab", "N", "vocabulary size", &spec.n_vocab);
  std::string vocab_from;
  parser.option("--vocab-from", "FILE",
                "take the tokenizer of this GGUF file (e.g. a vocabulary-only file of a real "
                "model) instead of a "
                "synthetic one; --vocab is then its size",
                &vocab_from);
  parser.option("--embd", "N", "embedding size", &spec.n_embd);
  parser.option("--layers", "N", "transformer blocks", &spec.n_layer);
  parser.option("--heads", "N", "attention heads", &spec.n_head);
  parser.option("--kv-heads", "N", "key/value heads (grouped-query attention)", &spec.n_head_kv);
  parser.option("--ff", "N", "feed-forward size", &spec.n_ff);
  parser.option("--ctx", "N", "context length", &spec.n_ctx);
  parser.option("--seed", "S", "random seed", &seed);
  parser.flag("--untied", "write a separate output matrix instead of tying it to the embedding",
              &untied);
  if (auto rc = parser.parse(args)) return *rc;
  if (out_path.empty()) {
    std::fprintf(stderr, "ghostline make-model: -o FILE is required\n\n%s", parser.help().c_str());
    return 2;
  }
  for (char& ch : type) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  bool known = false;
  if (type == "Q4_K_M" || type == "Q5_K_M") {
    spec.k_m_mix = true;
    type.resize(4);  // the mix's main type
  }
  for (uint32_t id = 0; id < 64 && !known; ++id)
    if (auto t = engine::ggml_type_traits(id);
        t && t->name == type && engine::gguf::can_quantize(static_cast<engine::GgmlType>(id))) {
      spec.type = static_cast<engine::GgmlType>(id);
      known = true;
    }
  if (!known) {
    std::fprintf(stderr, "ghostline make-model: cannot write type '%s' (see --help)\n",
                 type.c_str());
    return 2;
  }
  spec.tied_output = !untied;
  spec.vocab_from = vocab_from;
  spec.seed = static_cast<uint64_t>(seed);
  try {
    engine::write_random_model(out_path, spec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline make-model: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s (%s %s, embd %d, %d layers, %d heads, %d kv heads, ffn %d, vocab %d)\n",
              out_path.c_str(), spec.arch.c_str(), type.c_str(), spec.n_embd, spec.n_layer,
              spec.n_head, spec.n_head_kv, spec.n_ff, spec.n_vocab);
  if (!vocab_from.empty()) std::printf("tokenizer from %s\n", vocab_from.c_str());
  // The types actually written, as model-info lists them (fallbacks change some).
  std::map<std::string, int> types;
  try {
    auto file = engine::GgufFile::open(out_path);
    for (const auto& t : file->tensors()) ++types[std::string(engine::ggml_type_name(t.type))];
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline make-model: reading back %s: %s\n", out_path.c_str(), e.what());
    return 1;
  }
  std::string list;
  for (const auto& [name, count] : types)
    list += (list.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  std::printf("tensor types: %s\n", list.c_str());
  return 0;
}

}  // namespace ghostline::daemon
