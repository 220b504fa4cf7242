#include "daemon/commands.h"

#include <array>

namespace ghostline::daemon {

int model_info_main(std::span<char* const> args);
int logits_main(std::span<char* const> args);
int generate_main(std::span<char* const> args);
int bench_main(std::span<char* const> args);
int make_model_main(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array kCommands = {
      Command{"model-info", "what a GGUF model file holds and whether it can be served",
              model_info_main},
      Command{"logits", "the model's top logits after each token of a sequence (JSON)",
              logits_main},
      Command{"generate", "generate text after a prompt", generate_main},
      Command{"bench", "prompt and generation speed, like llama-bench", bench_main},
      Command{"make-model", "write a GGUF model with random weights for benchmarks",
              make_model_main},
  };
  return kCommands;
}

}  // namespace ghostline::daemon
