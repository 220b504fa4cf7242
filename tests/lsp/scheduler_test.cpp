// The scheduler with a test double: exactly one outcome per job, supersession, cancellation
// that stops the completer within a step, and debouncing.
#include "lsp/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ghostline::lsp {
namespace {

// Runs posted closures on the test thread, like the I/O thread does.
class FakeIoThread {
 public:
  Scheduler::Post poster() {
    return [this](std::function<void()> f) {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(f));
      cv_.notify_all();
    };
  }
  // Runs posted work until `done` holds or a timeout passes.
  bool run_until(const std::function<bool()>& done, int timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!done()) {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_until(lock, deadline, [&] { return !queue_.empty(); })) return false;
      auto f = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      f();
    }
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

// Takes `steps` steps of 1 ms, checking the token before each, and counts them.
class SteppingCompleter : public Completer {
 public:
  explicit SteppingCompleter(int steps) : steps_(steps) {}
  CompletionResult complete(const CompletionRequest& r, const CancelToken& cancel) override {
    ++calls;
    for (int i = 0; i < steps_; ++i) {
      if (cancel.cancelled()) {
        steps_after_cancel_check = 0;
        return {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++steps;
    }
    if (r.text == "throw") throw std::runtime_error("boom");
    return {r.text, r.cursor, r.cursor, {}};
  }
  std::string describe() const override { return "stepping"; }
  std::atomic<int> calls{0}, steps{0}, steps_after_cancel_check{-1};

 private:
  int steps_;
};

CompletionRequest request(std::string text) {
  CompletionRequest r;
  r.text = std::move(text);
  return r;
}

TEST(Scheduler, CompletesAndDeliversOnTheIoThread) {
  FakeIoThread io;
  SteppingCompleter completer(1);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::vector<Outcome> outcomes;
  s.submit("doc", request("hello"), [&](Outcome o) { outcomes.push_back(o); });
  ASSERT_TRUE(io.run_until([&] { return outcomes.size() == 1; }));
  EXPECT_EQ(outcomes[0].kind, Outcome::Kind::Completed);
  EXPECT_EQ(outcomes[0].result.insert_text, "hello");
  EXPECT_EQ(s.counters().completed, 1u);
}

TEST(Scheduler, NewerRequestSupersedesOlderOfTheSameDocument) {
  FakeIoThread io;
  SteppingCompleter completer(50);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::vector<std::pair<int, Outcome>> outcomes;
  for (int i = 0; i < 5; ++i)
    s.submit("doc", request("v" + std::to_string(i)), [&, i](Outcome o) {
      outcomes.push_back({i, o});
    });
  s.submit("other", request("x"), [&](Outcome o) { outcomes.push_back({9, o}); });
  ASSERT_TRUE(io.run_until([&] { return outcomes.size() == 6; }));
  io.run_until([] { return false; }, 200);  // a late result must not appear
  ASSERT_EQ(outcomes.size(), 6u);
  int completed = 0;
  for (auto& [i, o] : outcomes) {
    if (i < 4) {
      EXPECT_EQ(o.kind, Outcome::Kind::Cancelled) << i;
    }
    if (o.kind == Outcome::Kind::Completed) ++completed;
  }
  EXPECT_EQ(completed, 2);
  EXPECT_EQ(s.counters().superseded, 4u);
}

TEST(Scheduler, CancelStopsTheRunningCompleterWithinAStep) {
  FakeIoThread io;
  SteppingCompleter completer(100000);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> outcome;
  auto id = s.submit("doc", request("x"), [&](Outcome o) { outcome = o; });
  while (completer.steps.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(s.cancel(id, Scheduler::CancelReason::Client));
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->kind, Outcome::Kind::Cancelled);
  int at_cancel = completer.steps.load();
  while (completer.steps_after_cancel_check.load() != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_LE(completer.steps.load() - at_cancel, 1);
  EXPECT_FALSE(s.cancel(id, Scheduler::CancelReason::Client));  // already answered
}

TEST(Scheduler, DebounceCollapsesABurstIntoOneCall) {
  FakeIoThread io;
  SteppingCompleter completer(0);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(100));
  int answered = 0;
  for (int i = 0; i < 10; ++i) s.submit("doc", request("k"), [&](Outcome) { ++answered; });
  ASSERT_TRUE(io.run_until([&] { return answered == 10; }));
  EXPECT_EQ(completer.calls.load(), 1);
}

TEST(Scheduler, CompleterFailureIsReported) {
  FakeIoThread io;
  SteppingCompleter completer(0);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> outcome;
  s.submit("doc", request("throw"), [&](Outcome o) { outcome = o; });
  ASSERT_TRUE(io.run_until([&] { return outcome.has_value(); }));
  EXPECT_EQ(outcome->kind, Outcome::Kind::Failed);
  EXPECT_EQ(outcome->error, "boom");
}

TEST(Scheduler, StopAnswersLaterSubmissions) {
  FakeIoThread io;
  SteppingCompleter completer(0);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  s.stop();
  std::optional<Outcome> outcome;
  s.submit("doc", request("x"), [&](Outcome o) { outcome = o; });
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->kind, Outcome::Kind::Cancelled);
}

// A completer that remembers what it made, like the daemon's: it completes "ab|" with "cde" after
// `steps` steps, and answers a request that types through its last completion from memory.
class RememberingCompleter : public Completer {
 public:
  explicit RememberingCompleter(int steps, bool prefetch = false)
      : steps_(steps), prefetch_(prefetch) {}
  CompletionResult complete(const CompletionRequest& r, const CancelToken& cancel) override {
    if (auto recalled = recall(r)) return *recalled;
    ++calls;
    for (int i = 0; i < steps_; ++i) {
      if (cancel.cancelled()) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++steps;
    }
    std::lock_guard lock(mutex_);
    last_ = r;
    has_last_ = true;
    return {"cde", r.cursor, r.cursor, {}};
  }
  std::optional<CompletionResult> recall(const CompletionRequest& r) override {
    std::lock_guard lock(mutex_);
    if (!has_last_ || !continues(last_, r)) return std::nullopt;
    auto typed = *typed_at_cursor(last_, r.text);
    if (typed.size() >= 3 || std::string_view("cde").substr(0, typed.size()) != typed)
      return std::nullopt;
    ++recalled;
    return CompletionResult{std::string("cde").substr(typed.size()), r.cursor, r.cursor, {}};
  }
  std::optional<CompletionRequest> follow_up(const CompletionRequest& r,
                                             const CompletionResult& result) override {
    if (!prefetch_) return std::nullopt;
    CompletionRequest next = r;
    std::string accepted = r.text;
    accepted.insert(r.cursor, result.insert_text);
    next.text = std::move(accepted);
    next.cursor += result.insert_text.size();
    return next;
  }
  std::string describe() const override { return "remembering"; }
  std::atomic<int> calls{0}, steps{0}, recalled{0};

 private:
  int steps_;
  bool prefetch_;
  std::mutex mutex_;
  CompletionRequest last_;
  bool has_last_ = false;
};

// The edit of typing `text` at byte `pos`.
std::vector<DocumentEdit> insert_at(size_t pos, std::string text) {
  return {DocumentEdit{
      .uri = "doc", .version = 2, .begin = pos, .end = pos, .new_text = std::move(text)}};
}

CompletionRequest at(std::string text, size_t cursor) {
  CompletionRequest r;
  r.uri = "file:///a";
  r.text = std::move(text);
  r.cursor = cursor;
  return r;
}

void wait_for(const std::function<bool()>& done) {
  while (!done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(Scheduler, TypingAtTheCursorKeepsTheRunningWorkForTheNextRequest) {
  FakeIoThread io;
  RememberingCompleter completer(40);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first, second;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  wait_for([&] { return completer.steps.load() > 0; });
  s.document_edited("doc", insert_at(2, "c"), "abc");  // the user typed "c" at the cursor
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, Outcome::Kind::Cancelled);  // the client asked for "ab|": it is told no
  s.submit("doc", at("abc", 3), [&](Outcome o) { second = o; });
  ASSERT_TRUE(io.run_until([&] { return second.has_value(); }));
  ASSERT_EQ(second->kind, Outcome::Kind::Completed);
  EXPECT_EQ(second->result.insert_text, "de");
  // One model run, carried to its end, served the second request.
  EXPECT_EQ(completer.calls.load(), 1);
  EXPECT_EQ(completer.steps.load(), 40);
  auto c = s.counters();
  EXPECT_EQ(c.kept_running, 1u);
  EXPECT_EQ(c.kept_finished, 1u);
  EXPECT_EQ(c.stopped_runs, 0u);
}

// Answers "par" early, then works on and returns `final_text`.
class EarlyAnsweringCompleter : public Completer {
 public:
  explicit EarlyAnsweringCompleter(std::string final_text) : final_(std::move(final_text)) {}
  CompletionResult complete(const CompletionRequest& r, const CancelToken& cancel) override {
    return complete_answering_early(r, cancel, nullptr);
  }
  CompletionResult complete_answering_early(const CompletionRequest& r, const CancelToken& cancel,
                                            const AnswerEarly& answer_early) override {
    if (answer_early) answer_early({"par", r.cursor, r.cursor, {{"answeredEarly", true}}});
    for (int i = 0; i < 20 && !cancel.cancelled(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return {final_, r.cursor, r.cursor, {{"generatedText", final_}}};
  }
  std::string describe() const override { return "early"; }

 private:
  std::string final_;
};

TEST(Scheduler, AnEarlyAnswerIsDeliveredAndItsGrowthAnnounced) {
  FakeIoThread io;
  EarlyAnsweringCompleter completer("partial and more");
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> answer;
  int updates = 0;
  s.submit(
      "doc", at("ab", 2), [&](Outcome o) { answer = o; }, std::chrono::milliseconds(0),
      [&] { ++updates; });
  ASSERT_TRUE(io.run_until([&] { return updates > 0; }));
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->kind, Outcome::Kind::Completed);
  EXPECT_EQ(answer->result.insert_text, "par");
  EXPECT_EQ(updates, 1);
  auto c = s.counters();
  EXPECT_EQ(c.answered_early, 1u);
  EXPECT_EQ(c.updated, 1u);
  // The answer's stats became those of the whole run.
  ASSERT_FALSE(s.recent_stats().empty());
  EXPECT_EQ(s.recent_stats().back().value("generatedText", ""), "partial and more");
  EXPECT_TRUE(s.recent_stats().back().value("answeredEarly", false));
}

TEST(Scheduler, AnEarlyAnswerThatWasAllIsNotAnnounced) {
  FakeIoThread io;
  EarlyAnsweringCompleter completer("par");
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> answer;
  int updates = 0;
  s.submit(
      "doc", at("ab", 2), [&](Outcome o) { answer = o; }, std::chrono::milliseconds(0),
      [&] { ++updates; });
  ASSERT_TRUE(io.run_until([&] { return s.counters().kept_finished == 1; }));
  io.run_until([] { return false; }, 50);  // what is posted after the run
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result.insert_text, "par");
  EXPECT_EQ(updates, 0);
}

TEST(Scheduler, CorrectingWhatWasTypedAtTheCursorKeepsTheWork) {
  FakeIoThread io;
  RememberingCompleter completer(100000);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  s.submit("doc", at("ab", 2), [](Outcome) {});
  wait_for([&] { return completer.steps.load() > 0; });
  s.document_edited("doc", insert_at(2, "cd"), "abcd");
  // A backspace over what was typed, then more typing: still at the cursor.
  s.document_edited(
      "doc", {{DocumentEdit{.uri = "doc", .version = 3, .begin = 3, .end = 4, .new_text = ""}}},
      "abc");
  s.document_edited("doc", insert_at(3, "e"), "abce");
  EXPECT_EQ(s.counters().stopped_runs, 0u);
  // Deleting a character before the cursor is not typing there.
  s.document_edited(
      "doc", {{DocumentEdit{.uri = "doc", .version = 5, .begin = 0, .end = 1, .new_text = ""}}},
      "bce");
  wait_for([&] { return s.counters().stopped_runs == 1; });
}

TEST(Scheduler, AnEditThatIsNotTypingAtTheCursorStopsTheWork) {
  FakeIoThread io;
  RememberingCompleter completer(100000);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  wait_for([&] { return completer.steps.load() > 0; });
  s.document_edited("doc", insert_at(0, "x"), "xab");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, Outcome::Kind::Cancelled);
  wait_for([&] { return s.counters().stopped_runs == 1; });
  EXPECT_EQ(s.counters().kept_running, 0u);
  EXPECT_EQ(s.counters().invalidated_by_edit, 1u);
}

TEST(Scheduler, KeptWorkStopsWhenTheNextRequestDoesNotContinueIt) {
  FakeIoThread io;
  RememberingCompleter completer(100000);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first, second;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  wait_for([&] { return completer.steps.load() > 0; });
  s.document_edited("doc", insert_at(2, "c"), "abc");
  EXPECT_EQ(s.counters().kept_running, 1u);
  s.submit("doc", at("abc", 0), [&](Outcome o) { second = o; });  // the cursor moved away
  wait_for([&] { return s.counters().stopped_runs == 1; });
  EXPECT_FALSE(first->kind == Outcome::Kind::Completed);
}

TEST(Scheduler, RecalledCompletionsAreAnsweredAtOnceWithoutTheCompleter) {
  FakeIoThread io;
  RememberingCompleter completer(1);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(50));
  std::optional<Outcome> first, second;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  ASSERT_TRUE(io.run_until([&] { return first.has_value(); }));
  s.submit("doc", at("abcd", 4), [&](Outcome o) { second = o; });
  ASSERT_TRUE(second);  // answered inside submit: no debounce, no queue, no model
  EXPECT_EQ(second->result.insert_text, "e");
  EXPECT_EQ(completer.calls.load(), 1);
  EXPECT_EQ(s.counters().answered_from_memory, 1u);
}

TEST(Scheduler, CancelledRunsAreNotFollowedUp) {
  FakeIoThread io;
  RememberingCompleter completer(100000, /*prefetch=*/true);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first;
  auto id = s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  wait_for([&] { return completer.steps.load() > 2; });
  s.cancel(id, Scheduler::CancelReason::Client);
  wait_for([&] { return s.counters().stopped_runs == 1; });
  EXPECT_EQ(s.counters().prefetch_started, 0u);
  EXPECT_EQ(first->kind, Outcome::Kind::Cancelled);
}

TEST(Scheduler, PrefetchIsPreemptedByARealRequest) {
  FakeIoThread io;
  // 30 steps for a completion; the follow-up (the state after accepting "cde") runs when idle.
  RememberingCompleter completer(30, /*prefetch=*/true);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first, other;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  ASSERT_TRUE(io.run_until([&] { return first.has_value(); }));
  wait_for([&] { return completer.calls.load() == 2; });  // the prefetch started
  EXPECT_EQ(s.counters().prefetch_started, 1u);
  s.submit("other", at("x", 1), [&](Outcome o) { other = o; });
  ASSERT_TRUE(io.run_until([&] { return other.has_value(); }));
  EXPECT_EQ(other->kind, Outcome::Kind::Completed);
  auto c = s.counters();
  EXPECT_EQ(c.prefetch_preempted, 1u);
  EXPECT_EQ(c.prefetch_finished, 0u);
  // The preempted prefetch stopped early: fewer than its 30 steps ran.
  EXPECT_LT(completer.steps.load(), 30 + 30 + 30);
}

TEST(Scheduler, AcceptingACompletionFindsThePrefetchedOneReady) {
  FakeIoThread io;
  RememberingCompleter completer(5, /*prefetch=*/true);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first, second;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  ASSERT_TRUE(io.run_until([&] { return first.has_value(); }));
  wait_for([&] { return s.counters().prefetch_finished == 1; });
  // The user accepted "cde": the prefetch computed "abcde|" already.
  s.submit("doc", at("abcde", 5), [&](Outcome o) { second = o; });
  ASSERT_TRUE(second);
  EXPECT_EQ(second->result.insert_text, "cde");
  EXPECT_EQ(completer.calls.load(), 2);
}

// Completes with "cde" at once; its follow-up fills context (context_only) in `fill_steps` steps
// of 1 ms, checking the token before each.
class FillingCompleter : public Completer {
 public:
  explicit FillingCompleter(int fill_steps) : fill_steps_(fill_steps) {}
  CompletionResult complete(const CompletionRequest& r, const CancelToken& cancel) override {
    if (!r.context_only) {
      ++calls;
      return {"cde", r.cursor, r.cursor, {}};
    }
    ++fills;
    for (int i = 0; i < fill_steps_; ++i) {
      if (cancel.cancelled()) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return {};
  }
  std::optional<CompletionRequest> follow_up(const CompletionRequest& r,
                                             const CompletionResult&) override {
    if (r.context_only) return std::nullopt;
    CompletionRequest fill = r;
    fill.context_only = true;
    return fill;
  }
  std::string describe() const override { return "filling"; }
  std::atomic<int> calls{0}, fills{0};

 private:
  int fill_steps_;
};

TEST(Scheduler, FillingContextGivesWayToTheNextKeystrokeThatContinuesIt) {
  FakeIoThread io;
  FillingCompleter completer(100000);
  Scheduler s(completer, io.poster(), std::chrono::milliseconds(0));
  std::optional<Outcome> first, second;
  s.submit("doc", at("ab", 2), [&](Outcome o) { first = o; });
  ASSERT_TRUE(io.run_until([&] { return first.has_value(); }));
  wait_for([&] { return completer.fills.load() == 1; });
  EXPECT_EQ(s.counters().context_started, 1u);
  EXPECT_EQ(s.counters().prefetch_started, 0u);
  // The user types at the cursor: kept work would make the request wait for the whole fill (100
  // s here); the fill stops instead, and the request runs at once.
  s.document_edited("doc", insert_at(2, "x"), "abx");
  s.submit("doc", at("abx", 3), [&](Outcome o) { second = o; });
  ASSERT_TRUE(io.run_until([&] { return second.has_value(); }));
  EXPECT_EQ(second->kind, Outcome::Kind::Completed);
  EXPECT_EQ(second->result.insert_text, "cde");
  auto c = s.counters();
  EXPECT_EQ(c.context_preempted, 1u);
  EXPECT_EQ(c.context_finished, 0u);
  EXPECT_EQ(c.kept_running, 0u);
  EXPECT_EQ(c.prefetch_preempted, 0u);
  EXPECT_EQ(completer.calls.load(), 2);
}

TEST(Typing, TypedAtCursor) {
  CompletionRequest r = at("hello world", 5);
  EXPECT_EQ(typed_at_cursor(r, "hello, world"), ",");
  EXPECT_EQ(typed_at_cursor(r, "hello world"), "");
  EXPECT_FALSE(typed_at_cursor(r, "hello worl"));
  EXPECT_FALSE(typed_at_cursor(r, "hellO, world"));
  EXPECT_FALSE(typed_at_cursor(r, "hello, world!"));
  EXPECT_TRUE(continues(r, at("hello, world", 6)));
  EXPECT_FALSE(continues(r, at("hello, world", 5)));
  CompletionRequest other = at("hello, world", 6);
  other.uri = "file:///b";
  EXPECT_FALSE(continues(r, other));
}

}  // namespace
}  // namespace ghostline::lsp
