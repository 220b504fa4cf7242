// A fixed pool of compute threads for the kernels. Decode calls parallel_for several hundred
// times per token, so dispatch is a generation counter that idle workers spin on for a short
// while before they block, and the calling thread takes the first share of the work itself.
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

  // Calls f(begin, end, thread) for contiguous, non-empty ranges that cover [0, n) exactly once;
  // thread i (0 = the caller) always gets the same range for the same n and pool size, the
  // earlier threads the larger ones. Returns when all ranges are done; an exception thrown by
  // f is rethrown here. Must not be called from inside f, nor from two threads at once.
  template <typename F>
  void parallel_for(int64_t n, F&& f) {
    if (n <= 0) return;
    if (n == 1 || workers_.empty()) {
      f(int64_t{0}, n, 0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(n, const_cast<void*>(static_cast<const void*>(&f)),
        [](void* ctx, int64_t begin, int64_t end, int thread) {
          (*static_cast<Fn*>(ctx))(begin, end, thread);
        });
  }

  // The range thread `index` of `parts` gets for n items.
  static std::pair<int64_t, int64_t> partition(int64_t n, int parts, int index);

 private:
  using Trampoline = void (*)(void*, int64_t, int64_t, int);

  void run(int64_t n, void* ctx, Trampoline call);
  void run_share(int index);
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::vector<std::exception_ptr> errors_;  // one slot per thread, read after the join

  // The job being run; written by the caller before the generation is published.
  int64_t job_n_ = 0;
  void* job_ctx_ = nullptr;
  Trampoline job_call_ = nullptr;
  bool stopping_ = false;

  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> sleeping_workers_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<bool> caller_sleeping_{false};
};

}  // namespace ghostline::engine::cpu
