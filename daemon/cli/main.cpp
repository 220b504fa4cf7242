// ghostline: a code-completion daemon that editors talk to over LSP.
#include <cstdio>
#include <string_view>

#include "daemon/cli/commands.h"

namespace {

void print_usage(FILE* out) {
  std::fprintf(out,
               "Usage: ghostline COMMAND [OPTIONS]\n\n"
               "Ghostline answers code completions for editors over LSP, from a local model.\n\n"
               "Commands:\n");
  for (const auto& c : ghostline::daemon::commands())
    std::fprintf(out, "  %-12.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                 static_cast<int>(c.summary.size()), c.summary.data());
  std::fprintf(out, "\nRun 'ghostline COMMAND --help' for the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
    std::printf("ghostline %s\n", GHOSTLINE_VERSION);
    return 0;
  }
  for (const auto& c : ghostline::daemon::commands())
    if (c.name == name) return c.run({argv + 2, static_cast<size_t>(argc - 2)});
  std::fprintf(stderr, "ghostline: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
