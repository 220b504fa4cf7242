// ghostline-matmul-bench: matmul speed at the Qwen2.5-Coder-0.5B shapes for every weight type,
// decode (1 token, memory-bound) and prefill (512 tokens, compute-bound), as fractions of this
// machine's read bandwidth and fp32 FMA peak.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/thread_pool.h"
#include "engine/gguf/quant.h"
#include "tools/bench/machine_limits.h"

namespace ghostline::bench {
namespace {

using engine::GgmlType;
namespace cpu = engine::cpu;
namespace gguf = engine::gguf;

struct Shape {
  const char* name;
  int64_t rows;  // output features
  int64_t cols;  // input features
};

// Per layer of Qwen2.5-Coder-0.5B (embd 896, 14 heads, 2 KV heads of 64, ffn 4864), and the
// tied output matrix over the 151936-token vocabulary.
constexpr Shape kQ{"attn_q/o 896x896", 896, 896};
constexpr Shape kKV{"attn_k/v 896x128", 128, 896};
constexpr Shape kUp{"ffn_gate/up 896x4864", 4864, 896};
constexpr Shape kDown{"ffn_down 4864x896", 896, 4864};
constexpr Shape kOut{"output 896x151936", 151936, 896};
constexpr int kLayers = 24;

uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// Random weights with realistic (finite, normal) values: speed must not depend on NaNs or
// denormals that random bits would produce.
std::unique_ptr<std::byte[]> make_weights(GgmlType type, int64_t rows, int64_t cols,
                                          uint64_t seed) {
  const size_t row_bytes = engine::ggml_row_bytes(type, cols);
  const size_t bytes = row_bytes * rows;
  auto data = std::make_unique<std::byte[]>(bytes);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t v = next(s);
    std::memcpy(data.get() + i, &v, 8);
  }
  uint16_t table[4096];
  for (auto& t : table) {
    const float f = (static_cast<float>(next(s) % 20001) - 10000.0f) * 1e-5f;
    t = type == GgmlType::BF16 ? gguf::fp32_to_bf16(f) : gguf::fp32_to_fp16(f);
  }
  auto put16 = [&](size_t off, uint16_t v) { std::memcpy(data.get() + off, &v, 2); };
  const uint16_t scale = gguf::fp32_to_fp16(0.001f);
  switch (type) {
    case GgmlType::F32:
      for (size_t i = 0; i < bytes; i += 4) {
        const float f = (static_cast<float>(next(s) % 20001) - 10000.0f) * 1e-5f;
        std::memcpy(data.get() + i, &f, 4);
      }
      break;
    case GgmlType::F16:
    case GgmlType::BF16:
      for (size_t i = 0; i < bytes; i += 2) put16(i, table[next(s) % 4096]);
      break;
    case GgmlType::Q8_0:
    case GgmlType::Q4_0: {
      const size_t block = engine::ggml_type_traits(type).block_bytes;
      for (size_t off = 0; off < bytes; off += block) put16(off, scale);
      break;
    }
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const size_t block = engine::ggml_type_traits(type).block_bytes;
      for (size_t off = 0; off < bytes; off += block) {
        put16(off, scale);
        put16(off + 2, scale);
      }
      break;
    }
    case GgmlType::Q6_K:
      for (size_t off = 0; off < bytes; off += sizeof(gguf::BlockQ6_K))
        put16(off + offsetof(gguf::BlockQ6_K, d), scale);
      break;
    default:
      break;
  }
  return data;
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

struct Matrix {
  std::unique_ptr<std::byte[]> data;
  std::unique_ptr<std::byte, FreeDeleter> packed;
  cpu::WeightMatrix w;
};

// A matrix of random weights, packed as the CPU backend packs it where kernel level `isa`
// reads packed weights of its type (the file's rows then are not read).
Matrix make_matrix(GgmlType type, const Shape& shape, uint64_t seed, cpu::CpuIsa isa,
                   cpu::ThreadPool& pool) {
  Matrix m;
  m.data = make_weights(type, shape.rows, shape.cols, seed);
  m.w = {type, shape.rows, shape.cols, m.data.get(), engine::ggml_row_bytes(type, shape.cols)};
  if (cpu::matmul_packs(m.w, isa)) {
    const size_t bytes = (cpu::matmul_packed_bytes(m.w) + 63) / 64 * 64;
    m.packed.reset(static_cast<std::byte*>(std::aligned_alloc(64, bytes)));
    cpu::matmul_pack(m.w, m.packed.get(), pool);
    m.w.packed = m.packed.get();
    m.data.reset();
    m.w.data = nullptr;
  }
  return m;
}

struct Options {
  int threads = 2;
  std::vector<GgmlType> types = {GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                 GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
  cpu::CpuIsa isa = cpu::active_isa();
  int64_t prefill_tokens = 512;
  bool per_shape = true;
  bool model = true;
  bool in_cache = false;  // decode from one copy that stays in cache: the kernel's own speed
  // Tokens of the whole-model decode besides 1 (a verification batch of speculative decoding:
  // the last token and the drafted ones), each timed against a single token.
  std::vector<int64_t> batch_tokens;
  TimeBase time_base = TimeBase::kWall;
};

// Decode of one matrix shape, reading copies that together exceed the caches so the weights
// come from memory as they do in a real forward pass.
void bench_decode_shape(const Options& o, GgmlType type, const Shape& shape, double bw,
                        cpu::ThreadPool& pool) {
  const size_t bytes = engine::ggml_row_bytes(type, shape.cols) * shape.rows;
  const int copies = static_cast<int>(std::clamp<size_t>((768u << 20) / bytes + 1, 2, 512));
  // In cache: one copy read over and over (the output matrix does not fit; it is left out).
  const int distinct = o.in_cache ? 1 : copies;
  if (o.in_cache && bytes > (8u << 20)) return;
  std::vector<Matrix> ms;
  for (int c = 0; c < distinct; ++c) ms.push_back(make_matrix(type, shape, c + 1, o.isa, pool));
  std::vector<float> x(shape.cols, 0.5f), y(shape.rows);
  for (int c = 0; c < copies; ++c)
    cpu::matmul(ms[c % distinct].w, x.data(), 1, y.data(), pool, o.isa);
  std::vector<double> times;
  for (int rep = 0; rep < 3; ++rep) {
    const Stopwatch watch(o.time_base, o.threads);
    for (int c = 0; c < copies; ++c)
      cpu::matmul(ms[c % distinct].w, x.data(), 1, y.data(), pool, o.isa);
    times.push_back(watch.seconds() / copies);
  }
  std::sort(times.begin(), times.end());
  const double t = times[1];
  const double gbs = bytes / t / 1e9;
  std::printf("| %s | %s | decode n=1%s | %.1f us | %.1f GB/s | %.0f%% of bandwidth |\n",
              std::string(engine::ggml_type_name(type)).c_str(), shape.name,
              o.in_cache ? ", in cache" : "", t * 1e6, gbs, 100.0 * gbs / bw);
}

void bench_prefill_shape(const Options& o, GgmlType type, const Shape& shape, double peak,
                         cpu::ThreadPool& pool) {
  auto m = make_matrix(type, shape, 7, o.isa, pool);
  const int64_t n = o.prefill_tokens;
  std::vector<float> x(n * shape.cols), y(n * shape.rows);
  uint64_t s = 99;
  for (auto& v : x) v = (static_cast<float>(next(s) % 2001) - 1000.0f) * 1e-3f;
  cpu::matmul(m.w, x.data(), n, y.data(), pool, o.isa);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const Stopwatch watch(o.time_base, o.threads);
    cpu::matmul(m.w, x.data(), n, y.data(), pool, o.isa);
    best = std::min(best, watch.seconds());
  }
  const double gflops = 2.0 * shape.rows * shape.cols * n / best / 1e9;
  std::printf("| %s | %s | prefill n=%ld | %.2f ms | %.0f GFLOP/s | %.0f%% of FMA peak |\n",
              std::string(engine::ggml_type_name(type)).c_str(), shape.name, static_cast<long>(n),
              best * 1e3, gflops, 100.0 * gflops / peak);
}

// K-quants need rows of whole 256-value super-blocks; 896 is not one (real 0.5B K-quant files
// store those tensors in other types).
bool fits(GgmlType type, const Shape& shape) {
  return shape.cols % engine::ggml_type_traits(type).block_elems == 0;
}

// All matrix products of one decoded token of the 0.5B model (24 layers + output).
void bench_model_decode(const Options& o, GgmlType type, double bw, cpu::ThreadPool& pool) {
  if (!fits(type, kQ)) {
    std::printf("| %s | n/a: 896 columns are not whole blocks of %ld |||||\n",
                std::string(engine::ggml_type_name(type)).c_str(),
                static_cast<long>(engine::ggml_type_traits(type).block_elems));
    return;
  }
  std::vector<Matrix> ms;
  uint64_t seed = 1000;
  for (int l = 0; l < kLayers; ++l)
    for (const Shape* s : {&kQ, &kKV, &kKV, &kQ, &kUp, &kUp, &kDown})
      ms.push_back(make_matrix(type, *s, ++seed, o.isa, pool));
  ms.push_back(make_matrix(type, kOut, ++seed, o.isa, pool));
  double bytes = 0;
  for (auto& m : ms) bytes += double(m.w.row_bytes) * m.w.rows;
  const int64_t max_n =
      o.batch_tokens.empty() ? 1 : *std::max_element(o.batch_tokens.begin(), o.batch_tokens.end());
  std::vector<float> x(size_t(max_n) * 4864, 0.25f), y(size_t(max_n) * kOut.rows);
  auto token = [&](int64_t n) {
    for (auto& m : ms) cpu::matmul(m.w, x.data(), n, y.data(), pool, o.isa);
  };
  token(1);
  std::vector<double> times;
  for (int rep = 0; rep < 15; ++rep) {
    const Stopwatch watch(o.time_base, o.threads);
    token(1);
    times.push_back(watch.seconds());
  }
  // The median says what to expect; the best run is the one least disturbed by other work.
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2], best = times.front();
  std::printf(
      "| %s | %.0f MB | %.2f ms (best %.2f) | %.1f (best %.1f) | %.1f GB/s (best %.1f) | %.0f%% "
      "(best %.0f%%) |\n",
      std::string(engine::ggml_type_name(type)).c_str(), bytes / 1e6, median * 1e3, best * 1e3,
      1.0 / median, 1.0 / best, bytes / median / 1e9, bytes / best / 1e9,
      100.0 * bytes / median / 1e9 / bw, 100.0 * bytes / best / 1e9 / bw);
  // Batches: each repetition times one token and then the batch, so that a drift of the
  // machine's speed moves both; the ratio is the median of the pairs'.
  for (int64_t n : o.batch_tokens) {
    std::vector<double> ratios, batch_ms;
    token(n);
    for (int rep = 0; rep < 15; ++rep) {
      const Stopwatch one(o.time_base, o.threads);
      token(1);
      const double t1 = one.seconds();
      const Stopwatch many(o.time_base, o.threads);
      token(n);
      const double tn = many.seconds();
      ratios.push_back(tn / t1);
      batch_ms.push_back(tn * 1e3);
    }
    std::sort(ratios.begin(), ratios.end());
    std::sort(batch_ms.begin(), batch_ms.end());
    std::printf("|   %ld tokens at once | | %.2f ms | %.2fx one token | | |\n",
                static_cast<long>(n), batch_ms[batch_ms.size() / 2], ratios[ratios.size() / 2]);
  }
}

// The comma-separated items of an option's value.
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  for (size_t p = 0; p <= list.size();) {
    const size_t e = std::min(list.find(',', p), list.size());
    items.push_back(list.substr(p, e - p));
    p = e + 1;
  }
  return items;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--threads" || a == "-t") {
      o.threads = std::atoi(value().c_str());
    } else if (a == "--types") {
      o.types.clear();
      for (const std::string& name : split_list(value())) {
        bool found = false;
        for (uint32_t id = 0; id < 31; ++id) {
          const auto tr = engine::ggml_type_traits(id);
          if (tr && tr->name == name && cpu::matmul_supports(GgmlType(id))) {
            o.types.push_back(GgmlType(id));
            found = true;
          }
        }
        if (!found) {
          std::fprintf(stderr, "unknown or unsupported type '%s'\n", name.c_str());
          return false;
        }
      }
    } else if (a == "--isa") {
      const auto isa = cpu::parse_isa(value());
      if (!isa || !cpu::isa_supported(*isa)) {
        std::fprintf(stderr, "--isa must be scalar, avx2, avxvnni or avx512 and supported here\n");
        return false;
      }
      o.isa = *isa;
    } else if (a == "--prefill-tokens") {
      o.prefill_tokens = std::atol(value().c_str());
    } else if (a == "--cpu-time") {
      o.time_base = TimeBase::kCpu;
    } else if (a == "--model-only") {
      o.per_shape = false;
    } else if (a == "--shapes-only") {
      o.model = false;
    } else if (a == "--batch") {
      o.batch_tokens.clear();
      for (const std::string& item : split_list(value())) {
        const long n = std::atol(item.c_str());
        if (n < 2 || n > 64) {
          std::fprintf(stderr, "--batch takes token counts from 2 to 64, comma-separated\n");
          return false;
        }
        o.batch_tokens.push_back(n);
      }
    } else if (a == "--in-cache") {
      o.in_cache = true;
      o.model = false;
    } else {
      std::printf(
          "usage: ghostline-matmul-bench [-t N] [--types F16,Q8_0,...] [--isa LEVEL]\n"
          "                              [--prefill-tokens N] [--model-only | --shapes-only]\n"
          "                              [--cpu-time] [--in-cache] [--batch 2,5,9]\n"
          "Times matmul at the Qwen2.5-Coder-0.5B shapes: decode (1 token) per shape and for\n"
          "all products of one token of the whole model, prefill (N tokens, default 512) per\n"
          "layer shape; reports GB/s and GFLOP/s as fractions of the measured read bandwidth\n"
          "and fp32 FMA peak at the same thread count (default 2 threads, best kernel level).\n"
          "--cpu-time measures everything (ceilings too) in process CPU time per thread, for\n"
          "machines shared with other work. --in-cache times decode per shape on one copy of\n"
          "the matrix that stays in cache (no output shape): what the kernel computes when\n"
          "memory is not the limit; well above the read ceiling means decode is memory bound.\n"
          "--batch N,... also times all products of the whole model for N tokens at once (a\n"
          "speculative verification batch) against one token, in pairs.\n");
      return false;
    }
  }
  return o.threads >= 1 && o.prefill_tokens >= 1;
}

}  // namespace
}  // namespace ghostline::bench

int main(int argc, char** argv) {
  using namespace ghostline;
  bench::Options o;
  if (!bench::parse(argc, argv, o)) return argc > 1 && std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  // The FMA ceiling of the level the kernels run at: 512-bit vectors only at the AVX-512 level.
  const bool avx512 = o.isa == engine::cpu::CpuIsa::kAvx512;
  const double bw = bench::measure_read_bandwidth(o.threads, o.time_base);
  const double peak = o.isa != engine::cpu::CpuIsa::kScalar
                          ? bench::measure_fma_peak(o.threads, avx512, o.time_base)
                          : 1.0;
  std::printf(
      "threads %d, kernels %s, time base %s; ceilings: read %.1f GB/s, fp32 FMA %.0f GFLOP/s\n\n",
      o.threads, std::string(engine::cpu::isa_name(o.isa)).c_str(),
      o.time_base == bench::TimeBase::kCpu ? "CPU time per thread" : "wall clock", bw, peak);
  engine::cpu::ThreadPool pool(o.threads);
  if (o.model) {
    std::printf("Decode, all matrix products of one token of the 0.5B model:\n\n");
    std::printf(
        "| type | weights | time/token | tokens/s | GB/s | of bandwidth "
        "|\n|---|---|---|---|---|---|\n");
    for (auto type : o.types) bench::bench_model_decode(o, type, bw, pool);
    std::printf("\n");
  }
  if (o.per_shape) {
    std::printf("| type | shape | case | time | rate | fraction |\n|---|---|---|---|---|---|\n");
    for (auto type : o.types) {
      for (const auto* s : {&bench::kQ, &bench::kKV, &bench::kUp, &bench::kDown, &bench::kOut})
        if (bench::fits(type, *s)) bench::bench_decode_shape(o, type, *s, bw, pool);
      if (o.in_cache) continue;
      for (const auto* s : {&bench::kQ, &bench::kKV, &bench::kUp, &bench::kDown})
        if (bench::fits(type, *s)) bench::bench_prefill_shape(o, type, *s, peak, pool);
    }
  }
  return 0;
}
