// REPEAT decode products (one token) of a random matrix at a chosen kernel level: a program to
// count instructions under an emulator (tools/bench/kernel-insns), which takes differences
// between runs (repeats, row counts) so that everything but the rows' blocks cancels out.
// Prints nothing on success.
//
//   ghostline-kernel-probe TYPE LEVEL ROWS COLS REPEAT [TOKENS [steps]]   e.g. Q4_K avx2 256 4096 3
//
// TOKENS (default 1) are computed as a prompt's batch (from kMatmulBatchMinTokens on, the
// prefill path), or with `steps` as a speculative verification's single steps (the decode
// kernels, up to kMatmulDecodeMaxTokens).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/thread_pool.h"
#include "engine/gguf/ggml_type.h"
#include "engine/gguf/quantize.h"

using namespace ghostline::engine;

int main(int argc, char** argv) {
  const bool steps = argc == 8 && std::strcmp(argv[7], "steps") == 0;
  if (argc < 6 || argc > 8 || (argc == 8 && !steps)) {
    std::fprintf(stderr,
                 "usage: ghostline-kernel-probe TYPE LEVEL ROWS COLS REPEAT [TOKENS [steps]]\n");
    return 2;
  }
  std::optional<GgmlType> type;
  for (uint32_t id = 0; id < 64 && !type; ++id)
    if (auto t = ggml_type_traits(id); t && t->name == argv[1])
      type = static_cast<GgmlType>(id);
  const auto isa = cpu::parse_isa(argv[2]);
  const int64_t rows = std::atoll(argv[3]), cols = std::atoll(argv[4]);
  const int repeat = std::atoi(argv[5]);
  const int64_t tokens = argc >= 7 ? std::atoll(argv[6]) : 1;
  if (!type || !gguf::can_quantize(*type)) {
    std::fprintf(stderr, "ghostline-kernel-probe: no such weight type: %s\n", argv[1]);
    return 2;
  }
  if (!isa || !cpu::isa_supported(*isa)) {
    std::fprintf(stderr, "ghostline-kernel-probe: kernel level %s is not supported here\n",
                 argv[2]);
    return 2;
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(cols)), x(static_cast<size_t>(cols * tokens)),
      y(static_cast<size_t>(rows * tokens));
  const size_t row_bytes = ggml_row_bytes(*type, cols);
  std::vector<std::byte> w(row_bytes * static_cast<size_t>(rows));
  // One random row, copied: the kernels do the same work whatever the values, and the set-up
  // stays small beside the products being counted.
  for (float& v : row) v = d(rng);
  gguf::quantize_row(*type, row.data(), w.data(), cols);
  for (int64_t r = 1; r < rows; ++r)
    std::memcpy(w.data() + static_cast<size_t>(r) * row_bytes, w.data(), row_bytes);
  for (float& v : x) v = d(rng);
  cpu::ThreadPool pool(1);
  cpu::WeightMatrix m{.type = *type, .rows = rows, .cols = cols, .data = w.data(),
                      .row_bytes = row_bytes};
  // Packed where the level reads packed weights, as the CPU backend runs it.
  std::vector<std::byte> packed;
  if (cpu::matmul_packs(m, *isa)) {
    packed.resize(cpu::matmul_packed_bytes(m) + 64);
    auto* at = reinterpret_cast<std::byte*>(
        (reinterpret_cast<uintptr_t>(packed.data()) + 63) & ~uintptr_t{63});
    cpu::matmul_pack(m, at, pool);
    m.packed = at;
  }
  for (int i = 0; i < repeat; ++i)
    cpu::matmul(m, x.data(), tokens, y.data(), pool, *isa,
                steps ? cpu::Tokens::kSteps : cpu::Tokens::kBatch);
  return y[0] == y[0] ? 0 : 1;  // a NaN would mean a broken kernel
}
