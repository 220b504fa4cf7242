// The ghostline/stats result: the names `ghostline stats`, the replay harness and the tests
// read.
#include "lsp/stats_reply.h"

#include <gtest/gtest.h>

namespace ghostline::lsp {
namespace {

using nlohmann::json;

TEST(StatsReply, NamesEverySchedulerCounter) {
  SchedulerCounters c;
  uint64_t n = 0;
  for (uint64_t* field :
       {&c.submitted, &c.completed, &c.failed, &c.cancelled_by_client, &c.superseded,
        &c.invalidated_by_edit, &c.dropped, &c.completer_calls, &c.answered_from_memory,
        &c.kept_running, &c.kept_finished, &c.answered_early, &c.updated, &c.prefetch_started,
        &c.prefetch_finished, &c.prefetch_preempted, &c.context_started, &c.context_finished,
        &c.context_preempted, &c.stopped_runs, &c.steps_after_cancel, &c.max_steps_after_cancel})
    *field = ++n;
  EXPECT_EQ(json(c), json::parse(R"({"submitted":1,"completed":2,"failed":3,
      "cancelledByClient":4,"superseded":5,"invalidatedByEdit":6,"dropped":7,"completerCalls":8,
      "answeredFromMemory":9,"keptRunning":10,"keptFinished":11,"answeredEarly":12,"updated":13,
      "prefetchStarted":14,"prefetchFinished":15,"prefetchPreempted":16,"contextStarted":17,
      "contextFinished":18,"contextPreempted":19,"stoppedRuns":20,"stepsAfterCancel":21,
      "maxStepsAfterCancel":22})"));
}

TEST(StatsReply, CarriesTheCompleterTheRecentRequestsAndTheSession) {
  StatsResult stats;
  stats.completer = "scripted";
  stats.completer_counters = {{"modelCalls", 2}};
  stats.model = "tiny.gguf";
  stats.recent = {{{"queueMs", 1.5}}, {{"queueMs", 0.5}}};
  stats.documents = 3;
  stats.position_encoding = PositionEncoding::Utf32;
  const json j = stats;
  EXPECT_EQ(j["completer"], "scripted");
  EXPECT_EQ(j["completerCounters"]["modelCalls"], 2);
  EXPECT_EQ(j["model"], "tiny.gguf");
  EXPECT_EQ(j["outcomes"], json::object());
  EXPECT_EQ(j["recent"], json::parse(R"([{"queueMs":1.5},{"queueMs":0.5}])"));
  EXPECT_EQ(j["scheduler"]["submitted"], 0);
  EXPECT_EQ(j["session"], json::parse(R"({"documents":3,"positionEncoding":"utf-32"})"));
}

}  // namespace
}  // namespace ghostline::lsp
