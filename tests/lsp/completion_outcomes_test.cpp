// The acceptance counts: each shown completion counted once, under its best fate, per language
// and model; characters and latencies of the accepted ones.
#include "lsp/completion_outcomes.h"

#include <gtest/gtest.h>

namespace ghostline::lsp {
namespace {

IssuedCompletion python(size_t chars, double latency_ms, std::string model = "m.gguf") {
  return {
      .language = "python", .model = std::move(model), .chars = chars, .latency_ms = latency_ms};
}

TEST(CompletionOutcomes, FateNamesRoundTrip) {
  for (auto fate : {CompletionFate::TypedOver, CompletionFate::Dismissed,
                    CompletionFate::AcceptedPartially, CompletionFate::Accepted})
    EXPECT_EQ(parse_completion_fate(completion_fate_name(fate)), fate);
  EXPECT_FALSE(parse_completion_fate("rejected"));
}

TEST(CompletionOutcomes, NothingIsShownUntilAnEditorReportsIt) {
  CompletionOutcomes o;
  o.issue(python(10, 5));
  EXPECT_TRUE(o.rows().empty());
  EXPECT_EQ(o.to_json(), nlohmann::json::array());
}

TEST(CompletionOutcomes, CountsEachFatePerLanguageAndModel) {
  CompletionOutcomes o;
  const uint64_t a = o.issue(python(10, 30));
  const uint64_t b = o.issue(python(8, 50));
  const uint64_t c = o.issue(python(6, 70));
  const uint64_t d = o.issue({.language = "rust", .model = "m.gguf", .chars = 4, .latency_ms = 10});
  const uint64_t e = o.issue(python(5, 90, "other.gguf"));
  EXPECT_TRUE(o.report(a, CompletionFate::Accepted, 0));  // 0: all of it
  EXPECT_TRUE(o.report(b, CompletionFate::Dismissed, 0));
  EXPECT_TRUE(o.report(c, CompletionFate::TypedOver, 0));
  EXPECT_TRUE(o.report(d, CompletionFate::AcceptedPartially, 3));
  EXPECT_TRUE(o.report(e, CompletionFate::Dismissed, 0));

  const auto rows = o.rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].language, "python");
  EXPECT_EQ(rows[0].model, "m.gguf");
  EXPECT_EQ(rows[0].shown, 3u);
  EXPECT_EQ(rows[0].accepted, 1u);
  EXPECT_EQ(rows[0].dismissed, 1u);
  EXPECT_EQ(rows[0].typed_over, 1u);
  EXPECT_EQ(rows[0].accepted_chars, 10u);
  EXPECT_EQ(rows[0].latency_p50_ms, 30.0);
  EXPECT_EQ(rows[1].model, "other.gguf");
  EXPECT_EQ(rows[1].shown, 1u);
  EXPECT_EQ(rows[1].accepted_chars, 0u);
  EXPECT_FALSE(rows[1].latency_mean_ms);  // nothing accepted
  EXPECT_EQ(rows[2].language, "rust");
  EXPECT_EQ(rows[2].accepted_partially, 1u);
  EXPECT_EQ(rows[2].accepted_chars, 3u);
}

TEST(CompletionOutcomes, ALaterReportRaisesTheFateAndCountsTheCompletionOnce) {
  CompletionOutcomes o;
  const uint64_t id = o.issue(python(12, 40));
  o.report(id, CompletionFate::AcceptedPartially, 4);  // a word
  o.report(id, CompletionFate::AcceptedPartially, 9);  // another word: 9 kept so far
  o.report(id, CompletionFate::Dismissed, 0);          // then Escape: still partly accepted
  auto r = o.rows().at(0);
  EXPECT_EQ(r.shown, 1u);
  EXPECT_EQ(r.accepted_partially, 1u);
  EXPECT_EQ(r.dismissed, 0u);
  EXPECT_EQ(r.accepted_chars, 9u);
  o.report(id, CompletionFate::Accepted, 0);  // the rest with Tab
  r = o.rows().at(0);
  EXPECT_EQ(r.shown, 1u);
  EXPECT_EQ(r.accepted_partially, 0u);
  EXPECT_EQ(r.accepted, 1u);
  EXPECT_EQ(r.accepted_chars, 12u);
  EXPECT_EQ(r.latency_mean_ms, 40.0);  // one accepted completion, one latency
}

TEST(CompletionOutcomes, AcceptedCharactersNeverExceedTheCompletion) {
  CompletionOutcomes o;
  const uint64_t id = o.issue(python(5, 1));
  o.report(id, CompletionFate::AcceptedPartially, 500);
  EXPECT_EQ(o.rows().at(0).accepted_chars, 5u);
}

TEST(CompletionOutcomes, UnknownAndForgottenIdsAreRefused) {
  CompletionOutcomes o(/*remembered=*/2);
  const uint64_t first = o.issue(python(1, 1));
  o.issue(python(1, 1));
  const uint64_t third = o.issue(python(1, 1));
  EXPECT_FALSE(o.report(first, CompletionFate::Accepted, 0));  // forgotten
  EXPECT_FALSE(o.report(third + 100, CompletionFate::Accepted, 0));
  EXPECT_TRUE(o.report(third, CompletionFate::Accepted, 0));
  EXPECT_EQ(o.rows().at(0).shown, 1u);
}

TEST(CompletionOutcomes, LatencyPercentilesOfTheAcceptedOnes) {
  CompletionOutcomes o;
  for (int ms = 10; ms <= 100; ms += 10)
    o.report(o.issue(python(3, ms)), CompletionFate::Accepted, 0);
  o.report(o.issue(python(3, 1000)), CompletionFate::Dismissed, 0);  // not accepted: not counted
  const auto r = o.rows().at(0);
  EXPECT_DOUBLE_EQ(*r.latency_mean_ms, 55.0);
  EXPECT_DOUBLE_EQ(*r.latency_p50_ms, 50.0);
  EXPECT_DOUBLE_EQ(*r.latency_p90_ms, 90.0);
  const auto j = o.to_json().at(0);
  EXPECT_EQ(j["shown"], 11);
  EXPECT_EQ(j["accepted"], 10);
  EXPECT_EQ(j["acceptedLatencyMs"]["p90"], 90.0);
}

}  // namespace
}  // namespace ghostline::lsp
