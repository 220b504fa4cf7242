// `ghostline generate -m FILE -p TEXT -n N`: plain text generation from a prompt, greedy
// unless sampling options are given; timings on stderr.
#include <cstdio>
#include <string>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "daemon/cli/backend_choice.h"
#include "daemon/cli/model_command.h"
#include "engine/generator.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {

int generate_main(std::span<char* const> args) {
  std::string model_path, prompt;
  int n = 32, threads = 2, top_k = 0, seed = 0;
  double temp = 0, top_p = 1;
  bool print_ids = false, special = false;
  ArgParser parser("ghostline generate", "Generate text after a prompt (greedy by default).");
  parser.option("-m,--model", "FILE|NAME", "the GGUF model: a file or a pulled name", &model_path);
  parser.option("-p,--prompt", "TEXT", "the prompt", &prompt);
  parser.option("-n,--tokens", "N", "tokens to generate at most", &n);
  parser.option("-t,--threads", "N", "compute threads", &threads);
  parser.option("--temp", "T", "sampling temperature (0: greedy)", &temp);
  parser.option("--top-k", "K", "sample from the K most likely tokens (0: all)", &top_k);
  parser.option("--top-p", "P", "sample from the smallest set with probability P", &top_p);
  parser.option("--seed", "S", "random seed for sampling", &seed);
  parser.flag("--ids", "print the prompt's and the generated token ids instead of text",
              &print_ids);
  parser.flag("--special", "parse special tokens (e.g. FIM markers) written in the prompt",
              &special);
  BackendChoice backend = BackendChoice::Auto;
  add_backend_option(parser, backend);
  if (auto rc = parser.parse(args)) return *rc;
  if (model_path.empty() || n < 0) {
    std::fprintf(stderr, "ghostline generate: need -m FILE and -n >= 0\n\n%s",
                 parser.help().c_str());
    return 2;
  }

  using namespace engine;
  return report_errors("generate", [&] {
    auto model = load_model_for_command(model_path);
    const Tokenizer& tok = model->tokenizer();
    std::vector<int32_t> ids;
    if (tok.specials().add_bos && tok.specials().bos) ids.push_back(*tok.specials().bos);
    const auto body = tok.encode(prompt, special);
    ids.insert(ids.end(), body.begin(), body.end());
    if (ids.empty()) {
      std::fprintf(stderr, "ghostline generate: the prompt is empty and the model adds no BOS\n");
      return 2;
    }
    const ModelConfig& c = model->config();
    KvBlockPool pool(c.n_layer, c.kv_dim(), size_t(256) << 20);
    Generator gen(*model, pool,
                  {.threads = threads, .backend = command_backend(backend), .chunk_tokens = 64});
    KvSequence seq;
    GenerateOptions options;
    options.max_tokens = n;
    options.sampling = {
        .temperature = float(temp), .top_k = top_k, .top_p = float(top_p), .seed = uint64_t(seed)};
    const auto r = gen.generate(seq, ids, options);
    if (print_ids) {
      std::printf("prompt:");
      for (int32_t id : ids) std::printf(" %d", id);
      std::printf("\ngenerated:");
      for (int32_t id : r.tokens) std::printf(" %d", id);
      std::printf("\n");
    } else {
      std::vector<int32_t> shown;
      for (int32_t id : r.tokens)
        if (!tok.is_control(id)) shown.push_back(id);
      std::printf("%s%s\n", prompt.c_str(), tok.decode_continuation(shown).c_str());
    }
    std::fflush(stdout);
    std::fprintf(
        stderr,
        "prompt %d tokens in %.1f ms (%.1f t/s); generated %zu tokens in %.1f ms (%.1f "
        "t/s); stopped: %s\n",
        r.prefilled_tokens, r.prefill_ms,
        r.prefill_ms > 0 ? r.prefilled_tokens * 1000.0 / r.prefill_ms : 0.0, r.tokens.size(),
        r.decode_ms,
        r.decode_ms > 0 && r.tokens.size() > 1 ? (r.tokens.size() - 1) * 1000.0 / r.decode_ms : 0.0,
        stop_reason_name(r.reason));
    pool.release(seq);
    return 0;
  });
}

}  // namespace ghostline::daemon
