// Ceilings of this machine that kernel figures are judged against: read bandwidth from DRAM
// and peak fp32 FMA throughput, each for a given number of threads.
#pragma once

namespace ghostline::bench {

// How elapsed time is read. Wall time is what a user sees; on a machine shared with other work
// the threads are descheduled part of the time, so `kCpu` reads the process's CPU time instead
// and divides it by the thread count: the rate each thread reaches while it runs (spinning
// included), an estimate of the figures on an idle machine.
enum class TimeBase { kWall, kCpu };

class Stopwatch {
 public:
  Stopwatch(TimeBase base, int threads);
  double seconds() const;  // since construction

 private:
  double now() const;
  TimeBase base_;
  int threads_;
  double start_;
};

// GB/s summing a buffer much larger than the caches, `threads` threads each reading a slice.
double measure_read_bandwidth(int threads, TimeBase base, double buffer_gib = 1.0);

// GFLOP/s of independent fp32 FMA chains in registers (2 flops per lane per FMA).
// `avx512`: 512-bit FMAs (only call on a CPU with AVX-512 F), else 256-bit AVX2 FMAs.
double measure_fma_peak(int threads, bool avx512, TimeBase base);

}  // namespace ghostline::bench
