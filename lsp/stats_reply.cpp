#include "lsp/stats_reply.h"

namespace ghostline::lsp {

using nlohmann::json;

void to_json(json& j, const SchedulerCounters& c) {
  j = {{"submitted", c.submitted},
       {"completed", c.completed},
       {"failed", c.failed},
       {"cancelledByClient", c.cancelled_by_client},
       {"superseded", c.superseded},
       {"invalidatedByEdit", c.invalidated_by_edit},
       {"dropped", c.dropped},
       {"completerCalls", c.completer_calls},
       {"answeredFromMemory", c.answered_from_memory},
       {"keptRunning", c.kept_running},
       {"keptFinished", c.kept_finished},
       {"answeredEarly", c.answered_early},
       {"updated", c.updated},
       {"prefetchStarted", c.prefetch_started},
       {"prefetchFinished", c.prefetch_finished},
       {"prefetchPreempted", c.prefetch_preempted},
       {"contextStarted", c.context_started},
       {"contextFinished", c.context_finished},
       {"contextPreempted", c.context_preempted},
       {"stoppedRuns", c.stopped_runs},
       {"stepsAfterCancel", c.steps_after_cancel},
       {"maxStepsAfterCancel", c.max_steps_after_cancel}};
}

void to_json(json& j, const StatsResult& v) {
  json recent = json::array();
  for (const auto& r : v.recent) recent.push_back(r);
  j = {{"completer", v.completer},
       {"completerCounters", v.completer_counters},
       {"model", v.model},
       {"outcomes", v.outcomes},
       {"recent", std::move(recent)},
       {"scheduler", v.scheduler},
       {"session",
        {{"documents", v.documents}, {"positionEncoding", to_string(v.position_encoding)}}}};
}

}  // namespace ghostline::lsp
