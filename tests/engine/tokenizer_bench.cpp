// Tokenizer and GGUF reader speed. Run from the project root:
//   build/release/tests/engine_bench --benchmark_filter=Tokenizer
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

const char* const kVocabs[] = {"deepseek-coder", "starcoder", "gpt-2", "llama-spm"};

std::string vocab_path(int64_t i) {
  return std::string("../shared/data/tokenizer/") + kVocabs[i] + ".gguf";
}

// About 100 KB of real C++: this project's own sources, repeated as needed.
const std::string& source_100k() {
  static const std::string text = [] {
    std::string all;
    for (const char* dir : {"engine", "tests", "daemon"})
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.path().extension() == ".cpp" || e.path().extension() == ".h") {
          std::ifstream in(e.path());
          all.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
    std::string out;
    while (out.size() < 100 * 1024) out += all;
    out.resize(100 * 1024);
    // Do not end inside a multi-byte character.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    return out;
  }();
  return text;
}

void BM_TokenizerEncode100KB(benchmark::State& state) {
  auto file = GgufFile::open(vocab_path(state.range(0)));
  auto tok = Tokenizer::from_gguf(*file);
  const std::string& text = source_100k();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok->encode(text);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetLabel(kVocabs[state.range(0)]);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_TokenizerEncode100KB)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

void BM_TokenizerDecode100KB(benchmark::State& state) {
  auto file = GgufFile::open(vocab_path(state.range(0)));
  auto tok = Tokenizer::from_gguf(*file);
  auto ids = tok->encode(source_100k());
  for (auto _ : state) benchmark::DoNotOptimize(tok->decode(ids).size());
  state.SetLabel(kVocabs[state.range(0)]);
}
BENCHMARK(BM_TokenizerDecode100KB)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

// A short segment, as the prompt assembler encodes on a keystroke.
void BM_TokenizerEncodeLine(benchmark::State& state) {
  auto file = GgufFile::open(vocab_path(state.range(0)));
  auto tok = Tokenizer::from_gguf(*file);
  const std::string line =
      "    for (size_t i = 0; i < tensors.size(); ++i) total += tensors[i].bytes;\n";
  for (auto _ : state) benchmark::DoNotOptimize(tok->encode(line).size());
  state.SetLabel(kVocabs[state.range(0)]);
}
BENCHMARK(BM_TokenizerEncodeLine)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_GgufOpen(benchmark::State& state) {
  const std::string path = vocab_path(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(GgufFile::open(path)->metadata().size());
  state.SetLabel(kVocabs[state.range(0)]);
}
BENCHMARK(BM_GgufOpen)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

void BM_TokenizerLoad(benchmark::State& state) {
  auto file = GgufFile::open(vocab_path(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(Tokenizer::from_gguf(*file)->n_vocab());
  state.SetLabel(kVocabs[state.range(0)]);
}
BENCHMARK(BM_TokenizerLoad)->DenseRange(0, 3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ghostline::engine

BENCHMARK_MAIN();
