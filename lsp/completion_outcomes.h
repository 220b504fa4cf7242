// What became of the completions the editors showed, as their plugins report it
// (ghostline/completionOutcome): per language and model, how many were shown, accepted whole or
// in part, dismissed or typed over, how many characters were kept, and how long the accepted
// ones took to arrive. Shared by every session of one daemon; nothing of it leaves the machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {

// The fate of one shown completion. A later report may raise it (a word accepted, then the
// rest), never lower it: a completion partly accepted and then dismissed counts as partly
// accepted.
enum class CompletionFate { TypedOver, Dismissed, AcceptedPartially, Accepted };
std::optional<CompletionFate> parse_completion_fate(std::string_view name);
const char* completion_fate_name(CompletionFate fate);

// A completion as the daemon answered it, before the editor says what became of it.
struct IssuedCompletion {
  std::string language;   // the document's language id
  std::string model;      // Completer::model_name()
  size_t chars = 0;       // characters (UTF-8 code points) of the inserted text
  double latency_ms = 0;  // from the request's arrival to its answer
};

struct OutcomeRow {
  std::string language, model;
  uint64_t shown = 0, accepted = 0, accepted_partially = 0, dismissed = 0, typed_over = 0;
  uint64_t accepted_chars = 0;
  // Of the completions accepted whole or in part; nullopt when there are none.
  std::optional<double> latency_mean_ms = std::nullopt, latency_p50_ms = std::nullopt,
                        latency_p90_ms = std::nullopt;
};

class CompletionOutcomes {
 public:
  // How many answered completions are remembered for a report; older ones are forgotten.
  explicit CompletionOutcomes(size_t remembered = 4096) : remembered_(remembered) {}

  // Remembers a completion sent to a client; returns the id the client reports it by.
  uint64_t issue(IssuedCompletion completion);
  // The client's report for `id`. `accepted_chars` is what has been kept so far (capped at the
  // completion's length; for Accepted, 0 means all of it). False for an id that was never issued
  // or is forgotten.
  bool report(uint64_t id, CompletionFate fate, size_t accepted_chars);

  // Rows ordered by language, then model.
  std::vector<OutcomeRow> rows() const;
  nlohmann::json to_json() const;

 private:
  struct Issued {
    IssuedCompletion completion;
    std::optional<CompletionFate> fate = std::nullopt;  // set by the first report
    size_t accepted_chars = 0;
  };
  struct Bucket {
    uint64_t by_fate[4] = {0, 0, 0, 0};
    uint64_t accepted_chars = 0;
    std::vector<double> accepted_latencies_ms;
  };

  mutable std::mutex mutex_;
  size_t remembered_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Issued> issued_;
  std::deque<uint64_t> issue_order_;
  std::map<std::pair<std::string, std::string>, Bucket> buckets_;
};

}  // namespace ghostline::lsp
