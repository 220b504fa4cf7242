// `ghostline bench --speculative -m TARGET [--draft DRAFT] [FILE...]`: what speculative decoding
// gains on this machine. Decodes windows of real code (the files given, or this repository's
// sources) greedily in four modes (plain, n-gram lookup, the draft model, both), which take
// turns on each prompt, and prints the decode speed of each beside the plain loop's, with the
// acceptance of each source; then what a forward of 1 + k tokens costs against one decode step,
// for k = 0..16, on the target (and the draft: its step against the target's). Greedy output
// must be the same in every mode; a difference is reported and makes the command fail.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "daemon/cli/arg_parser.h"
#include "daemon/cli/backend_choice.h"
#include "daemon/cli/model_command.h"
#include "engine/generator.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/model.h"
#include "engine/speculative.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {
namespace {

using namespace engine;

// Sources of this repository, used when no file is given (run from the checkout's root).
const char* kDefaultFiles[] = {
    "engine/generator.cpp",        "engine/speculative.cpp",  "lsp/scheduler.cpp",
    "engine/kv/kv_block_pool.cpp", "tools/train/train.py",    "tools/train/model.py",
    "tools/replay/synthesize.py",  "daemon/cli/cmd_bench.cpp",
};

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Engine {
  std::unique_ptr<Model> model;
  std::unique_ptr<KvBlockPool> pool;
  std::unique_ptr<Generator> gen;
};

// `share`: the engine whose compute threads this one runs on, as the daemon runs a draft.
Engine load(const std::string& path, int tokens, int threads, BackendKind backend,
            const Engine* share = nullptr) {
  Engine e;
  e.model = load_model_for_command(path);
  e.pool = kv_pool_for(*e.model, tokens);
  e.gen = std::make_unique<Generator>(
      *e.model, *e.pool,
      GeneratorOptions{.threads = threads,
                       .backend = backend,
                       .chunk_tokens = 256,
                       .share_threads_with = share ? share->gen.get() : nullptr});
  return e;
}

enum class Mode { Plain, Ngram, Draft, Both };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Plain: return "plain";
    case Mode::Ngram: return "n-gram";
    case Mode::Draft: return "draft";
    case Mode::Both: return "n-gram + draft";
  }
  return "?";
}

struct ModeResult {
  int tokens = 0;       // decoded after the first (the first comes from the prefill)
  double decode_ms = 0;
  SpeculationStats stats;
  std::vector<std::vector<int32_t>> outputs;
};

std::string percent(int part, int whole) {
  if (whole <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%% of %d", 100.0 * part / whole, whole);
  return buf;
}

// Time in ms of a forward of `n` tokens appended to `context` tokens of KV (the KV is truncated
// back after it).
double forward_ms(Engine& e, KvSequence& context, int n) {
  const int base = context.n_tokens;
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) tokens[size_t(i)] = (7 + 31 * i) % e.model->config().n_vocab;
  const auto start = Clock::now();
  e.gen->forward(context, tokens, LogitsRequest::last_n_of(n));
  const double ms = ms_since(start);
  e.pool->truncate(context, base);
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

int bench_speculative_main(std::span<char* const> args) {
  std::string target_path, draft_path;
  std::vector<std::string> files;
  int n_gen = 64, threads = 2, windows = 3, prompt_len = 256, reps = 5, passes = 1;
  bool speculative = false;
  ArgParser parser("ghostline bench --speculative",
                   "Measure what speculative decoding gains: decode speed plain, with n-gram "
                   "lookup, with the draft, with both, and the cost of verifying k tokens.");
  parser.flag("--speculative", "this benchmark (instead of pp/tg)", &speculative);
  parser.option("-m,--model", "FILE|NAME", "the target model", &target_path);
  parser.option("--draft", "FILE|NAME", "draft model (same vocabulary); none: n-gram only",
                &draft_path);
  parser.option("-n,--n-gen", "N", "tokens generated per prompt", &n_gen);
  parser.option("-t,--threads", "N", "compute threads", &threads);
  parser.option("-w,--windows", "N", "prompts taken from each file (windows ending at evenly "
                "spread points)", &windows);
  parser.option("-p,--prompt-tokens", "N", "longest prompt, in tokens", &prompt_len);
  parser.option("--passes", "N", "times each prompt is decoded in each mode (the modes take "
                "turns on each prompt)", &passes);
  parser.option("-r,--repetitions", "N", "runs over every batch size in the cost table (the "
                "median is shown)", &reps);
  BackendChoice backend = BackendChoice::Auto;
  add_backend_option(parser, backend);
  parser.rest("FILE", "text files to take prompts from (default: sources of this repository)",
              &files);
  if (auto rc = parser.parse(args)) return *rc;
  if (target_path.empty() || n_gen < 1 || threads < 1 || windows < 1 || prompt_len < 16 ||
      reps < 1 || passes < 1) {
    std::fprintf(stderr,
                 "ghostline bench --speculative: need -m FILE, -n >= 1, -t >= 1, -w >= 1, "
                 "-p >= 16, -r >= 1, --passes >= 1\n\n%s",
                 parser.help().c_str());
    return 2;
  }
  if (files.empty())
    for (const char* f : kDefaultFiles)
      if (std::filesystem::exists(f)) files.emplace_back(f);
  if (files.empty()) {
    std::fprintf(stderr, "ghostline bench --speculative: no files to take prompts from (give some, "
                         "or run from the repository's root)\n");
    return 2;
  }

  return report_errors("bench", [&] {
    const BackendKind kind = command_backend(backend);
    const int kv_tokens = prompt_len + n_gen + 64;
    Engine target = load(target_path, kv_tokens, threads, kind);
    std::optional<Engine> draft;
    if (!draft_path.empty()) draft = load(draft_path, kv_tokens, threads, kind, &target);
    const Tokenizer& tok = target.model->tokenizer();

    std::vector<std::vector<int32_t>> prompts;
    for (const auto& f : files) {
      const auto text = read_text(f);
      if (!text) throw std::runtime_error("cannot read " + f);
      const auto ids = tok.encode(*text);
      for (int w = 1; w <= windows; ++w) {
        const size_t end = ids.size() * size_t(w) / size_t(windows + 1);
        const size_t begin = end > size_t(prompt_len) ? end - size_t(prompt_len) : 0;
        if (end - begin >= 16)
          prompts.emplace_back(ids.begin() + long(begin), ids.begin() + long(end));
      }
    }
    if (prompts.empty()) throw std::runtime_error("the files give no prompt of 16 tokens or more");

    std::printf("target: %s (%s, %s)\n", target_path.c_str(),
                format_count(target.model->n_params()).c_str(),
                format_bytes(target.model->weight_bytes()).c_str());
    if (draft)
      std::printf("draft:  %s (%s, %s)\n", draft_path.c_str(),
                  format_count(draft->model->n_params()).c_str(),
                  format_bytes(draft->model->weight_bytes()).c_str());
    std::printf("%zu prompts of up to %d tokens from %zu files, %d tokens each, greedy, %d "
                "threads, backend %s, %d pass%s, modes in turn on each prompt\n\n",
                prompts.size(), prompt_len, files.size(), n_gen, threads,
                std::string(target.gen->backend_name()).c_str(), passes, passes == 1 ? "" : "es");

    std::vector<Mode> modes = {Mode::Plain, Mode::Ngram};
    if (draft) modes.insert(modes.end(), {Mode::Draft, Mode::Both});
    // One running state per mode, as one document's in the daemon; costs measured as it runs.
    struct ModeState {
      AdaptiveK k_draft, k_ngram;
      SpeculationCosts costs;
    };
    const VerifyCost cost = target.gen->verify_cost();
    const DraftCost draft_cost = target.gen->draft_cost();
    std::vector<ModeState> states;
    for (size_t m = 0; m < modes.size(); ++m)
      states.push_back({AdaptiveK::for_draft(cost, draft_cost), AdaptiveK::for_ngram(cost),
                        SpeculationCosts(cost, draft_cost)});
    std::vector<ModeResult> results(modes.size());
    auto decode = [&](Mode mode, ModeState& state, const std::vector<int32_t>& prompt) {
      KvSequence seq, draft_seq;
      const bool use_draft = mode == Mode::Draft || mode == Mode::Both;
      // The draft's prefix cache holds the prompt in the daemon: give it the same start.
      if (use_draft)
        draft->gen->forward(draft_seq, std::span(prompt).first(prompt.size() - 1),
                            LogitsRequest::none());
      const GenerateOptions options{.max_tokens = n_gen};
      GenerateResult r;
      if (mode == Mode::Plain) {
        r = target.gen->generate(seq, prompt, options);
      } else {
        const Speculation spec{.draft = use_draft ? draft->gen.get() : nullptr,
                               .draft_seq = use_draft ? &draft_seq : nullptr,
                               .ngram = mode != Mode::Draft,
                               .k_draft = &state.k_draft,
                               .k_ngram = &state.k_ngram,
                               .costs = &state.costs};
        r = generate_speculative(*target.gen, seq, prompt, options, spec);
      }
      target.pool->release(seq);
      if (draft) draft->pool->release(draft_seq);
      return r;
    };
    // The modes take turns on each prompt, so that what else runs on the machine weighs on all
    // of them alike; the first prompt runs once in each mode untimed (warm-up).
    for (size_t m = 0; m < modes.size(); ++m) decode(modes[m], states[m], prompts[0]);
    for (int pass = 0; pass < passes; ++pass)
      for (const auto& prompt : prompts)
        for (size_t m = 0; m < modes.size(); ++m) {
          GenerateResult r = decode(modes[m], states[m], prompt);
          ModeResult& res = results[m];
          res.tokens += std::max(0, static_cast<int>(r.tokens.size()) - 1);
          res.decode_ms += r.decode_ms;
          res.stats += r.speculation;
          if (pass == 0) res.outputs.push_back(std::move(r.tokens));
        }

    const double plain_tps = results[0].tokens / (results[0].decode_ms / 1000.0);
    std::printf("| mode | decode t/s | vs plain | target forwards | draft forwards | n-gram "
                "accepted | draft accepted |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    bool identical = true;
    for (size_t m = 0; m < modes.size(); ++m) {
      const ModeResult& res = results[m];
      const double tps = res.tokens / (res.decode_ms / 1000.0);
      std::printf("| %s | %.1f | %.2fx | %d | %d | %s | %s |\n", mode_name(modes[m]), tps,
                  tps / plain_tps, res.stats.target_steps, res.stats.draft_steps,
                  percent(res.stats.accepted_ngram, res.stats.proposed_ngram).c_str(),
                  percent(res.stats.accepted_draft, res.stats.proposed_draft).c_str());
      if (res.outputs != results[0].outputs) identical = false;
    }
    std::printf("\ngreedy output identical in every mode: %s\n", identical ? "yes" : "NO");

    // Cost of verification: a forward of 1 + k tokens after a context of prompt_len tokens. Each
    // run times every batch size once, in turn, so that a load that comes and goes weighs on
    // all of them alike, and the median of the runs is kept.
    auto cost_table = [&](Engine& e, const char* name, double target_step_ms) {
      constexpr int kSizes = SpeculationCosts::kMaxTokens;  // k = 0..16
      KvSequence context;
      e.gen->forward(context, prompts.front(), LogitsRequest::none());
      std::vector<std::vector<double>> runs(kSizes);
      for (int k = 0; k < kSizes; ++k) forward_ms(e, context, k + 1);  // warm-up
      for (int r = 0; r < reps; ++r)
        for (int k = 0; k < kSizes; ++k) runs[size_t(k)].push_back(forward_ms(e, context, k + 1));
      const double step = median(runs[0]);
      std::printf("\n%s: forward of 1 + k tokens after %d tokens of context (median of %d runs, "
                  "the sizes in turn)\n",
                  name, context.n_tokens, reps);
      std::printf("| k | ms | x one step |\n| ---: | ---: | ---: |\n");
      for (int k = 0; k < kSizes; ++k) {
        const double ms = median(runs[size_t(k)]);
        std::printf("| %d | %.3f | %.2f |\n", k, ms, ms / step);
      }
      if (target_step_ms > 0)
        std::printf("one %s step costs %.2f target steps\n", name, step / target_step_ms);
      e.pool->release(context);
      return step;
    };
    const double target_step = cost_table(target, "target", 0);
    if (draft) cost_table(*draft, "draft", target_step);
    std::printf("(batches of up to %d tokens give the logits of single steps exactly)\n",
                target.gen->verify_cost().max_tokens);
    return identical ? 0 : 1;
  });
}

}  // namespace ghostline::daemon
