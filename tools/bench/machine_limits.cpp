#include "tools/bench/machine_limits.h"

#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

#include "engine/backend/cpu/thread_pool.h"
#include "tools/bench/fma_kernels.h"

namespace ghostline::bench {
namespace {

// Sums a buffer with several independent chains and a software prefetch 2 KB ahead, the best
// a reader can do (the decode kernels prefetch too): the ceiling must not be below them.
uint64_t sum_words(const uint64_t* p, int64_t n) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __builtin_prefetch(p + i + 256);
    s0 += p[i];
    s1 += p[i + 1];
    s2 += p[i + 2];
    s3 += p[i + 3];
    s4 += p[i + 4];
    s5 += p[i + 5];
    s6 += p[i + 6];
    s7 += p[i + 7];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

}  // namespace

Stopwatch::Stopwatch(TimeBase base, int threads) : base_(base), threads_(threads) {
  start_ = now();
}

double Stopwatch::now() const {
  if (base_ == TimeBase::kCpu) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (ts.tv_sec + ts.tv_nsec * 1e-9) / threads_;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Stopwatch::seconds() const {
  return now() - start_;
}

double measure_read_bandwidth(int threads, TimeBase base, double buffer_gib) {
  const int64_t words = static_cast<int64_t>(buffer_gib * (1ull << 30)) / 8;
  auto buffer = std::make_unique<uint64_t[]>(words);
  for (int64_t i = 0; i < words; ++i) buffer[i] = static_cast<uint64_t>(i) * 2654435761u;
  engine::cpu::ThreadPool pool(threads);
  volatile uint64_t sink = 0;
  double best = 0.0;
  for (int round = 0; round < 5; ++round) {
    const Stopwatch watch(base, threads);
    pool.parallel_for(threads, [&](int64_t begin, int64_t end, int) {
      for (int64_t part = begin; part < end; ++part) {
        const auto [w0, w1] = engine::cpu::ThreadPool::partition(words, threads, int(part));
        sink = sink + sum_words(buffer.get() + w0, w1 - w0);
      }
    });
    const double gbs = words * 8.0 / watch.seconds() / 1e9;
    if (gbs > best) best = gbs;
  }
  return best;
}

double measure_fma_peak(int threads, bool avx512, TimeBase base) {
  constexpr int64_t kIterations = 20'000'000;
  engine::cpu::ThreadPool pool(threads);
  volatile float sink = 0;
  double best = 0.0;
  for (int round = 0; round < 3; ++round) {
    const Stopwatch watch(base, threads);
    pool.parallel_for(threads, [&](int64_t, int64_t, int) {
      sink = sink + (avx512 ? fma_chains_avx512(kIterations) : fma_chains_avx2(kIterations));
    });
    const double flops = double(threads) * kIterations * 12 * (avx512 ? 16 : 8) * 2;
    const double gflops = flops / watch.seconds() / 1e9;
    if (gflops > best) best = gflops;
  }
  return best;
}

}  // namespace ghostline::bench
