// The languages Ghostline parses: one row of data per tree-sitter grammar (names, LSP ids, file
// extensions) and its queries. Everything a language knows about node names lives in
// syntax/queries/<lang>/*.scm, never in C++.
#pragma once

#include <tree_sitter/api.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ghostline::syntax {

// One query file per kind: syntax/queries/<lang>/<kind>.scm (see query_kind_name).
enum class QueryKind { Comments, Blocks, Definitions, Imports, References };
inline constexpr QueryKind kAllQueryKinds[] = {QueryKind::Comments, QueryKind::Blocks,
                                               QueryKind::Definitions, QueryKind::Imports,
                                               QueryKind::References};

// "comments", "blocks", "definitions", "imports", "references": the query's file name.
std::string_view query_kind_name(QueryKind kind);

struct Language {
  std::string name;                       // "python", "javascript", "typescript", "tsx", "c",
                                          // "cpp", "go", "rust", "java", "lua"
  std::vector<std::string> language_ids;  // LSP languageIds
  std::vector<std::string> extensions;    // ".py", ".pyi", ...
  const TSLanguage* ts = nullptr;
  bool indent_blocks = false;             // blocks end by dedent (Python), not by a bracket

  // The language's compiled query of this kind, compiled on first use (thread-safe) and kept for
  // the life of the process; nullptr when the language has no such query file. A query that does
  // not compile against the grammar throws std::runtime_error naming the file, the line:column
  // and the kind of error.
  const TSQuery* query(QueryKind kind) const;
};

// Compiles query text against a grammar, as Language::query does for the embedded files. A query
// that does not compile throws std::runtime_error "<file>:<line>:<column> (byte N): <kind of
// error> at `<text>`". The caller owns the result (ts_query_delete).
TSQuery* compile_query(const TSLanguage* language, std::string_view source, std::string_view file);

// By LSP languageId, else by the extension of the uri/path; nullptr: no grammar (plain text).
const Language* find_language(std::string_view language_id, std::string_view uri = {});
std::span<const Language* const> all_languages();

}  // namespace ghostline::syntax
