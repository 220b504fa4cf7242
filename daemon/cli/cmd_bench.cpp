// `ghostline bench -m FILE -p 512 -n 128 -t N`: prompt processing and generation speed in the
// shape of llama-bench's table (pp512 / tg128, tokens per second, mean ± stddev over -r runs),
// so that the two can be compared side by side; plus peak RSS. `--cancel-after MS` also times
// how soon a prompt's batch stops once cancelled MS milliseconds into it. `--speculative`
// measures speculative decoding instead (cmd_bench_speculative.cpp).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include "base/clock.h"
#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "daemon/cli/backend_choice.h"
#include "daemon/cli/model_command.h"
#include "engine/generator.h"
#include "engine/gguf/file_type.h"
#include "engine/gguf/gguf_file.h"

namespace ghostline::daemon {
namespace {

struct Figure {
  double mean = 0, stddev = 0;
};

Figure summarize(const std::vector<double>& samples) {
  Figure f;
  for (double s : samples) f.mean += s;
  f.mean /= double(samples.size());
  if (samples.size() > 1) {
    double sq = 0;
    for (double s : samples) sq += (s - f.mean) * (s - f.mean);
    f.stddev = std::sqrt(sq / double(samples.size() - 1));
  }
  return f;
}

// The file's quantization as llama-bench names it: the preset in general.file_type ("Q4_K_M"
// for a mix of Q4_K, Q6_K and fallback types), else the type of most weight matrices (a "Q4_0"
// file may hold its embedding in another type).
std::string dominant_type(const engine::GgufFile& file) {
  if (const auto ftype = file.get_int("general.file_type"))
    if (const auto name = engine::file_type_name(*ftype)) return std::string(*name);
  std::map<std::string, int> matrices;
  for (const auto& t : file.tensors())
    if (t.shape.size() == 2) ++matrices[std::string(engine::ggml_type_name(t.type))];
  std::string best;
  int most = 0;
  for (const auto& [name, n] : matrices)
    if (n > most) most = n, best = name;
  return best;
}

}  // namespace

int bench_speculative_main(std::span<char* const> args);  // cmd_bench_speculative.cpp

int bench_main(std::span<char* const> args) {
  for (const char* arg : args)
    if (std::string_view(arg) == "--speculative") return bench_speculative_main(args);
  std::string model_path;
  int n_prompt = 512, n_gen = 128, threads = 2, reps = 5, depth = 0;
  double cancel_after_ms = -1;
  ArgParser parser("ghostline bench",
                   "Measure prompt processing (ppN) and generation (tgN) speed like llama-bench.");
  parser.option("-m,--model", "FILE|NAME", "the GGUF model: a file or a pulled name", &model_path);
  parser.option("-p,--n-prompt", "N", "prompt tokens processed in one batch (0: skip)", &n_prompt);
  parser.option("-n,--n-gen", "N", "tokens generated one at a time (0: skip)", &n_gen);
  parser.option("-t,--threads", "N", "compute threads", &threads);
  parser.option("-r,--repetitions", "N", "runs per test (after one warm-up run)", &reps);
  parser.option("-d,--n-depth", "N",
                "tokens of context already in the KV cache before each test (as llama-bench -d)",
                &depth);
  parser.option("--cancel-after", "MS",
                "also cancel each prompt batch MS ms after it starts and time how soon it stops",
                &cancel_after_ms);
  BackendChoice backend = BackendChoice::Auto;
  add_backend_option(parser, backend);
  if (auto rc = parser.parse(args)) return *rc;
  if (model_path.empty() || n_prompt < 0 || n_gen < 0 || depth < 0 || reps < 1 || threads < 1) {
    std::fprintf(stderr, "ghostline bench: need -m FILE, -p/-n/-d >= 0, -r >= 1, -t >= 1\n\n%s",
                 parser.help().c_str());
    return 2;
  }
  const bool time_cancel = cancel_after_ms >= 0;
  if (time_cancel && n_prompt == 0) {
    std::fprintf(stderr, "ghostline bench: --cancel-after cancels the prompt's batch: need -p N\n");
    return 2;
  }

  using namespace engine;
  return report_errors("bench", [&] {
    auto model = load_model_for_command(model_path);
    const ModelConfig& c = model->config();
    const int max_tokens = depth + std::max(n_prompt, n_gen);
    if (max_tokens > model->n_ctx()) {
      std::fprintf(stderr, "ghostline bench: %d tokens exceed the context length %d\n", max_tokens,
                   model->n_ctx());
      return 2;
    }
    // The depth's KV is computed once and shared by every run (copy on extend), plus room for
    // the partial block each run copies.
    auto pool_owner = kv_pool_for(*model, max_tokens + KvBlockPool::kBlockTokens);
    KvBlockPool& pool = *pool_owner;
    Generator gen(
        *model, pool,
        {.threads = threads,
         .backend = command_backend(backend),
         .chunk_tokens = n_prompt > 0 ? n_prompt : 512});

    // Random token ids, as llama-bench uses: the speed does not depend on them.
    std::mt19937 rng(1234);
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (int32_t& id : prompt) id = static_cast<int32_t>(rng() % uint32_t(c.n_vocab));

    KvSequence context;
    if (depth > 0) {
      std::vector<int32_t> ids(static_cast<size_t>(depth));
      for (int32_t& id : ids) id = static_cast<int32_t>(rng() % uint32_t(c.n_vocab));
      gen.forward(context, ids, LogitsRequest::none());
    }
    auto run_pp = [&] {
      KvSequence seq = pool.share(context, depth);
      const auto start = Clock::now();
      gen.forward(seq, prompt);
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      pool.release(seq);
      return n_prompt / s;
    };
    // A batch cancelled cancel_after_ms into it: the milliseconds from the cancel to the return
    // of forward, or a negative figure when it ended before the cancel.
    auto run_cancelled = [&] {
      KvSequence seq = pool.share(context, depth);
      std::atomic<bool> cancel{false};
      Clock::time_point cancelled_at;
      std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cancel_after_ms));
        cancelled_at = Clock::now();
        cancel.store(true);
      });
      const bool finished = gen.forward(seq, prompt, LogitsRequest::last_n_of(1), &cancel);
      const auto returned = Clock::now();
      canceller.join();
      pool.release(seq);
      return finished ? -1.0 : std::chrono::duration<double, std::milli>(returned - cancelled_at)
                                   .count();
    };
    auto run_tg = [&] {
      KvSequence seq = pool.share(context, depth);
      int32_t token = static_cast<int32_t>(rng() % uint32_t(c.n_vocab));
      const auto start = Clock::now();
      for (int i = 0; i < n_gen; ++i) {
        const int32_t step[1] = {token};
        gen.forward(seq, step, LogitsRequest::greedy_last_n_of(1));
        token = gen.greedy_token(0);
      }
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      pool.release(seq);
      return n_gen / s;
    };

    const std::string label =
        c.arch + " " + format_count(model->n_params()) + " " + dominant_type(model->file());
    std::printf("| model | size | params | backend | threads | test | t/s |\n");
    std::printf("| --- | ---: | ---: | --- | ---: | --- | ---: |\n");
    auto row = [&](const std::string& test, const std::vector<double>& samples) {
      const Figure f = summarize(samples);
      std::printf("| %s | %s | %s | %s | %d | %s | %.2f ± %.2f |\n", label.c_str(),
                  format_bytes(model->weight_bytes()).c_str(),
                  format_count(model->n_params()).c_str(), std::string(gen.backend_name()).c_str(),
                  threads, test.c_str(), f.mean, f.stddev);
      std::fflush(stdout);
    };
    // llama-bench's names: "pp512 @ d4096".
    const std::string at_depth = depth > 0 ? " @ d" + std::to_string(depth) : "";
    if (n_prompt > 0) {
      run_pp();  // warm-up
      std::vector<double> samples;
      for (int r = 0; r < reps; ++r) samples.push_back(run_pp());
      row("pp" + std::to_string(n_prompt) + at_depth, samples);
    }
    if (n_gen > 0) {
      run_tg();
      std::vector<double> samples;
      for (int r = 0; r < reps; ++r) samples.push_back(run_tg());
      row("tg" + std::to_string(n_gen) + at_depth, samples);
    }
    if (time_cancel) {
      std::vector<double> stops;
      for (int r = 0; r < reps; ++r)
        if (const double ms = run_cancelled(); ms >= 0) stops.push_back(ms);
      std::printf("\ncancel %.1f ms into pp%d%s: ", cancel_after_ms, n_prompt, at_depth.c_str());
      if (stops.empty()) {
        std::printf("every batch ended before the cancel (%d runs)\n", reps);
      } else {
        const Figure f = summarize(stops);
        std::printf("stopped %.2f ± %.2f ms after it (max %.2f), %zu of %d runs cancelled\n",
                    f.mean, f.stddev, *std::max_element(stops.begin(), stops.end()),
                    stops.size(), reps);
      }
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("\npeak RSS: %s (weights %s, KV budget %s)\n",
                format_bytes(uint64_t(usage.ru_maxrss) * 1024).c_str(),
                format_bytes(model->weight_bytes()).c_str(),
                format_bytes(pool.stats().bytes_total).c_str());
    pool.release(context);
    return 0;
  });
}

}  // namespace ghostline::daemon
