// Speculative decoding speed on the shipped target/draft pair: greedy, CPU, 2 threads, 64
// tokens after each of 20 prompts cut from this repository's source files. Run from the project
// root:
//   build/release/tests/engine_bench --benchmark_filter=Speculative
// Counters: decode tokens/s (tokens after the first over decode time, prefill excluded),
// acceptance of each source, target and draft forward calls per emitted token. The draft KV is
// prefilled with the prompt before timing (what the draft's prefix cache gives) unless the
// benchmark's name says cold.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/generator.h"
#include "engine/speculative.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

constexpr int kThreads = 2;
constexpr int kNewTokens = 64;
constexpr int kPrompts = 20;
constexpr int kPromptTokens = 256;

const char* const kFiles[] = {
    "tools/train/train.py",        "tools/train/model.py",     "tools/train/tokenizer.py",
    "tools/train/gguf_writer.py",  "tools/train/data.py",      "tools/train/eval.py",
    "engine/kv/kv_block_pool.cpp", "engine/tokenizer/bpe.cpp", "engine/generator.cpp",
    "lsp/scheduler.cpp",
};

struct Engine {
  std::unique_ptr<Model> model;
  std::unique_ptr<KvBlockPool> pool;
  std::unique_ptr<Generator> gen;
  explicit Engine(const char* path) {
    model = Model::load(path);
    const ModelConfig& c = model->config();
    pool = std::make_unique<KvBlockPool>(c.n_layer, c.kv_dim(), 32 << 20);
    gen = std::make_unique<Generator>(*model, *pool, GeneratorOptions{.threads = kThreads});
  }
};

struct Setup {
  Engine target{"models/ghostline-code.gguf"};
  Engine draft{"models/ghostline-code-draft.gguf"};
  std::vector<std::vector<int32_t>> prompts;
  Setup() {
    // Two windows per file, ending at 1/3 and 2/3 of it.
    for (const char* file : kFiles) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      const auto ids = target.model->tokenizer().encode(s.str());
      for (int w = 1; w <= 2 && ids.size() > 64; ++w) {
        const size_t end = ids.size() * size_t(w) / 3;
        const size_t begin = end > size_t(kPromptTokens) ? end - size_t(kPromptTokens) : 0;
        prompts.emplace_back(ids.begin() + long(begin), ids.begin() + long(end));
      }
    }
    if (prompts.size() > size_t(kPrompts)) prompts.resize(size_t(kPrompts));
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

// kDraftK4: the draft proposes 4 tokens every round, whatever its acceptance (no cost model).
enum Mode : int64_t { kPlain, kDraft, kNgram, kBoth, kDraftCold, kBothCold, kDraftK4 };

void BM_SpeculativeDecode(benchmark::State& state) {
  Setup& s = setup();
  const auto mode = static_cast<Mode>(state.range(0));
  const bool use_draft = mode != kPlain && mode != kNgram;
  const bool use_ngram = mode == kNgram || mode == kBoth || mode == kBothCold;
  const bool cold = mode == kDraftCold || mode == kBothCold;
  double decode_ms = 0;
  int64_t tokens = 0, after_first = 0;
  SpeculationStats total;
  for (auto _ : state) {
    // Running statistics per iteration, shared by its prompts as the daemon shares them per
    // document language.
    AdaptiveK k_draft = mode == kDraftK4 ? AdaptiveK(4, 4, 4, 0.0)
                                         : AdaptiveK::for_draft(s.target.gen->verify_cost(),
                                                                s.target.gen->draft_cost());
    AdaptiveK k_ngram = AdaptiveK::for_ngram(s.target.gen->verify_cost());
    for (const auto& prompt : s.prompts) {
      KvSequence seq, draft_seq;
      if (use_draft && !cold) {
        state.PauseTiming();
        s.draft.gen->forward(draft_seq, prompt, LogitsRequest::none());
        state.ResumeTiming();
      }
      GenerateResult r;
      const GenerateOptions options{.max_tokens = kNewTokens};
      if (mode == kPlain) {
        r = s.target.gen->generate(seq, prompt, options);
      } else {
        r = generate_speculative(*s.target.gen, seq, prompt, options,
                                 {.draft = use_draft ? s.draft.gen.get() : nullptr,
                                  .draft_seq = &draft_seq,
                                  .ngram = use_ngram,
                                  .k_draft = &k_draft,
                                  .k_ngram = &k_ngram});
      }
      decode_ms += r.decode_ms;
      tokens += int64_t(r.tokens.size());
      after_first += std::max<int64_t>(0, int64_t(r.tokens.size()) - 1);
      total += r.speculation;
      s.target.pool->release(seq);
      s.draft.pool->release(draft_seq);
    }
  }
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  state.counters["decode_tok/s"] = ratio(double(after_first), decode_ms / 1000.0);
  state.counters["tokens"] = double(tokens) / double(state.iterations());
  // Work per token in target decode steps, from the forward costs BM_SpeculativeForwardCost
  // measures, as the backend gives them (each verified token beside the first, a draft step): a
  // load-independent estimate of the speedup (plain = 1).
  const double work =
      total.target_steps +
      s.target.gen->verify_cost().per_token * (total.proposed_draft + total.proposed_ngram) +
      s.target.gen->draft_cost().step * total.draft_steps;
  state.counters["work/tok"] = ratio(work, double(after_first));
  state.counters["target_steps/tok"] = ratio(total.target_steps, double(after_first));
  state.counters["draft_steps/tok"] = ratio(total.draft_steps, double(after_first));
  state.counters["accept_draft"] = ratio(total.accepted_draft, total.proposed_draft);
  state.counters["accept_ngram"] = ratio(total.accepted_ngram, total.proposed_ngram);
  state.counters["proposed_draft/tok"] = ratio(total.proposed_draft, double(after_first));
  state.counters["proposed_ngram/tok"] = ratio(total.proposed_ngram, double(after_first));
}
BENCHMARK(BM_SpeculativeDecode)
    ->ArgName("plain0_draft1_ngram2_both3_draftcold4_bothcold5_draftk4")
    ->DenseRange(kPlain, kDraftK4)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// Forward calls that finish after a cancellation: another thread cancels each generation at a
// pseudo-random moment of its decode (0-20 ms); the work wasted is at most the forward in
// flight, so wasted_steps/cancel should stay at or below 1.
void BM_SpeculativeCancelWaste(benchmark::State& state) {
  Setup& s = setup();
  int cancels = 0, wasted = 0, max_wasted = 0;
  uint64_t rng = 12345;
  for (auto _ : state) {
    AdaptiveK k_draft =
        AdaptiveK::for_draft(s.target.gen->verify_cost(), s.target.gen->draft_cost());
    AdaptiveK k_ngram = AdaptiveK::for_ngram(s.target.gen->verify_cost());
    for (const auto& prompt : s.prompts) {
      std::atomic<bool> cancel{false};
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      const auto delay = std::chrono::microseconds((rng >> 33) % 20000);
      KvSequence seq, draft_seq;
      s.draft.gen->forward(draft_seq, prompt, LogitsRequest::none());
      std::thread canceller;
      const GenerateOptions options{
          .max_tokens = kNewTokens, .cancel = &cancel, .on_token = [&](int32_t) {
            if (!canceller.joinable())  // start the clock when decoding starts
              canceller = std::thread([&cancel, delay] {
                std::this_thread::sleep_for(delay);
                cancel = true;
              });
          }};
      const auto r = generate_speculative(*s.target.gen, seq, prompt, options,
                                          {.draft = s.draft.gen.get(),
                                           .draft_seq = &draft_seq,
                                           .k_draft = &k_draft,
                                           .k_ngram = &k_ngram});
      if (canceller.joinable()) canceller.join();
      if (r.reason == StopReason::Cancelled) {
        ++cancels;
        wasted += r.speculation.steps_after_cancel;
        max_wasted = std::max(max_wasted, r.speculation.steps_after_cancel);
      }
      s.target.pool->release(seq);
      s.draft.pool->release(draft_seq);
    }
  }
  state.counters["cancels"] = cancels;
  state.counters["wasted_steps/cancel"] = cancels > 0 ? double(wasted) / cancels : 0.0;
  state.counters["max_wasted_steps"] = max_wasted;
}
BENCHMARK(BM_SpeculativeCancelWaste)->Unit(benchmark::kMillisecond)->Iterations(5);

// Cost of one forward call over n tokens after a 256-token context: the ratios set the costs
// AdaptiveK uses (a draft step against a target step; the extra cost of verifying more tokens).
void BM_SpeculativeForwardCost(benchmark::State& state) {
  Setup& s = setup();
  Engine& e = state.range(0) == 0 ? s.target : s.draft;
  const int n = static_cast<int>(state.range(1));
  const auto& prompt = s.prompts.front();
  KvSequence seq;
  e.gen->forward(seq, prompt, LogitsRequest::none());
  const int base = seq.n_tokens;
  const std::vector<int32_t> tokens(prompt.begin(), prompt.begin() + n);
  for (auto _ : state) {
    e.gen->forward(seq, tokens, LogitsRequest::last_n_of(n));
    e.pool->truncate(seq, base);
  }
  e.pool->release(seq);
}
BENCHMARK(BM_SpeculativeForwardCost)
    ->ArgNames({"draft", "tokens"})
    ->ArgsProduct({{0, 1}, {1, 2, 4, 8, 32}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ghostline::engine
