#include "daemon/commands.h"

#include <array>

namespace ghostline::daemon {

int tokenize_main(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array kCommands = {
      Command{"tokenize", "print the token ids (or pieces) of stdin for a model", tokenize_main},
  };
  return kCommands;
}

}  // namespace ghostline::daemon
