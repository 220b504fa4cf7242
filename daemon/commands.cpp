#include "daemon/commands.h"

#include <array>

namespace ghostline::daemon {

int serve_main(std::span<char* const> args);
int connect_main(std::span<char* const> args);

std::span<const Command> commands() {
  static constexpr std::array kCommands = {
      Command{"serve", "run the LSP server (stdio, TCP or unix socket)", serve_main},
      Command{"connect", "bridge stdio to a running daemon, starting one if needed", connect_main},
  };
  return kCommands;
}

}  // namespace ghostline::daemon
