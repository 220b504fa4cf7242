// Times attn_block, the CPU backend's attention kernel, on one thread: nanoseconds per key for
// QUERIES query heads sharing a KV head of dimension DIM, over stretches of kAttnKeys keys laid
// out as the KV pool lays them (per panel, keys transposed then values).
//
//   ghostline-attn-probe [--level L] [--queries N] [--dim D] [--stretches S] [--no-ahead]
//
// One stretch stays in cache; many (16 KiB each at d = 64: 4,096 of them are 64 MiB) are read
// from memory one after the other, each call asking for the next stretch as the backend does
// (--no-ahead: not). Prints the best of 5 rounds, as the machine's load moves the others.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/vec_ops.h"
#include "engine/gguf/quant.h"

using namespace ghostline::engine;

int main(int argc, char** argv) {
  std::string level;
  int64_t queries = 7, dim = 64, stretches = 1;
  bool ahead = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ghostline-attn-probe: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--level") {
      level = value();
    } else if (a == "--queries") {
      queries = std::atoll(value());
    } else if (a == "--dim") {
      dim = std::atoll(value());
    } else if (a == "--stretches") {
      stretches = std::atoll(value());
    } else if (a == "--no-ahead") {
      ahead = false;
    } else {
      std::fprintf(stderr,
                   "usage: ghostline-attn-probe [--level L] [--queries N] [--dim D] "
                   "[--stretches S] [--no-ahead]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  const auto isa = level.empty() ? std::optional(cpu::active_isa()) : cpu::parse_isa(level);
  if (!isa || !cpu::isa_supported(*isa)) {
    std::fprintf(stderr, "ghostline-attn-probe: kernel level %s is not supported here\n",
                 level.c_str());
    return 2;
  }
  if (queries < 1 || dim < 1 || dim % 16 != 0 || stretches < 1) {
    std::fprintf(stderr, "ghostline-attn-probe: --queries and --stretches must be positive, "
                         "--dim a multiple of 16\n");
    return 2;
  }
  constexpr int64_t kPanels = cpu::kAttnKeys / cpu::kAttnRows;
  const int64_t run = 2 * cpu::kAttnRows * dim;  // a panel's keys and values
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> kv(static_cast<size_t>(stretches * kPanels * run));
  for (uint16_t& x : kv) x = gguf::fp32_to_fp16(u(rng));
  std::vector<float> q(static_cast<size_t>(queries * dim)), m(static_cast<size_t>(queries)),
      l(static_cast<size_t>(queries)), out(static_cast<size_t>(queries * dim));
  for (float& x : q) x = u(rng);
  const cpu::VecOps& ops = cpu::vec_ops(*isa);
  // Enough calls for about 2 GiB of keys and values read, at least 20,000.
  const int64_t calls = std::max<int64_t>(20000, (int64_t{2} << 30) / (kPanels * run * 2));
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  double best = INFINITY;
  for (int round = 0; round < 5; ++round) {
    std::fill(m.begin(), m.end(), -INFINITY);
    std::fill(l.begin(), l.end(), 0.0f);
    std::fill(out.begin(), out.end(), 0.0f);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < calls; ++c) {
      const uint16_t* base = kv.data() + (c % stretches) * kPanels * run;
      const uint16_t* next = kv.data() + ((c + 1) % stretches) * kPanels * run;
      const uint16_t *kt[kPanels], *v[kPanels], *runs[kPanels];
      for (int64_t b = 0; b < kPanels; ++b) {
        kt[b] = base + b * run;
        v[b] = kt[b] + cpu::kAttnRows * dim;
        runs[b] = next + b * run;
      }
      ops.attn_block(kt, v, cpu::kAttnKeys, dim, q.data(), queries, scale, m.data(), l.data(),
                     out.data(), runs, ahead && stretches > 1 ? kPanels : 0);
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, ns / static_cast<double>(calls * cpu::kAttnKeys));
  }
  std::printf("%s, %lld query heads, d = %lld, %lld stretch(es) of %lld keys%s: %.2f ns a key\n",
              std::string(cpu::isa_name(*isa)).c_str(), static_cast<long long>(queries),
              static_cast<long long>(dim), static_cast<long long>(stretches),
              static_cast<long long>(cpu::kAttnKeys),
              stretches > 1 ? (ahead ? ", asking ahead" : ", not asking ahead") : "", best);
  return out[0] == out[0] ? 0 : 1;  // a NaN would mean a broken kernel
}
