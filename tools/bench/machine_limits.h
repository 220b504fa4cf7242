// Ceilings of this machine that kernel figures are judged against: read bandwidth from DRAM
// and peak fp32 FMA throughput, each for a given number of threads.
#pragma once

namespace ghostline::bench {

// GB/s summing a buffer much larger than the caches, `threads` threads each reading a slice.
double measure_read_bandwidth(int threads, double buffer_gib = 1.0);

// GFLOP/s of independent fp32 FMA chains in registers (2 flops per lane per FMA).
// `avx512`: 512-bit FMAs (only call on a CPU with AVX-512 F), else 256-bit AVX2 FMAs.
double measure_fma_peak(int threads, bool avx512);

}  // namespace ghostline::bench
