// FMA throughput loops, compiled per instruction set (fma_peak.avx2.cpp, fma_peak.avx512.cpp).
#pragma once

#include <cstdint>

namespace ghostline::bench {

// Runs `iterations` rounds of 12 independent FMA chains; returns a value that depends on all
// of them so the work cannot be removed. Flops: iterations * 12 * lanes * 2.
float fma_chains_avx2(int64_t iterations);    // 8 lanes
float fma_chains_avx512(int64_t iterations);  // 16 lanes

}  // namespace ghostline::bench
