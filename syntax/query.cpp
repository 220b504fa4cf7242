#include "syntax/query.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace ghostline::syntax {
namespace {

struct RegexDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
using Regex = std::unique_ptr<pcre2_code, RegexDeleter>;

// One text predicate of a pattern, parsed once per query.
struct Predicate {
  enum class Op { Eq, Match, AnyOf } op = Op::Eq;
  bool negated = false;
  uint32_t capture = 0;                  // the tested capture
  std::variant<std::monostate, uint32_t, std::string> other;  // #eq?: capture id or literal
  std::vector<std::string> values;       // #any-of?
  Regex regex;                           // #match?
};

struct QueryPredicates {
  std::vector<std::vector<Predicate>> by_pattern;
  bool any = false;  // no pattern has a predicate: matches pass unchecked
};

std::string_view string_value(const TSQuery* query, uint32_t id) {
  uint32_t len = 0;
  const char* s = ts_query_string_value_for_id(query, id, &len);
  return {s, len};
}

Regex compile_regex(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw std::runtime_error("query #match? regex `" + std::string(pattern) + "` at offset " +
                             std::to_string(offset) + ": " +
                             reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back when absent
  return Regex(code);
}

Predicate parse_predicate(const TSQuery* query, std::span<const TSQueryPredicateStep> steps) {
  std::string_view op = string_value(query, steps[0].value_id);
  auto fail = [&](const char* why) {
    throw std::runtime_error("query predicate #" + std::string(op) + ": " + why);
  };
  Predicate p;
  if (op == "eq?" || op == "not-eq?") {
    p.op = Predicate::Op::Eq;
  } else if (op == "match?" || op == "not-match?") {
    p.op = Predicate::Op::Match;
  } else if (op == "any-of?" || op == "not-any-of?") {
    p.op = Predicate::Op::AnyOf;
  } else {
    fail("is not supported");
  }
  p.negated = op.starts_with("not-");
  if (steps.size() < 3 || steps[1].type != TSQueryPredicateStepTypeCapture) {
    fail("needs a capture and an argument");
  }
  p.capture = steps[1].value_id;
  if (p.op == Predicate::Op::AnyOf) {
    for (size_t i = 2; i < steps.size(); ++i) {
      if (steps[i].type != TSQueryPredicateStepTypeString) fail("takes strings only");
      p.values.emplace_back(string_value(query, steps[i].value_id));
    }
    return p;
  }
  if (steps.size() != 3) fail("takes exactly two arguments");
  if (p.op == Predicate::Op::Eq && steps[2].type == TSQueryPredicateStepTypeCapture) {
    p.other = steps[2].value_id;
  } else if (steps[2].type == TSQueryPredicateStepTypeString) {
    std::string_view value = string_value(query, steps[2].value_id);
    if (p.op == Predicate::Op::Match) {
      p.regex = compile_regex(value);
    } else {
      p.other = std::string(value);
    }
  } else {
    fail("needs a string as its second argument");
  }
  return p;
}

std::shared_ptr<const QueryPredicates> parse_predicates(const TSQuery* query) {
  auto result = std::make_shared<QueryPredicates>();
  uint32_t patterns = ts_query_pattern_count(query);
  result->by_pattern.resize(patterns);
  for (uint32_t i = 0; i < patterns; ++i) {
    uint32_t count = 0;
    const TSQueryPredicateStep* steps = ts_query_predicates_for_pattern(query, i, &count);
    size_t start = 0;
    for (size_t j = 0; j < count; ++j) {
      if (steps[j].type != TSQueryPredicateStepTypeDone) continue;
      std::span<const TSQueryPredicateStep> one(steps + start, j - start);
      start = j + 1;
      if (one.empty() || one[0].type != TSQueryPredicateStepTypeString) continue;
      if (string_value(query, one[0].value_id).ends_with('!')) continue;  // a directive
      result->by_pattern[i].push_back(parse_predicate(query, one));
      result->any = true;
    }
  }
  return result;
}

// Parsed predicates (and compiled regexes) of each query, shared by all threads.
struct PredicateCache {
  std::mutex mutex;
  std::unordered_map<const TSQuery*, std::shared_ptr<const QueryPredicates>> by_query;
};

PredicateCache& predicate_cache() {
  static PredicateCache cache;
  return cache;
}

std::shared_ptr<const QueryPredicates> predicates_of(const TSQuery* query) {
  auto& cache = predicate_cache();
  std::lock_guard lock(cache.mutex);
  auto& slot = cache.by_query[query];
  if (!slot) slot = parse_predicates(query);
  return slot;
}

std::string_view node_text(TSNode node, std::string_view text) {
  uint32_t begin = ts_node_start_byte(node), end = ts_node_end_byte(node);
  if (begin >= text.size()) return {};
  return text.substr(begin, std::min<size_t>(end, text.size()) - begin);
}

bool regex_matches(const pcre2_code* regex, std::string_view subject) {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(regex, nullptr), &pcre2_match_data_free);
  int rc = pcre2_match(regex, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                       data.get(), nullptr);
  return rc >= 0;
}

// Whether one node satisfies a predicate (before negation).
bool holds(const Predicate& p, TSNode node, const TSQueryMatch& match, std::string_view text) {
  std::string_view value = node_text(node, text);
  switch (p.op) {
    case Predicate::Op::Match:
      return regex_matches(p.regex.get(), value);
    case Predicate::Op::AnyOf:
      for (const auto& v : p.values) {
        if (v == value) return true;
      }
      return false;
    case Predicate::Op::Eq:
      if (const auto* literal = std::get_if<std::string>(&p.other)) return value == *literal;
      for (uint16_t i = 0; i < match.capture_count; ++i) {
        if (match.captures[i].index == std::get<uint32_t>(p.other)) {
          return node_text(match.captures[i].node, text) == value;
        }
      }
      return false;
  }
  return false;
}

// Every node of the tested capture must satisfy the predicate (tree-sitter's rule for
// quantified captures); a capture absent from the match does not reject it.
bool satisfies(const QueryPredicates& preds, const TSQueryMatch& match, std::string_view text) {
  if (!preds.any) return true;
  for (const Predicate& p : preds.by_pattern[match.pattern_index]) {
    for (uint16_t i = 0; i < match.capture_count; ++i) {
      if (match.captures[i].index != p.capture) continue;
      if (holds(p, match.captures[i].node, match, text) == p.negated) return false;
    }
  }
  return true;
}

struct CursorDeleter {
  void operator()(TSQueryCursor* c) const { ts_query_cursor_delete(c); }
};

std::unique_ptr<TSQueryCursor, CursorDeleter> start(const TSQuery* query, TSNode node,
                                                    uint32_t begin, uint32_t end) {
  std::unique_ptr<TSQueryCursor, CursorDeleter> cursor(ts_query_cursor_new());
  ts_query_cursor_set_byte_range(cursor.get(), begin, end);
  ts_query_cursor_exec(cursor.get(), query, node);
  return cursor;
}

Capture to_capture(const TSQuery* query, const TSQueryMatch& match, const TSQueryCapture& c) {
  uint32_t len = 0;
  const char* name = ts_query_capture_name_for_id(query, c.index, &len);
  return Capture{std::string_view(name, len), c.node, match.pattern_index};
}

}  // namespace

void forget_query_predicates(const TSQuery* query) {
  auto& cache = predicate_cache();
  std::lock_guard lock(cache.mutex);
  cache.by_query.erase(query);
}

void for_each_capture(const TSQuery* query, TSNode node, std::string_view text, uint32_t begin,
                      uint32_t end, const std::function<bool(const Capture&)>& fn) {
  if (!query || ts_node_is_null(node)) return;
  auto preds = predicates_of(query);
  auto cursor = start(query, node, begin, end);
  TSQueryMatch match;
  uint32_t index = 0;
  while (ts_query_cursor_next_capture(cursor.get(), &match, &index)) {
    if (!satisfies(*preds, match, text)) {
      ts_query_cursor_remove_match(cursor.get(), match.id);
      continue;
    }
    Capture capture = to_capture(query, match, match.captures[index]);
    if (capture.name.starts_with('_')) continue;  // a helper for predicates, not a result
    if (!fn(capture)) return;
  }
}

void for_each_match(const TSQuery* query, TSNode node, std::string_view text, uint32_t begin,
                    uint32_t end, const std::function<bool(std::span<const Capture>)>& fn) {
  if (!query || ts_node_is_null(node)) return;
  auto preds = predicates_of(query);
  auto cursor = start(query, node, begin, end);
  TSQueryMatch match;
  std::vector<Capture> captures;
  while (ts_query_cursor_next_match(cursor.get(), &match)) {
    if (!satisfies(*preds, match, text)) continue;
    captures.clear();
    for (uint16_t i = 0; i < match.capture_count; ++i) {
      Capture capture = to_capture(query, match, match.captures[i]);
      if (!capture.name.starts_with('_')) captures.push_back(capture);
    }
    if (!fn(captures)) return;
  }
}

}  // namespace ghostline::syntax
