// Token sampling: greedy by default (completions must be stable while typing), or temperature
// with top-k / top-p from a seeded generator.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace ghostline::engine {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy (argmax; ties go to the lowest id)
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // 1: no nucleus cut
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0.0f; }
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options = {});

  bool greedy() const { return options_.greedy(); }
  const SamplerOptions& options() const { return options_; }

  int32_t sample(std::span<const float> logits);

  // The distribution `sample` draws from (temperature, top-k, top-p applied; zeros outside),
  // for speculative rejection sampling. Greedy gives a one-hot vector.
  void distribution(std::span<const float> logits, std::vector<float>& probs) const;
  // Draws an index from a distribution such as `distribution` returns.
  int32_t sample_from(std::span<const float> probs);
  // A uniform number in [0, 1) from the sampler's generator (acceptance tests).
  double uniform();

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> probs_;  // scratch, sized once per vocabulary
};

int32_t argmax(std::span<const float> logits);

}  // namespace ghostline::engine
