#include "daemon/cli/backend_choice.h"

#include <cstdio>
#include <string>

#include "daemon/pipeline/engine_backend.h"

namespace ghostline::daemon {
namespace {

constexpr const char* kEngineHelp =
    "auto (CUDA when built with it and a GPU is present, else the CPU), cpu or cuda";
constexpr const char* kEngineOrRemoteHelp =
    "auto (CUDA when built and a device exists, else cpu), cpu, cuda, or remote (an inference "
    "server: --url)";

}  // namespace

void add_backend_option(ArgParser& p, BackendChoice& choice, bool with_remote) {
  p.option(
      "--backend", "NAME", with_remote ? kEngineOrRemoteHelp : kEngineHelp,
      [&choice](std::string_view word) {
        auto parsed = parse_backend_choice(word);
        if (parsed) choice = *parsed;
        return parsed.has_value();
      },
      backend_choice_name(choice));
}

engine::BackendKind command_backend(BackendChoice choice) {
  std::string note;
  const engine::BackendKind kind = engine_backend(choice, &note);
  if (!note.empty()) std::fprintf(stderr, "ghostline: %s\n", note.c_str());
  return kind;
}

}  // namespace ghostline::daemon
