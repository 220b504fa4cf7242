// The replay harness's pure parts: session files, what a person accepts, and the report.
#include <gtest/gtest.h>

#include <string>

#include "daemon/replay/report.h"
#include "daemon/replay/typing_session.h"

namespace ghostline::daemon {
namespace {

const std::string kHeader =
    R"({"type":"header","format":"ghostline-session","version":1,"language":"python",)"
    R"("uri":"file:///a.py","text":"x = \n","finalText":"x = foo(1)\n",)"
    R"("typed":{"start":4,"bytes":6},"accepts":["full","word"],)"
    R"("openFiles":[{"uri":"file:///b.py","languageId":"python","text":"y"}]})";

TEST(ReplaySession, ParsesHeaderAndEvents) {
  Session s = parse_session(
      kHeader + "\n" +
          R"({"t":10,"type":"key","key":"f","complete":"automatic","progress":1})"
          "\n"
          R"({"t":20.5,"type":"edit","changes":[{"text":"x = fo\n"}]})"
          "\n"
          R"({"t":30,"type":"complete","trigger":"invoked","position":{"line":0,"character":6}})"
          "\n"
          R"({"t":31,"type":"outcome","action":"typed-past"})"
          "\n",
      "s.jsonl");
  EXPECT_EQ(s.document.uri, "file:///a.py");
  EXPECT_EQ(s.document.language_id, "python");
  ASSERT_EQ(s.open_files.size(), 1u);
  EXPECT_EQ(s.open_files[0].uri, "file:///b.py");
  ASSERT_EQ(s.events.size(), 3u);  // the outcome is the recording's, not replayed
  EXPECT_EQ(s.events[0].kind, SessionEvent::Kind::Key);
  EXPECT_TRUE(s.events[0].complete);
  EXPECT_FALSE(s.events[0].invoked);
  EXPECT_EQ(s.events[0].progress, 1);
  EXPECT_EQ(s.events[1].kind, SessionEvent::Kind::Edit);
  EXPECT_FALSE(s.events[1].complete);
  EXPECT_DOUBLE_EQ(s.events[1].t_ms, 20.5);
  EXPECT_EQ(s.events[2].kind, SessionEvent::Kind::Complete);
  EXPECT_TRUE(s.events[2].invoked);
  EXPECT_EQ(s.keystrokes(), 2);
  EXPECT_EQ(s.expected_after(0), "foo(1)");
  EXPECT_EQ(s.expected_after(3), "(1)");
  EXPECT_EQ(s.expected_after(6), "");
}

TEST(ReplaySession, RejectsBrokenFilesWithTheLine) {
  auto error_of = [](const std::string& text) {
    try {
      parse_session(text, "bad.jsonl");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("").find("empty session"), std::string::npos);
  EXPECT_NE(error_of(R"({"type":"key"})").find("bad.jsonl:1: the first line must be a header"),
            std::string::npos);
  EXPECT_NE(error_of(kHeader + "\n" + R"({"t":5,"type":"key","key":"a"})" + "\n" +
                     R"({"t":4,"type":"key","key":"b"})")
                .find("bad.jsonl:3: time goes backwards"),
            std::string::npos);
  EXPECT_NE(error_of(kHeader + "\n" + R"({"t":5,"type":"jump"})").find("unknown event type 'jump'"),
            std::string::npos);
  EXPECT_NE(error_of(kHeader + "\nnot json").find("bad.jsonl:2: not a JSON object"),
            std::string::npos);
  std::string outside = kHeader;
  outside.replace(outside.find(R"("bytes":6)"), 9, R"("bytes":60)");
  EXPECT_NE(error_of(outside).find("'typed' lies outside 'finalText'"), std::string::npos);
}

TEST(ReplayAcceptance, TakesAllOfAMatchingCompletion) {
  const std::vector<Acceptance> all = {Acceptance::Full, Acceptance::Line, Acceptance::Word};
  auto a = choose_acceptance("foo(1)", "foo(1)\nbar", all);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->text, "foo(1)");
  EXPECT_EQ(a->kind, Acceptance::Full);
}

TEST(ReplayAcceptance, FallsBackToTheFirstLineThenTheFirstWord) {
  const std::vector<Acceptance> all = {Acceptance::Full, Acceptance::Line, Acceptance::Word};
  auto line = choose_acceptance("x = 1\ny = 3", "x = 1\ny = 2", all);
  ASSERT_TRUE(line);
  EXPECT_EQ(line->text, "x = 1");
  EXPECT_EQ(line->kind, Acceptance::Line);
  auto word = choose_acceptance(" count + 1", " count - 1", all);
  ASSERT_TRUE(word);
  EXPECT_EQ(word->text, " count");
  EXPECT_EQ(word->kind, Acceptance::Word);
  // A one-byte word saves nothing; a mismatch from the start is typed past.
  EXPECT_FALSE(choose_acceptance("a+b", "a-b", all));
  EXPECT_FALSE(choose_acceptance("return x", "yield x", all));
  EXPECT_FALSE(choose_acceptance("", "anything", all));
}

TEST(ReplayAcceptance, OnlyWhatTheSessionAllows) {
  EXPECT_FALSE(choose_acceptance("count + 1", "count - 1", {Acceptance::Full}));
  EXPECT_FALSE(choose_acceptance("count", "count", {}));
  auto word = choose_acceptance("count", "count", {Acceptance::Word});
  ASSERT_TRUE(word);
  EXPECT_EQ(word->kind, Acceptance::Word);
}

TEST(ReplayReport, PercentileIsNearestRank) {
  EXPECT_FALSE(percentile({}, 50));
  EXPECT_EQ(percentile({5}, 99), 5);
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 90), 90);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile(v, 0), 1);
}

TEST(ReplayReport, SummarizesRequestsAndFlagsProblems) {
  ReplayReport r;
  r.sessions.push_back({});
  r.sessions[0].name = "s";
  r.sessions[0].keystrokes = 4;
  r.sessions[0].text_checked = true;
  r.sessions[0].text_matches = true;
  r.sessions[0].shown = 2;
  r.sessions[0].would_accept = 1;
  auto add = [&](RequestResult result, double latency, nlohmann::json stats) {
    RequestRecord q;
    q.result = result;
    q.latency_ms = latency;
    q.stats = std::move(stats);
    r.requests.push_back(q);
  };
  add(RequestResult::Answered, 10,
      {{"promptTokens", 100}, {"matchedTokens", 90}, {"prefilledTokens", 10}, {"prefillMs", 4.0}});
  add(RequestResult::Answered, 30,
      {{"promptTokens", 100},
       {"matchedTokens", 70},
       {"prefilledTokens", 30},
       {"prefillMs", 8.0},
       {"prefillBound", {{"budgetTokens", 64}, {"droppedPromptTokens", 40}}}});
  add(RequestResult::Superseded, 1, nlohmann::json());
  add(RequestResult::Invalidated, 2, nlohmann::json());
  auto j = to_json(r);
  const auto& s = j["summary"];
  EXPECT_EQ(s["requests"], 4);
  EXPECT_EQ(s["answered"], 2);
  EXPECT_EQ(s["superseded"], 1);
  EXPECT_EQ(s["invalidatedByEdit"], 1);
  EXPECT_EQ(s["latencyMs"]["p50"], 10.0);
  EXPECT_EQ(s["latencyMs"]["max"], 30.0);
  EXPECT_DOUBLE_EQ(s["cacheHitRate"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(s["prefilledTokensPerKeystroke"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(s["stagesMs"]["prefillMs"]["mean"].get<double>(), 6.0);
  EXPECT_EQ(s["speculativeAcceptance"], "n/a");
  EXPECT_DOUBLE_EQ(s["wouldAcceptShare"].get<double>(), 0.5);
  EXPECT_EQ(s["promptsCutByDeadline"], 1);
  EXPECT_NE(format_table(r).find("prompts cut to fit the deadline: 1 of 2 answers"),
            std::string::npos);
  EXPECT_TRUE(j["problems"].empty());

  add(RequestResult::Pending, -1, nlohmann::json());
  r.sessions[0].stale_answers = 1;
  r.sessions[0].text_matches = false;
  r.sessions[0].text_problem = "differs";
  r.sessions[0].daemon_errors.push_back("boom");
  j = to_json(r);
  EXPECT_EQ(j["problems"].size(), 4u);
  EXPECT_NE(format_table(r).find("problems:"), std::string::npos);
  std::string svg = render_svg(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
}

TEST(ReplayReport, SpeculativeAcceptanceWhenTheDaemonReportsIt) {
  ReplayReport r;
  r.sessions.push_back({});
  RequestRecord q;
  q.result = RequestResult::Answered;
  q.latency_ms = 5;
  q.stats = {{"draftTokens", 10}, {"acceptedDraftTokens", 7}};
  r.requests.push_back(q);
  EXPECT_DOUBLE_EQ(to_json(r)["summary"]["speculativeAcceptance"].get<double>(), 0.7);
}

}  // namespace
}  // namespace ghostline::daemon
