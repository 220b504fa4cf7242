#include "daemon/cli/backend_choice.h"

#include <cstdio>
#include <string>

#include "daemon/pipeline/engine_backend.h"

namespace ghostline::daemon {

void add_backend_option(ArgParser& p, BackendChoice& choice) {
  p.option(
      "--backend", "NAME",
      "auto (CUDA when built with it and a GPU is present, else the CPU), cpu or cuda",
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
