#include "engine/backend/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

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

// Claim word layout: generation | range count | next range.
constexpr int kRangeBits = 18;
constexpr uint64_t kRangeMask = (uint64_t{1} << kRangeBits) - 1;
constexpr int kGenerationShift = 2 * kRangeBits;
constexpr uint64_t kGenerationMask = (uint64_t{1} << (64 - kGenerationShift)) - 1;

uint64_t pack_claim(uint32_t generation, int64_t chunks, int64_t next) {
  return ((generation & kGenerationMask) << kGenerationShift) |
         (static_cast<uint64_t>(chunks) << kRangeBits) | static_cast<uint64_t>(next);
}

// A balanced job's share word: next item | end << 32.
uint64_t pack_share(int64_t next, int64_t end) {
  return static_cast<uint64_t>(next) | (static_cast<uint64_t>(end) << 32);
}
int64_t share_next(uint64_t share) {
  return static_cast<int64_t>(share & 0xffffffffu);
}
int64_t share_end(uint64_t share) {
  return static_cast<int64_t>(share >> 32);
}

// A thread takes 1/kOwnPieces of what is left of its own share at a time: the pieces shrink
// to single items, which keeps the others from waiting long on the last one, and there are few
// enough that claiming costs nothing. (Quarters were slower: each piece's first rows start
// cold.)
constexpr int64_t kOwnPieces = 2;

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  errors_.resize(threads);
  shares_ = std::vector<Share>(static_cast<size_t>(threads));
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

std::pair<int64_t, int64_t> ThreadPool::partition(int64_t n, int64_t parts, int64_t index) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

void ThreadPool::work_on(uint32_t generation, int thread) {
  int64_t done = 0;  // ranges this thread ran, counted once it stops (the job stays open till then)
  uint64_t claim = claim_.load(std::memory_order_acquire);
  for (;;) {
    if ((claim >> kGenerationShift) != (generation & kGenerationMask)) break;  // job is over
    const auto chunks = static_cast<int64_t>((claim >> kRangeBits) & kRangeMask);
    const auto next = static_cast<int64_t>(claim & kRangeMask);
    if (chunks == 0) return work_on_shares(thread);  // a balanced job
    if (next >= chunks) break;
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      continue;  // `claim` now holds the current word
    // The range is ours: the caller waits for it, so the job fields are valid.
    const auto [begin, end] = partition(job_n_, chunks, next);
    run_range(begin, end, thread);
    ++done;
    claim = claim_.load(std::memory_order_acquire);
  }
  count_done(done, thread);
}

void ThreadPool::work_on_shares(int thread) {
  const auto threads = static_cast<int>(shares_.size());
  int64_t done = 0;  // items this thread ran, counted once it stops
  for (int k = 0; k < threads; ++k) {
    const bool own = k == 0;
    std::atomic<uint64_t>& share = shares_[static_cast<size_t>((thread + k) % threads)].range;
    uint64_t word = share.load(std::memory_order_acquire);
    for (;;) {
      const int64_t next = share_next(word), end = share_end(word);
      if (next >= end) break;
      // From the front of the own share, from the back of another's.
      const int64_t take = own ? std::max<int64_t>(1, (end - next + kOwnPieces - 1) / kOwnPieces)
                               : std::max<int64_t>(1, (end - next) / 2);
      const uint64_t rest = own ? pack_share(next + take, end) : pack_share(next, end - take);
      if (!share.compare_exchange_weak(word, rest, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
        continue;  // `word` now holds the current value
      // The items are ours: the caller waits for them, so the job fields are valid.
      if (own)
        run_range(next, next + take, thread);
      else
        run_range(end - take, end, thread);
      done += take;
      word = share.load(std::memory_order_acquire);
    }
  }
  count_done(done, thread);
}

void ThreadPool::run_range(int64_t begin, int64_t end, int thread) {
  if (begin >= end) return;
  try {
    job_call_(job_ctx_, begin, end, thread);
  } catch (...) {
    if (!errors_[thread]) errors_[thread] = std::current_exception();
  }
}

void ThreadPool::count_done(int64_t units, int thread) {
  if (units == 0) return;  // the job may be over: its fields are not ours to read
  const int64_t total = job_units_;  // read while the job cannot be over
  if (done_.fetch_add(units, std::memory_order_seq_cst) + units == total && thread != 0 &&
      caller_sleeping_.load(std::memory_order_seq_cst))
    done_.notify_all();
}

void ThreadPool::begin_job(int64_t n, void* ctx, Trampoline call, int64_t units) {
  job_n_ = n;
  job_ctx_ = ctx;
  job_call_ = call;
  job_units_ = units;
  done_.store(0, std::memory_order_relaxed);
}

void ThreadPool::run(int64_t n, int64_t chunks, void* ctx, Trampoline call) {
  begin_job(n, ctx, call, chunks);
  post_and_wait(chunks);
}

void ThreadPool::run_balanced(int64_t n, void* ctx, Trampoline call) {
  if (n > int64_t{0xffffffff})
    throw std::invalid_argument("ThreadPool::parallel_for_balanced: " + std::to_string(n) +
                                " items are too many");
  begin_job(n, ctx, call, n);
  // Every share is empty (the last job is over), so no thread claims before this is complete.
  const auto threads = static_cast<int64_t>(shares_.size());
  for (int64_t i = 0; i < threads; ++i) {
    const auto [begin, end] = partition(n, threads, i);
    shares_[static_cast<size_t>(i)].range.store(pack_share(begin, end), std::memory_order_release);
  }
  post_and_wait(0);  // no ranges by claim word
}

void ThreadPool::post_and_wait(int64_t chunks) {
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  const int64_t units = job_units_;
  claim_.store(pack_claim(generation, chunks, 0), std::memory_order_release);
  // seq_cst pairs with the workers' increment of sleeping_workers_: either we see a worker
  // that is about to sleep, or it sees the new generation before sleeping.
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();

  work_on(generation, 0);

  auto all_done = [&] { return done_.load(std::memory_order_acquire) == units; };
  if (!spin_until(all_done)) {
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    for (int64_t d; (d = done_.load(std::memory_order_seq_cst)) != units;) done_.wait(d);
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
    if (stopping_.load(std::memory_order_acquire)) return;
    work_on(seen, index);
  }
}

}  // namespace ghostline::engine::cpu
