// A fixed pool of compute threads for the kernels. Decode calls parallel_for several hundred
// times per token, so dispatch is a generation counter that idle workers spin on for a short
// while before they block, and the calling thread works too.
//
// Work is cut into ranges that depend only on n and the chunk count (so results never depend
// on timing); threads claim ranges from a shared counter. A thread that the OS has
// descheduled — common when the editor, a build and the daemon share a laptop — just claims
// fewer ranges: the call returns when every range is done, without waiting for threads that
// never woke up. Work whose results do not depend on the cuts (the rows of a product) can
// instead be cut while running: one stretch per thread, which the others take over from its
// end when they are done first (parallel_for_balanced).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace ghostline::engine::cpu {

class ThreadPool {
 public:
  // `threads` counts the calling thread: ThreadPool(1) runs everything inline. Values below 1
  // mean one thread per hardware thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls f(begin, end, thread) for the ranges partition(n, chunks, i), i < chunks (empty ones
  // skipped), which cover [0, n) exactly once; `thread` (0 = the caller) identifies the
  // executing thread, e.g. for per-thread scratch, and no two concurrent calls share it.
  // Returns when all ranges are done; an exception thrown by f is rethrown here (the other
  // ranges still run). Must not be called from inside f, nor from two threads at once.
  template <typename F>
  void parallel_for_chunks(int64_t n, int64_t chunks, F&& f) {
    if (n <= 0) return;
    if (chunks > n) chunks = n;
    if (chunks > kMaxChunks) chunks = kMaxChunks;
    if (chunks < 1) chunks = 1;
    if (chunks == 1 || workers_.empty()) {
      f(int64_t{0}, n, 0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(n, chunks, const_cast<void*>(static_cast<const void*>(&f)),
        [](void* ctx, int64_t begin, int64_t end, int thread) {
          (*static_cast<Fn*>(ctx))(begin, end, thread);
        });
  }

  // One range per thread.
  template <typename F>
  void parallel_for(int64_t n, F&& f) {
    parallel_for_chunks(n, size(), std::forward<F>(f));
  }

  // Calls f(begin, end, thread) for ranges that cover [0, n) exactly once but are cut while
  // running, so f's results must not depend on where the cuts fall (rows of a matrix product).
  // Thread i works through its own share, partition(n, size(), i), from the front in pieces
  // that shrink as the share does; a thread that is done takes half of what another has left,
  // from the back, until nothing is left. Each thread thus reads one contiguous stretch
  // (which the hardware prefetchers follow), and threads that run at different speeds, or not
  // at all, finish together to within a small piece. Same rules as parallel_for_chunks
  // otherwise; n must be below 2^32.
  template <typename F>
  void parallel_for_balanced(int64_t n, F&& f) {
    if (n <= 0) return;
    if (n == 1 || workers_.empty()) {
      f(int64_t{0}, n, 0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run_balanced(n, const_cast<void*>(static_cast<const void*>(&f)),
                 [](void* ctx, int64_t begin, int64_t end, int thread) {
                   (*static_cast<Fn*>(ctx))(begin, end, thread);
                 });
  }

  // Range i of `parts` for n items: contiguous, the first n % parts ranges one item longer.
  static std::pair<int64_t, int64_t> partition(int64_t n, int64_t parts, int64_t index);

  static constexpr int64_t kMaxChunks = (int64_t{1} << 18) - 1;

 private:
  using Trampoline = void (*)(void*, int64_t, int64_t, int);

  void run(int64_t n, int64_t chunks, void* ctx, Trampoline call);
  void run_balanced(int64_t n, void* ctx, Trampoline call);
  // Sets the job fields; `units` of it (ranges, or items of a balanced job) are to be done.
  void begin_job(int64_t n, void* ctx, Trampoline call, int64_t units);
  // Publishes the job with `chunks` ranges to claim (0: a balanced job, claimed by shares),
  // works on it, and waits until all its units are done.
  void post_and_wait(int64_t chunks);
  // Claims and runs ranges of job `generation` until none is left or the job is over.
  void work_on(uint32_t generation, int thread);
  // The part of work_on for balanced jobs: the thread's own share, then the others'.
  void work_on_shares(int thread);
  // Runs [begin, end) of the job, keeping an exception for the caller.
  void run_range(int64_t begin, int64_t end, int thread);
  // Counts `units` of the job done: once per thread and job, when it finds nothing more to
  // claim, so that the shared counter's cache line moves between cores once per thread rather
  // than once per piece (a job cannot end while a thread holds units it has not counted).
  void count_done(int64_t units, int thread);
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;  // one slot per thread

  // The job; written by the caller before it publishes the claim word, read by a thread only
  // after it claimed a range of that job (so the caller is still waiting for it).
  int64_t job_n_ = 0;
  void* job_ctx_ = nullptr;
  Trampoline job_call_ = nullptr;
  int64_t job_units_ = 0;  // done_ when the job is over

  // Claim word: generation (28 bits) | range count (18 bits) | next range (18 bits).
  alignas(64) std::atomic<uint64_t> claim_{0};
  // A balanced job's shares, one per thread: next item (low 32 bits) | end (high 32 bits).
  // Written by the caller while every share is empty (the last job is over), so a thread that
  // claims from one always claims from the current job.
  struct alignas(64) Share {
    std::atomic<uint64_t> range{0};
  };
  std::vector<Share> shares_;
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace ghostline::engine::cpu
