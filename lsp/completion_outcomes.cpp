#include "lsp/completion_outcomes.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ghostline::lsp {

namespace {

constexpr const char* kFateNames[] = {"typedOver", "dismissed", "acceptedPartially", "accepted"};
// Latencies kept per language and model for the percentiles: the most recent ones.
constexpr size_t kMaxLatencies = 10000;

// The nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  const size_t i =
      static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[i];
}

}  // namespace

std::optional<CompletionFate> parse_completion_fate(std::string_view name) {
  for (int i = 0; i < 4; ++i)
    if (name == kFateNames[i]) return static_cast<CompletionFate>(i);
  return std::nullopt;
}

const char* completion_fate_name(CompletionFate fate) {
  return kFateNames[static_cast<int>(fate)];
}

uint64_t CompletionOutcomes::issue(IssuedCompletion completion) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_id_++;
  issued_.emplace(id, Issued{.completion = std::move(completion)});
  issue_order_.push_back(id);
  while (issue_order_.size() > remembered_) {
    issued_.erase(issue_order_.front());
    issue_order_.pop_front();
  }
  return id;
}

bool CompletionOutcomes::report(uint64_t id, CompletionFate fate, size_t accepted_chars) {
  std::lock_guard lock(mutex_);
  auto it = issued_.find(id);
  if (it == issued_.end()) return false;
  Issued& c = it->second;
  const size_t length = c.completion.chars;
  if (fate == CompletionFate::Accepted && accepted_chars == 0) accepted_chars = length;
  if (fate == CompletionFate::Dismissed || fate == CompletionFate::TypedOver) accepted_chars = 0;
  accepted_chars = std::min(accepted_chars, length);

  Bucket& bucket = buckets_[{c.completion.language, c.completion.model}];
  const auto accepted = [](std::optional<CompletionFate> f) {
    return f && *f >= CompletionFate::AcceptedPartially;
  };
  const bool was_accepted = accepted(c.fate);
  if (!c.fate) {
    c.fate = fate;
    ++bucket.by_fate[static_cast<int>(fate)];
  } else if (fate > *c.fate) {
    --bucket.by_fate[static_cast<int>(*c.fate)];
    ++bucket.by_fate[static_cast<int>(fate)];
    c.fate = fate;
  }
  if (accepted(c.fate) && accepted_chars > c.accepted_chars) {
    bucket.accepted_chars += accepted_chars - c.accepted_chars;
    c.accepted_chars = accepted_chars;
  }
  if (!was_accepted && accepted(c.fate)) {
    if (bucket.accepted_latencies_ms.size() >= kMaxLatencies)
      bucket.accepted_latencies_ms.erase(bucket.accepted_latencies_ms.begin());
    bucket.accepted_latencies_ms.push_back(c.completion.latency_ms);
  }
  return true;
}

std::vector<OutcomeRow> CompletionOutcomes::rows() const {
  std::lock_guard lock(mutex_);
  std::vector<OutcomeRow> rows;
  for (const auto& [key, b] : buckets_) {
    OutcomeRow r{.language = key.first, .model = key.second};
    r.typed_over = b.by_fate[static_cast<int>(CompletionFate::TypedOver)];
    r.dismissed = b.by_fate[static_cast<int>(CompletionFate::Dismissed)];
    r.accepted_partially = b.by_fate[static_cast<int>(CompletionFate::AcceptedPartially)];
    r.accepted = b.by_fate[static_cast<int>(CompletionFate::Accepted)];
    r.shown = r.typed_over + r.dismissed + r.accepted_partially + r.accepted;
    r.accepted_chars = b.accepted_chars;
    if (!b.accepted_latencies_ms.empty()) {
      std::vector<double> sorted = b.accepted_latencies_ms;
      std::sort(sorted.begin(), sorted.end());
      r.latency_mean_ms =
          std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
      r.latency_p50_ms = percentile(sorted, 50);
      r.latency_p90_ms = percentile(sorted, 90);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

nlohmann::json CompletionOutcomes::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const OutcomeRow& r : rows()) {
    nlohmann::json latency = nullptr;
    if (r.latency_mean_ms)
      latency = {
          {"mean", *r.latency_mean_ms}, {"p50", *r.latency_p50_ms}, {"p90", *r.latency_p90_ms}};
    out.push_back({{"language", r.language},
                   {"model", r.model},
                   {"shown", r.shown},
                   {"accepted", r.accepted},
                   {"acceptedPartially", r.accepted_partially},
                   {"dismissed", r.dismissed},
                   {"typedOver", r.typed_over},
                   {"acceptedChars", r.accepted_chars},
                   {"acceptedLatencyMs", latency}});
  }
  return out;
}

}  // namespace ghostline::lsp
