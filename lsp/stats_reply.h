// ghostline/stats: what the daemon reports of its work, as one session sees it. Read by
// `ghostline stats`, the replay harness and the tests.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include <nlohmann/json.hpp>

#include "lsp/scheduler.h"
#include "lsp/text_document.h"

namespace ghostline::lsp {

struct StatsResult {
  std::string completer;  // Completer::describe()
  // The completer's own counters; an object (empty when the completer's were not one).
  nlohmann::json completer_counters = nlohmann::json::object();
  std::string model;                                   // Completer::model_name()
  nlohmann::json outcomes = nlohmann::json::object();  // CompletionOutcomes::to_json()
  std::deque<nlohmann::json> recent;                   // Scheduler::recent_stats()
  SchedulerCounters scheduler;
  // The session's own state.
  size_t documents = 0;
  PositionEncoding position_encoding = PositionEncoding::Utf16;
};

void to_json(nlohmann::json& j, const SchedulerCounters& c);
void to_json(nlohmann::json& j, const StatsResult& v);

}  // namespace ghostline::lsp
