#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ghostline::engine {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("argmax of empty logits");
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

void Sampler::distribution(std::span<const float> logits, std::vector<float>& probs) const {
  const size_t n = logits.size();
  probs.assign(n, 0.0f);
  if (n == 0) return;
  if (greedy()) {
    probs[static_cast<size_t>(argmax(logits))] = 1.0f;
    return;
  }
  // Candidates in descending logit order (ties by id, so the result is deterministic); only
  // the first top_k need sorting when top_k is set.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  size_t keep = n;
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < n) {
    keep = static_cast<size_t>(options_.top_k);
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), by_logit);
  } else {
    std::sort(order.begin(), order.end(), by_logit);
  }
  const double inv_t = 1.0 / options_.temperature;
  const double max_logit = logits[order[0]];
  std::vector<double> p(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[order[i]] - max_logit) * inv_t);
    sum += p[i];
  }
  // Nucleus: the smallest prefix whose mass reaches top_p.
  if (options_.top_p < 1.0f) {
    double cum = 0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cum += p[i] / sum;
      if (cum >= options_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  for (size_t i = 0; i < keep; ++i) probs[order[i]] = static_cast<float>(p[i] / sum);
}

int32_t Sampler::sample_from(std::span<const float> probs) {
  double total = 0;
  for (float p : probs) total += p;
  double r = uniform() * total;
  int32_t last_nonzero = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0) continue;
    last_nonzero = static_cast<int32_t>(i);
    r -= probs[i];
    if (r < 0) return last_nonzero;
  }
  if (last_nonzero < 0) throw std::invalid_argument("sample_from: distribution has no mass");
  return last_nonzero;  // rounding left r slightly positive
}

double Sampler::uniform() {
  // 53 random bits -> [0, 1), identical on every platform (unlike std::uniform_real_distribution).
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (greedy()) return argmax(logits);
  distribution(logits, probs_);
  return sample_from(probs_);
}

}  // namespace ghostline::engine
