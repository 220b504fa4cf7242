#include "engine/backend/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ghostline::engine::cpu {
namespace {

// How long an idle thread keeps polling before it sleeps in the kernel. Long enough to cover
// the gap between two kernels of one forward pass, short enough not to burn a core when idle.
constexpr auto kSpinTime = std::chrono::microseconds(200);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `done` for up to kSpinTime; true when it became true.
template <typename Pred>
bool spin_until(Pred done) {
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > kSpinTime) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  errors_.resize(threads);
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_ = true;
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

std::pair<int64_t, int64_t> ThreadPool::partition(int64_t n, int parts, int index) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

void ThreadPool::run_share(int index) {
  const auto [begin, end] = partition(job_n_, size(), index);
  if (begin == end) return;
  try {
    job_call_(job_ctx_, begin, end, index);
  } catch (...) {
    errors_[index] = std::current_exception();
  }
}

void ThreadPool::run(int64_t n, void* ctx, Trampoline call) {
  job_n_ = n;
  job_ctx_ = ctx;
  job_call_ = call;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  // seq_cst pairs with the workers' increment of sleeping_workers_: either we see a worker
  // that is about to sleep, or it sees the new generation before sleeping.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();

  run_share(0);

  auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(all_done)) {
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    for (int left; (left = pending_.load(std::memory_order_seq_cst)) != 0;) pending_.wait(left);
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }

  for (auto& e : errors_) {
    if (e) {
      auto error = std::exchange(e, nullptr);
      for (auto& other : errors_) other = nullptr;
      std::rethrow_exception(error);
    }
  }
}

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    auto job_posted = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(job_posted)) {
      sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
      while (generation_.load(std::memory_order_seq_cst) == seen) generation_.wait(seen);
      sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stopping_) return;
    run_share(index);
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst))
      pending_.notify_all();
  }
}

}  // namespace ghostline::engine::cpu
