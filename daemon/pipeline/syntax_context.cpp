#include "daemon/pipeline/syntax_context.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "base/clock.h"
#include "syntax/context_builder.h"
#include "syntax/language.h"

namespace ghostline::daemon {
namespace {

// The folder above the part of the path the prompt shows: the repository, most often.
std::string repo_name(std::string_view uri) {
  const std::string shown = syntax::prompt_path(uri);
  if (uri.size() <= shown.size() + 1) return {};
  std::string_view rest = uri.substr(0, uri.size() - shown.size() - 1);
  const size_t slash = rest.rfind('/');
  return std::string(slash == std::string_view::npos ? rest : rest.substr(slash + 1));
}

// Offset of the start of row `row` of `text`, where the byte at `at` is on row `at_row` (row <=
// at_row): found going back from `at`, not counting rows from the start of the text.
size_t row_start_before(std::string_view text, size_t at, uint32_t at_row, uint32_t row) {
  size_t pos = at;
  for (uint32_t r = at_row;; --r) {
    const size_t nl = pos == 0 ? std::string_view::npos : text.rfind('\n', pos - 1);
    if (r == row || nl == std::string_view::npos) return nl == std::string_view::npos ? 0 : nl + 1;
    pos = nl;
  }
}

}  // namespace

void SyntaxState::opened(const lsp::DocumentKey& key, const lsp::TextDocument& document) {
  const std::string& uri = document.uri();
  const std::string& text = document.text();
  const int64_t version = document.version();
  // A very large document (generated code, data) is completed from its text alone: its parse
  // would hold the I/O thread.
  if (text.size() <= kMaxParsedBytes) trees_.open(key, document.language_id(), uri, text);
  else trees_.close(key);
  docs_[key] = Doc{syntax::prompt_path(uri), repo_name(uri), version};
  if (cross_file_ && trees_.find(key)) index_.opened(key, docs_[key].path);
}

void SyntaxState::edited(const lsp::DocumentKey& key, const lsp::TextDocument& document,
                         std::span<const lsp::DocumentEdit> edits) {
  auto it = docs_.find(key);
  if (it == docs_.end()) return;
  it->second.version = document.version();
  const syntax::DocumentTree* tree = trees_.find(key);
  if (!tree) return;
  try {
    for (const lsp::DocumentEdit& e : edits) trees_.edit(key, e.begin, e.end, e.new_text);
  } catch (const std::exception& e) {  // the tree no longer follows the document
    spdlog::warn("syntax tree of {} dropped: {}", it->second.path, e.what());
    trees_.close(key);
    index_.closed(key);
    return;
  }
  if (tree->text().size() > kMaxParsedBytes) {
    trees_.close(key);
    index_.closed(key);
    return;
  }
  if (cross_file_ && !edits.empty())
    index_.edited(key, edits.back().begin + edits.back().new_text.size());
}

void SyntaxState::closed(const lsp::DocumentKey& key) {
  trees_.close(key);
  index_.closed(key);
  docs_.erase(key);
}

std::shared_ptr<const lsp::RequestContext> SyntaxState::context_for(
    const lsp::CompletionRequest& request) {
  const auto start = Clock::now();
  const lsp::DocumentKey& key = lsp::document_key_of(request);
  auto it = docs_.find(key);
  if (it == docs_.end()) return nullptr;
  auto a = std::make_shared<lsp::RequestContext>();
  a->version = request.version;
  a->text_size = request.text.size();
  a->path = it->second.path;
  a->repo = it->second.repo;
  if (const syntax::DocumentTree* tree = trees_.find(key)) {
    a->tree = trees_.snapshot(key, request.version);
    a->reparse_ms = tree->last_parse_ms();
    if (cross_file_ && a->tree && tree->text().size() == request.text.size()) {
      // The names used in a stretch of rows before the cursor's, its end on a grid.
      // Rows are found from the tree and the cursor, not counted from the start of the text.
      const std::string_view text = request.text;
      const size_t cursor = std::min(request.cursor, text.size());
      const uint32_t cursor_row =
          syntax::point_at(a->tree->tree.get(), text, static_cast<uint32_t>(cursor)).row;
      const uint32_t end_row = cursor_row / kNameRowsGrid * kNameRowsGrid;
      const uint32_t begin_row = end_row > kNameRows ? end_row - kNameRows : 0;
      const size_t begin = row_start_before(text, cursor, cursor_row, begin_row);
      const size_t end = end_row == 0 ? 0 : row_start_before(text, cursor, cursor_row, end_row);
      const auto names = syntax::referenced_names(*a->tree, text, begin, end);
      a->other_files = index_.context_for(key, names, trees_, syntax::CrossFileLimits{});
    }
  }
  a->attach_ms = ms_since(start);
  return a;
}

std::shared_ptr<const syntax::TreeSnapshot> SyntaxState::tree_for(
    const lsp::CompletionRequest& request) {
  const lsp::RequestContext* a = request.context.get();
  if (a && a->tree && a->version == request.version && a->text_size == request.text.size())
    return a->tree;
  // A request derived from an attached one (a prefetch of the state after accepting a
  // completion) decides from its text: a fresh parse of a big file would hold the engine thread.
  if (a) return nullptr;
  const syntax::Language* language = syntax::find_language(request.language_id, request.uri);
  if (!language) return nullptr;
  syntax::DocumentTree fresh(*language, request.text);
  return fresh.snapshot(request.version);
}

syntax::CompletionContext SyntaxState::context_for(const lsp::CompletionRequest& request,
                                                   bool fim) {
  const auto tree = tree_for(request);
  syntax::ContextOptions options;
  options.fim = fim;
  options.line_mode = request.mode == lsp::CompletionMode::Line    ? syntax::LineMode::Line
                      : request.mode == lsp::CompletionMode::Block ? syntax::LineMode::Block
                                                                   : syntax::LineMode::Auto;
  syntax::CompletionContext c =
      syntax::build_context(tree.get(), request.text, request.cursor, options);
  if (c.decision == syntax::Decision::None && request.trigger == lsp::TriggerKind::Invoked) {
    c.decision = c.shape.single_line ? syntax::Decision::SingleLine : syntax::Decision::MultiLine;
    c.reason = "asked for (" + c.reason + ")";
  }
  return c;
}

SyntaxState::PromptContext SyntaxState::prompt_context(const lsp::CompletionRequest& request) {
  const lsp::RequestContext* a = request.context.get();
  if (!a) return {};
  return PromptContext{a->other_files, a->repo};
}

}  // namespace ghostline::daemon
