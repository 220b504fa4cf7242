// Sits between dispatch (I/O thread) and the completer (engine thread). A newer request for a
// document supersedes the older one, cancellation answers at once, a short debounce lets a
// burst of keystrokes collapse into one request, and one job runs at a time on the engine
// thread. Every submitted job gets exactly one outcome, delivered through `post`.
//
// Work is not thrown away while it is still useful. When the user types at the cursor of a
// running job, its request is answered as cancelled but the work goes on (it is "kept"), and
// the next request that continues it runs right after it, where the completer can answer from
// what it produced (Completer::recall) instead of starting over. A request the completer can
// answer from memory is answered at once on the I/O thread. When the engine would idle after a
// completion, it computes the completer's follow-up (prefetch, or the context a deadline cut
// from the prompt); any real request preempts it, the context even when it continues it.
// Work that is no longer useful is cancelled through its token and stops within a step.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "lsp/completer.h"
#include "lsp/document_store.h"

namespace ghostline::lsp {

struct Outcome {
  enum class Kind { Completed, Cancelled, Failed };
  Kind kind;
  CompletionResult result;        // Completed
  std::string error;              // Failed
  double queue_ms = 0;            // waiting (debounce and queue) before the completer started
  double complete_ms = 0;         // time inside the completer
};

struct SchedulerCounters {
  uint64_t submitted = 0, completed = 0, failed = 0;
  uint64_t cancelled_by_client = 0, superseded = 0, invalidated_by_edit = 0, dropped = 0;
  uint64_t completer_calls = 0;     // complete() invoked (prefetch included)
  uint64_t answered_from_memory = 0;  // answered on the I/O thread by Completer::recall
  uint64_t kept_running = 0;        // answered as cancelled, work kept because the user typed on
  uint64_t kept_finished = 0;       // kept work that ran to its end
  uint64_t answered_early = 0;      // answered with what was ready at the deadline, work kept
  uint64_t updated = 0;             // of those, finished with more than the answer showed
  uint64_t prefetch_started = 0, prefetch_finished = 0, prefetch_preempted = 0;
  // Idle work that computes the context a deadline cut from a prompt (context_only requests).
  uint64_t context_started = 0, context_finished = 0, context_preempted = 0;
  uint64_t stopped_runs = 0;        // runs whose token was cancelled while the completer ran
  uint64_t steps_after_cancel = 0;  // model steps those runs finished after the cancel (total)
  uint64_t max_steps_after_cancel = 0;
};

class Scheduler {
 public:
  using JobId = uint64_t;
  using Done = std::function<void(Outcome)>;
  // I/O thread: a job answered early (Completer::complete_answering_early) finished with more
  // than it was answered with; the client may ask again.
  using Updated = std::function<void()>;
  // Runs a function on the I/O thread.
  using Post = std::function<void(std::function<void()>)>;

  enum class CancelReason { Client, Superseded, Edited, Dropped };

  Scheduler(Completer& completer, Post post, std::chrono::milliseconds debounce);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // I/O thread only. `document_key` identifies the document across sessions (session id +
  // URI). An older job for the same key is cancelled as superseded.
  JobId submit(const std::string& document_key, CompletionRequest request, Done done,
               std::chrono::milliseconds debounce, Updated updated = {});
  JobId submit(const std::string& document_key, CompletionRequest request, Done done) {
    return submit(document_key, std::move(request), std::move(done), debounce_);
  }
  // I/O thread only. Unknown or finished ids are ignored. Returns whether a job was cancelled.
  bool cancel(JobId id, CancelReason reason);
  // I/O thread only: cancels the job of a document and any work still running for it (the
  // document was closed).
  void cancel_document(const std::string& document_key, CancelReason reason);
  // I/O thread only: the document was edited (all edits of one change, in order) and now has
  // `text`. Its pending job is answered as cancelled; running work is kept while the edits only
  // change text at its cursor (the user typed on, or corrected what they typed), and stopped
  // otherwise. A prefetch stands for a state the document may reach (the completion accepted),
  // not one it was in, so it is kept when `text` is that state with typing at its cursor.
  void document_edited(const std::string& document_key, std::span<const DocumentEdit> edits,
                       std::string_view text);

  // Stops the engine thread: the running job (which stops within a step) and pending jobs are
  // cancelled.
  void stop();

  SchedulerCounters counters() const;
  // I/O thread only: statistics of the most recent completed requests, oldest first, each the
  // completer's stats object with the scheduler's queueMs and completeMs added.
  const std::deque<nlohmann::json>& recent_stats() const { return recent_stats_; }
  std::chrono::milliseconds default_debounce() const { return debounce_; }

 private:
  struct Job;
  void engine_loop();
  void finish(const std::shared_ptr<Job>& job, Outcome outcome);
  void record_final(const std::shared_ptr<Job>& job, const Outcome& outcome);
  static nlohmann::json stats_of(const Outcome& outcome);
  // Answers a running job as cancelled but lets its work go on.
  void keep_running(const std::shared_ptr<Job>& job, CancelReason reason);
  // Answers the document's pending job as cancelled; when it is `run` and its work is still
  // useful (`keep`), the work goes on.
  void answer_pending(const std::string& document_key, const std::shared_ptr<Job>& run, bool keep,
                      CancelReason reason);
  void count_cancel(CancelReason reason);
  std::shared_ptr<Job> running() const;
  void run_job(const std::shared_ptr<Job>& job, std::unique_lock<std::mutex>& lock);

  Completer& completer_;
  Post post_;
  std::chrono::milliseconds debounce_;

  // I/O thread state.
  std::unordered_map<JobId, std::shared_ptr<Job>> live_;        // not yet answered
  std::unordered_map<std::string, JobId> latest_by_document_;
  JobId next_id_ = 1;
  std::deque<nlohmann::json> recent_stats_;
  uint64_t recent_base_ = 0;  // serial number of recent_stats_.front()

  // Shared with the engine thread.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::shared_ptr<Job> running_;  // the job inside the completer, if any
  bool stopping_ = false;
  SchedulerCounters counters_;
  std::thread engine_thread_;
};

}  // namespace ghostline::lsp
