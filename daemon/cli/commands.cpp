#include "daemon/cli/commands.h"

#include <array>
#include <stdexcept>

#include "base/platform.h"

namespace ghostline::daemon {

int serve_main(std::span<char* const> args);
int connect_main(std::span<char* const> args);
int model_info_main(std::span<char* const> args);
int logits_main(std::span<char* const> args);
int generate_main(std::span<char* const> args);
int bench_main(std::span<char* const> args);
int make_model_main(std::span<char* const> args);
int complete_main(std::span<char* const> args);
int tokenize_main(std::span<char* const> args);
int replay_main(std::span<char* const> args);
int pull_main(std::span<char* const> args);
int stats_main(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array kCommands = {
      Command{"serve", "run the LSP server (stdio, TCP or unix socket)", serve_main},
      Command{"connect", "bridge stdio to a running daemon, starting one if needed", connect_main},
      Command{"complete", "print the completion the daemon would show at FILE:LINE:COL",
              complete_main},
      Command{"pull", "download a GGUF model from the Hugging Face hub into the model folder",
              pull_main},
      Command{"stats", "what became of the completions the editors showed, per language and model",
              stats_main},
      Command{"model-info", "what a GGUF model file holds and whether it can be served",
              model_info_main},
      Command{"logits", "the model's top logits after each token of a sequence (JSON)",
              logits_main},
      Command{"generate", "generate text after a prompt", generate_main},
      Command{"bench", "prompt and generation speed, like llama-bench", bench_main},
      Command{"make-model", "write a GGUF model with random weights for benchmarks",
              make_model_main},
      Command{"tokenize", "print the token ids (or pieces) of stdin for a model", tokenize_main},
      Command{"replay", "replay recorded typing sessions against the daemon and report latency",
              replay_main},
  };
  return kCommands;
}

std::string self_executable() {
  const auto path = platform::rerun_path();
  if (path.empty())
    throw std::runtime_error(
        "cannot tell where this executable is on this system, so it cannot run itself again; "
        "start `ghostline serve` yourself and pass its address");
  return path.string();
}

}  // namespace ghostline::daemon
