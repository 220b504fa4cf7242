#include "daemon/commands.h"

#include <array>

namespace ghostline::daemon {

std::span<const Command> commands() {
  static constexpr std::array<Command, 0> kCommands = {};
  return kCommands;
}

}  // namespace ghostline::daemon
