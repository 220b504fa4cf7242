#include "lsp/scheduler.h"

#include <algorithm>
#include <exception>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {

using Clock = std::chrono::steady_clock;

struct Scheduler::Job {
  JobId id;
  std::string document_key;
  CompletionRequest request;
  CancelToken token;
  Done done;
  Clock::time_point submitted_at;
  Clock::time_point ready_at;
  bool answered = false;  // I/O thread only
};

namespace {
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

Scheduler::Scheduler(Completer& completer, Post post, std::chrono::milliseconds debounce)
    : completer_(completer), post_(std::move(post)), debounce_(debounce) {
  engine_thread_ = std::thread([this] { engine_loop(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !engine_thread_.joinable()) return;
    stopping_ = true;
    for (auto& job : queue_) job->token.cancel();
  }
  wake_.notify_all();
  if (engine_thread_.joinable()) engine_thread_.join();
}

Scheduler::JobId Scheduler::submit(const std::string& document_key, CompletionRequest request,
                                   Done done, std::chrono::milliseconds debounce) {
  if (auto it = latest_by_document_.find(document_key); it != latest_by_document_.end())
    cancel(it->second, CancelReason::Superseded);
  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  job->document_key = document_key;
  job->request = std::move(request);
  job->done = std::move(done);
  job->submitted_at = Clock::now();
  job->ready_at = job->submitted_at + debounce;
  live_[job->id] = job;
  latest_by_document_[document_key] = job->id;
  {
    std::lock_guard lock(mutex_);
    ++counters_.submitted;
    if (stopping_) {
      job->token.cancel();
    } else {
      queue_.push_back(job);
    }
  }
  if (job->token.cancelled()) {
    finish(job, Outcome{Outcome::Kind::Cancelled, {}, "the server is shutting down"});
  } else {
    wake_.notify_one();
  }
  return job->id;
}

bool Scheduler::cancel(JobId id, CancelReason reason) {
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  auto job = it->second;
  job->token.cancel();
  {
    std::lock_guard lock(mutex_);
    auto q = std::find(queue_.begin(), queue_.end(), job);
    if (q != queue_.end()) queue_.erase(q);
    switch (reason) {
      case CancelReason::Client: ++counters_.cancelled_by_client; break;
      case CancelReason::Superseded: ++counters_.superseded; break;
      case CancelReason::Edited: ++counters_.invalidated_by_edit; break;
      case CancelReason::Dropped: ++counters_.dropped; break;
    }
  }
  static constexpr const char* kWhy[] = {"cancelled by the client",
                                         "superseded by a newer request for the document",
                                         "the document changed", "the client went away"};
  finish(job, Outcome{Outcome::Kind::Cancelled, {}, kWhy[static_cast<int>(reason)]});
  return true;
}

void Scheduler::cancel_document(const std::string& document_key, CancelReason reason) {
  if (auto it = latest_by_document_.find(document_key); it != latest_by_document_.end())
    cancel(it->second, reason);
}

// I/O thread: delivers the single outcome of a job.
void Scheduler::finish(const std::shared_ptr<Job>& job, Outcome outcome) {
  if (job->answered) return;
  job->answered = true;
  live_.erase(job->id);
  if (outcome.kind == Outcome::Kind::Completed) {
    constexpr size_t kRecent = 64;
    auto stats = nlohmann::json::parse(outcome.result.stats_json.empty() ? "{}" : outcome.result.stats_json,
                                       nullptr, false);
    if (!stats.is_object()) stats = nlohmann::json::object();
    stats["queueMs"] = outcome.queue_ms;
    stats["completeMs"] = outcome.complete_ms;
    recent_stats_.push_back(stats.dump());
    if (recent_stats_.size() > kRecent) recent_stats_.pop_front();
  }
  if (auto it = latest_by_document_.find(job->document_key);
      it != latest_by_document_.end() && it->second == job->id)
    latest_by_document_.erase(it);
  job->done(std::move(outcome));
}

void Scheduler::engine_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto job = queue_.front();
    if (Clock::now() < job->ready_at) {
      // Debounce: wait until the job is due, unless it is superseded or cancelled meanwhile.
      wake_.wait_until(lock, job->ready_at,
                       [&] { return stopping_ || queue_.empty() || queue_.front() != job; });
      continue;
    }
    queue_.pop_front();
    lock.unlock();

    Outcome outcome{Outcome::Kind::Completed, {}, {}};
    auto started = Clock::now();
    outcome.queue_ms = ms_between(job->submitted_at, started);
    if (!job->token.cancelled()) {
      try {
        outcome.result = completer_.complete(job->request, job->token);
      } catch (const std::exception& e) {
        outcome.kind = Outcome::Kind::Failed;
        outcome.error = e.what();
      }
    }
    outcome.complete_ms = ms_between(started, Clock::now());
    lock.lock();
    if (outcome.kind == Outcome::Kind::Failed) {
      ++counters_.failed;
    } else if (!job->token.cancelled()) {
      ++counters_.completed;
    }
    lock.unlock();
    // A job cancelled meanwhile was already answered on the I/O thread; finish() ignores it.
    post_([this, job, outcome = std::move(outcome)]() mutable { finish(job, std::move(outcome)); });
    lock.lock();
  }
}

SchedulerCounters Scheduler::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace ghostline::lsp
