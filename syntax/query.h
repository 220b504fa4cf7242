// Running tree-sitter queries with their predicates. Debian's tree-sitter 0.20.7 returns
// predicates to the caller instead of applying them; these functions apply #eq?, #not-eq?,
// #match?, #not-match?, #any-of? and #not-any-of? so that every caller sees the same matches.
// Directives (#set!, #strip!, ... ending in `!`) are ignored; an unknown test predicate
// (ending in `?`) throws std::runtime_error on first use of its query. Captures whose name starts
// with `_` only feed predicates and are not reported.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

namespace ghostline::syntax {

struct Capture {
  std::string_view name;  // the capture's name without `@`; lives as long as the query
  TSNode node;
  uint32_t pattern_index;
};

// Captures of `query` on `node` within bytes [begin, end) of `text`, in document order,
// predicates (#eq?, #not-eq?, #match?, #not-match?, #any-of?) applied; `fn` returns false to stop.
void for_each_capture(const TSQuery* query, TSNode node, std::string_view text, uint32_t begin,
                      uint32_t end, const std::function<bool(const Capture&)>& fn);

// Parsed predicates and compiled regexes are cached per query address for the life of the
// process (the registry's queries live that long). Code that deletes a query of its own calls
// this first, so that a later query at the same address is not judged by stale predicates.
void forget_query_predicates(const TSQuery* query);

// For patterns with several captures (a definition and its @name): each match, predicates applied.
void for_each_match(const TSQuery* query, TSNode node, std::string_view text, uint32_t begin,
                    uint32_t end, const std::function<bool(std::span<const Capture>)>& fn);

}  // namespace ghostline::syntax
