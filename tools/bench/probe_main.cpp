// ghostline-probe: this machine's memory read bandwidth and fp32 FMA peak, the ceilings that
// the kernels' figures are stated against.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/backend/cpu/cpu_features.h"
#include "tools/bench/machine_limits.h"

int main(int argc, char** argv) {
  double gib = 1.0;
  auto base = ghostline::bench::TimeBase::kWall;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--buffer-gib") == 0 && i + 1 < argc) {
      gib = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--cpu-time") == 0) {
      base = ghostline::bench::TimeBase::kCpu;
    } else {
      std::printf(
          "usage: ghostline-probe [--buffer-gib G] [--cpu-time]\n"
          "Measures read bandwidth (summing a G GiB buffer, default 1) and fp32 FMA peak\n"
          "with 1 and 2 threads and prints them as a markdown table. --cpu-time divides\n"
          "work by the process CPU time per thread instead of wall time (for busy machines).\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  using namespace ghostline;
  const bool avx2 = engine::cpu::isa_supported(engine::cpu::CpuIsa::kAvx2);
  const bool avx512 = engine::cpu::cpu_features().avx512f && avx2;
  std::printf("cpu: %s; time base: %s\n\n", engine::cpu::describe_cpu_features().c_str(),
              base == bench::TimeBase::kCpu ? "CPU time per thread" : "wall clock");
  std::printf("| threads | read GB/s | fp32 FMA GFLOP/s (AVX-512) | fp32 FMA GFLOP/s (AVX2) |\n");
  std::printf("|---|---|---|---|\n");
  auto cell = [](bool available, double value) {
    return available ? std::to_string(static_cast<long>(value + 0.5)) : std::string("n/a");
  };
  for (int t : {1, 2}) {
    const double bw = bench::measure_read_bandwidth(t, base, gib);
    const double f512 = avx512 ? bench::measure_fma_peak(t, true, base) : 0.0;
    const double f256 = avx2 ? bench::measure_fma_peak(t, false, base) : 0.0;
    std::printf("| %d | %.1f | %s | %s |\n", t, bw, cell(avx512, f512).c_str(),
                cell(avx2, f256).c_str());
  }
  return 0;
}
