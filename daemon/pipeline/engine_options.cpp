#include "daemon/pipeline/engine_options.h"

namespace ghostline::daemon {

namespace {
constexpr struct {
  SpeculationMode mode;
  const char* name;
} kModes[] = {{SpeculationMode::Auto, "auto"},
              {SpeculationMode::Ngram, "ngram"},
              {SpeculationMode::Draft, "draft"},
              {SpeculationMode::Off, "off"}};

constexpr struct {
  BackendChoice backend;
  const char* name;
} kBackends[] = {{BackendChoice::Auto, "auto"},
                 {BackendChoice::Cpu, "cpu"},
                 {BackendChoice::Cuda, "cuda"},
                 {BackendChoice::Remote, "remote"}};
}  // namespace

std::optional<BackendChoice> parse_backend_choice(std::string_view word) {
  for (const auto& b : kBackends)
    if (word == b.name) return b.backend;
  return std::nullopt;
}

const char* backend_choice_name(BackendChoice backend) {
  for (const auto& b : kBackends)
    if (backend == b.backend) return b.name;
  return "?";
}

std::optional<SpeculationMode> parse_speculation_mode(std::string_view word) {
  for (const auto& m : kModes)
    if (word == m.name) return m.mode;
  return std::nullopt;
}

const char* speculation_mode_name(SpeculationMode mode) {
  for (const auto& m : kModes)
    if (mode == m.mode) return m.name;
  return "?";
}

}  // namespace ghostline::daemon
