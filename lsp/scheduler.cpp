#include "lsp/scheduler.h"
#include "base/clock.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {

using Clock = std::chrono::steady_clock;

struct Scheduler::Job {
  JobId id = 0;
  std::string document_key;
  CompletionRequest request;
  CancelToken token;
  Done done;
  Updated updated;
  uint64_t recent_serial = UINT64_MAX;  // I/O thread: its entry in recent_stats_, once answered
  Clock::time_point submitted_at;
  Clock::time_point ready_at;
  bool prefetch = false;            // made by the scheduler in idle time, answers nobody
  std::atomic<bool> kept{false};    // answered as cancelled, work kept (set on the I/O thread)
  bool answered = false;            // I/O thread only
  // I/O thread only: the text typed at the cursor since the request, while every edit stayed
  // there; `diverged` once one did not.
  std::string typed;
  bool diverged = false;

  // Follows the edits; true while the document is still the request's text with `typed` at
  // its cursor.
  bool typed_through(std::span<const DocumentEdit> edits) {
    for (const auto& e : edits) {
      if (diverged) break;
      const size_t lo = request.cursor, hi = lo + typed.size();
      if (e.begin < lo || e.end > hi) {
        diverged = true;
        break;
      }
      typed.replace(e.begin - lo, e.end - e.begin, e.new_text);
    }
    return !diverged;
  }
};

namespace {
constexpr const char* kWhy[] = {"cancelled by the client",
                                "superseded by a newer request for the document",
                                "the document changed", "the client went away"};
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
    if (running_) running_->token.cancel();
  }
  wake_.notify_all();
  if (engine_thread_.joinable()) engine_thread_.join();
}

std::shared_ptr<Scheduler::Job> Scheduler::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

Scheduler::JobId Scheduler::submit(const std::string& document_key, CompletionRequest request,
                                   Done done, std::chrono::milliseconds debounce, Updated updated) {
  // Running work this request continues is kept; the rest is superseded or preempted. Filling
  // context is never kept: it would make the request wait for all of it.
  auto run = running();
  const bool continues_running = run && run->document_key == document_key &&
                                 !run->request.context_only && !run->token.cancelled() &&
                                 continues(run->request, request);
  answer_pending(document_key, run, continues_running, CancelReason::Superseded);
  {
    std::lock_guard lock(mutex_);
    // Idle work (prefetch, kept work of other documents) gives way to a real request.
    for (auto q = queue_.begin(); q != queue_.end();) {
      if ((*q)->prefetch) {
        (*q)->token.cancel();
        ++((*q)->request.context_only ? counters_.context_preempted : counters_.prefetch_preempted);
        q = queue_.erase(q);
      } else {
        ++q;
      }
    }
    if (running_ && !(continues_running && running_ == run) &&
        (running_->prefetch || running_->kept))
      running_->token.cancel();
  }

  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  job->document_key = document_key;
  job->request = std::move(request);
  job->done = std::move(done);
  job->updated = std::move(updated);
  job->submitted_at = Clock::now();
  // Kept work for this document is about to finish with what this request needs: no debounce.
  job->ready_at = job->submitted_at + (continues_running ? std::chrono::milliseconds(0) : debounce);
  live_[job->id] = job;
  latest_by_document_[document_key] = job->id;

  if (auto recalled = completer_.recall(job->request)) {
    {
      std::lock_guard lock(mutex_);
      ++counters_.submitted;
      ++counters_.answered_from_memory;
      ++counters_.completed;
    }
    Outcome outcome{Outcome::Kind::Completed, std::move(*recalled), {}};
    finish(job, std::move(outcome));
    return job->id;
  }
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

void Scheduler::count_cancel(CancelReason reason) {
  switch (reason) {
    case CancelReason::Client: ++counters_.cancelled_by_client; break;
    case CancelReason::Superseded: ++counters_.superseded; break;
    case CancelReason::Edited: ++counters_.invalidated_by_edit; break;
    case CancelReason::Dropped: ++counters_.dropped; break;
  }
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
    count_cancel(reason);
  }
  finish(job, Outcome{Outcome::Kind::Cancelled, {}, kWhy[static_cast<int>(reason)]});
  return true;
}

void Scheduler::keep_running(const std::shared_ptr<Job>& job, CancelReason reason) {
  job->kept = true;
  {
    std::lock_guard lock(mutex_);
    count_cancel(reason);
    ++counters_.kept_running;
  }
  finish(job, Outcome{Outcome::Kind::Cancelled, {}, kWhy[static_cast<int>(reason)]});
}

void Scheduler::answer_pending(const std::string& document_key, const std::shared_ptr<Job>& run,
                               bool keep, CancelReason reason) {
  auto it = latest_by_document_.find(document_key);
  if (it == latest_by_document_.end()) return;
  auto job = live_.at(it->second);
  if (job == run && keep) {
    keep_running(job, reason);
  } else {
    cancel(job->id, reason);
  }
}

void Scheduler::cancel_document(const std::string& document_key, CancelReason reason) {
  if (auto it = latest_by_document_.find(document_key); it != latest_by_document_.end())
    cancel(it->second, reason);
  std::lock_guard lock(mutex_);
  if (running_ && running_->document_key == document_key) running_->token.cancel();
}

void Scheduler::document_edited(const std::string& document_key,
                                std::span<const DocumentEdit> edits, std::string_view text) {
  auto run = running();
  const bool typed_on =
      run && run->document_key == document_key &&
      (run->prefetch ? typed_at_cursor(run->request, text).has_value() : run->typed_through(edits));
  answer_pending(document_key, run, typed_on, CancelReason::Edited);
  if (run && run->document_key == document_key && !typed_on) run->token.cancel();
}

nlohmann::json Scheduler::stats_of(const Outcome& outcome) {
  nlohmann::json stats =
      outcome.result.stats.is_object() ? outcome.result.stats : nlohmann::json::object();
  stats["queueMs"] = outcome.queue_ms;
  stats["completeMs"] = outcome.complete_ms;
  return stats;
}

// I/O thread: the stats of a job answered early become those of its whole run, marked so.
void Scheduler::record_final(const std::shared_ptr<Job>& job, const Outcome& outcome) {
  if (job->recent_serial < recent_base_ ||
      job->recent_serial >= recent_base_ + recent_stats_.size())
    return;
  nlohmann::json& entry = recent_stats_[job->recent_serial - recent_base_];
  const nlohmann::json answered_after = entry.value("completeMs", nlohmann::json());
  entry = stats_of(outcome);
  entry["answeredEarly"] = true;
  entry["answeredAfterMs"] = answered_after;
}

// I/O thread: delivers the single outcome of a job.
void Scheduler::finish(const std::shared_ptr<Job>& job, Outcome outcome) {
  if (job->answered) return;
  job->answered = true;
  live_.erase(job->id);
  if (outcome.kind == Outcome::Kind::Completed) {
    constexpr size_t kRecent = 64;
    job->recent_serial = recent_base_ + recent_stats_.size();
    recent_stats_.push_back(stats_of(outcome));
    if (recent_stats_.size() > kRecent) {
      recent_stats_.pop_front();
      ++recent_base_;
    }
  }
  if (auto it = latest_by_document_.find(job->document_key);
      it != latest_by_document_.end() && it->second == job->id)
    latest_by_document_.erase(it);
  job->done(std::move(outcome));
}

// Engine thread, with `lock` held on entry and on return.
void Scheduler::run_job(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock) {
  running_ = job;
  const bool run = !job->token.cancelled();
  if (run) ++counters_.completer_calls;
  lock.unlock();

  Outcome outcome{Outcome::Kind::Completed, {}, {}};
  auto started = Clock::now();
  outcome.queue_ms = ms_between(job->submitted_at, started);
  // Set on the engine thread when the completer answers early; read there after it returns.
  std::optional<std::string> answered_with;
  const Completer::AnswerEarly answer_early = [&](const CompletionResult& partial) {
    if (job->prefetch || answered_with) return;
    answered_with = partial.insert_text;
    Outcome early{
        Outcome::Kind::Completed, partial, {}, outcome.queue_ms, ms_between(started, Clock::now())};
    {
      std::lock_guard guard(mutex_);
      ++counters_.answered_early;
    }
    post_([this, job, early = std::move(early)]() mutable {
      if (job->answered) return;
      job->kept = true;  // answered, and its work goes on
      finish(job, std::move(early));
    });
  };
  if (run) {
    try {
      outcome.result =
          job->updated ? completer_.complete_answering_early(job->request, job->token, answer_early)
                       : completer_.complete(job->request, job->token);
    } catch (const std::exception& e) {
      outcome.kind = Outcome::Kind::Failed;
      outcome.error = e.what();
    }
  }
  outcome.complete_ms = ms_between(started, Clock::now());

  lock.lock();
  running_.reset();
  const bool cancelled = job->token.cancelled();
  // What a stopped run returns is partial: never deliver it (a job cancelled by the client was
  // answered already; one stopped by stop() is answered here).
  if (cancelled && outcome.kind == Outcome::Kind::Completed)
    outcome = Outcome{Outcome::Kind::Cancelled, {}, "the server is shutting down", outcome.queue_ms,
                      outcome.complete_ms};
  if (run && cancelled) {
    ++counters_.stopped_runs;
    const auto wasted = static_cast<uint64_t>(std::max(0, outcome.result.steps_after_cancel));
    counters_.steps_after_cancel += wasted;
    counters_.max_steps_after_cancel = std::max(counters_.max_steps_after_cancel, wasted);
  }
  if (job->prefetch) {
    const bool context = job->request.context_only;
    if (!cancelled && outcome.kind == Outcome::Kind::Completed)
      ++(context ? counters_.context_finished : counters_.prefetch_finished);
    else if (cancelled)
      ++(context ? counters_.context_preempted : counters_.prefetch_preempted);
    return;
  }
  if (outcome.kind == Outcome::Kind::Failed) {
    ++counters_.failed;
  } else if (!cancelled) {
    if (job->kept || answered_with) ++counters_.kept_finished;
    else ++counters_.completed;
  }
  const bool idle_next = run && !cancelled && outcome.kind == Outcome::Kind::Completed &&
                         queue_.empty() && !stopping_;
  const bool grew = answered_with && !cancelled && outcome.kind == Outcome::Kind::Completed &&
                    outcome.result.insert_text != *answered_with;
  if (grew) ++counters_.updated;
  lock.unlock();
  // A job cancelled meanwhile was already answered on the I/O thread; finish() ignores it.
  CompletionResult result = outcome.result;
  if (answered_with && outcome.kind == Outcome::Kind::Completed && !cancelled)
    post_([this, job, outcome] { record_final(job, outcome); });
  post_([this, job, outcome = std::move(outcome)]() mutable { finish(job, std::move(outcome)); });
  if (grew) post_([job] { job->updated(); });
  std::optional<CompletionRequest> next;
  if (idle_next) {
    try {
      next = completer_.follow_up(job->request, result);
    } catch (const std::exception&) {
      next.reset();
    }
  }
  lock.lock();
  if (next && queue_.empty() && !stopping_) {
    auto ahead = std::make_shared<Job>();
    ahead->document_key = job->document_key;
    ahead->request = std::move(*next);
    ahead->prefetch = true;
    ahead->submitted_at = ahead->ready_at = Clock::now();
    ++(ahead->request.context_only ? counters_.context_started : counters_.prefetch_started);
    queue_.push_back(std::move(ahead));
  }
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
    run_job(job, lock);
  }
}

SchedulerCounters Scheduler::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace ghostline::lsp
