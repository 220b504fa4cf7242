// `ghostline logits -m FILE --ids 1,2,3 [--top K]`: the model's logits for a token sequence,
// as JSON, so that scripts can compare Ghostline with other implementations.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "daemon/cli/backend_choice.h"
#include "daemon/cli/model_command.h"
#include "engine/generator.h"

namespace ghostline::daemon {

int logits_main(std::span<char* const> args) {
  std::string model_path, ids_text;
  int top = 10, threads = 2;
  bool reference = false;
  ArgParser parser("ghostline logits",
                   "Print, as JSON, the top-K logits after every token of a sequence.");
  parser.option("-m,--model", "FILE|NAME", "the GGUF model: a file or a pulled name", &model_path);
  parser.option("--ids", "IDS", "comma-separated token ids (add the BOS id yourself)", &ids_text);
  parser.option("--top", "K", "logits per position", &top);
  parser.option("-t,--threads", "N", "compute threads", &threads);
  parser.flag("--reference", "use the plain reference forward pass (slow; for checking)",
              &reference);
  BackendChoice backend = BackendChoice::Auto;
  add_backend_option(parser, backend);
  if (auto rc = parser.parse(args)) return *rc;
  std::vector<int32_t> ids;
  if (model_path.empty() || !parse_ids(ids_text, ids) || top < 1) {
    std::fprintf(stderr,
                 "ghostline logits: need -m FILE, --ids with at least one id and --top >= 1\n\n%s",
                 parser.help().c_str());
    return 2;
  }

  using namespace engine;
  return report_errors("logits", [&] {
    auto model = load_model_for_command(model_path);
    const ModelConfig& c = model->config();
    auto pool = kv_pool_for(*model, static_cast<int>(ids.size()));
    Generator gen(*model, *pool,
                  {.threads = threads,
                   .backend = reference ? BackendKind::Reference : command_backend(backend),
                   .chunk_tokens = 64});
    KvSequence seq;
    gen.forward(seq, ids, LogitsRequest::last_n_of(static_cast<int>(ids.size())));

    nlohmann::json positions = nlohmann::json::array();
    const int k = std::min(top, c.n_vocab);
    std::vector<int32_t> order(static_cast<size_t>(c.n_vocab));
    for (size_t p = 0; p < ids.size(); ++p) {
      const auto logits = gen.logits(static_cast<int>(p));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] ||
               (logits[size_t(a)] == logits[size_t(b)] && a < b);
      });
      nlohmann::json topk = nlohmann::json::array();
      for (int i = 0; i < k; ++i)
        topk.push_back({order[size_t(i)], logits[size_t(order[size_t(i)])]});
      positions.push_back({{"pos", p}, {"id", ids[p]}, {"top", topk}});
    }
    nlohmann::json out = {{"model", model_path}, {"n_vocab", c.n_vocab}, {"positions", positions}};
    std::printf("%s\n", out.dump().c_str());
    pool->release(seq);
    return 0;
  });
}

}  // namespace ghostline::daemon
