#include "daemon/cli/engine_flags.h"

#include "daemon/pipeline/completion_service.h"

namespace ghostline::daemon {

void add_engine_options(ArgParser& p, EngineOptions& o) {
  p.option("-m,--model", "FILE",
           "GGUF model to complete with (default: " + default_model_path() + ")", &o.model);
  p.option("-t,--threads", "N", "compute threads (0: all cores)", &o.threads);
  p.option("--kv-mib", "MIB", "memory for the KV cache", &o.kv_mib);
  p.flag("--no-prefix-cache", "compute every prompt from scratch (to measure what the cache saves)",
         &o.no_prefix_cache);
  p.option("--draft", "FILE",
           "draft model for speculative decoding (same vocabulary as the model; n-gram drafts are "
           "always used)",
           &o.draft);
  p.option(
      "--speculation", "MODE",
      "auto (n-gram lookup, plus the draft model when given), ngram, draft, or off (to measure "
      "what "
      "speculation saves)",
      [&o](std::string_view word) {
        auto mode = parse_speculation_mode(word);
        if (mode) o.speculation = *mode;
        return mode.has_value();
      },
      speculation_mode_name(o.speculation));
  p.option(
      "--backend", "NAME",
      "auto (CUDA when built with it and a GPU is present, else the CPU), cpu, cuda or remote",
      [&o](std::string_view word) {
        auto choice = parse_backend_choice(word);
        if (choice) o.backend = *choice;
        return choice.has_value();
      },
      backend_choice_name(o.backend));
}

}  // namespace ghostline::daemon
