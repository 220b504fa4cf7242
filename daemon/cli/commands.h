// The subcommands of the `ghostline` binary. Each lives in its own daemon/cli/cmd_*.cpp and is
// listed once in daemon/cli/commands.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ghostline::daemon {

// args are the arguments after the subcommand name.
using CommandMain = int (*)(std::span<char* const> args);

struct Command {
  std::string_view name;
  std::string_view summary;
  CommandMain run;
};

std::span<const Command> commands();

// This executable's path, for the commands that run it again (a daemon, a `connect`);
// std::runtime_error where the system cannot tell.
std::string self_executable();

}  // namespace ghostline::daemon
