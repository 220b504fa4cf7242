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
    s.submit("doc", request("v" + std::to_string(i)), [&, i](Outcome o) { outcomes.push_back({i, o}); });
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
  while (completer.steps_after_cancel_check.load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
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

}  // namespace
}  // namespace ghostline::lsp
