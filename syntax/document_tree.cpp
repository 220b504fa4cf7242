#include "syntax/document_tree.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace ghostline::syntax {
namespace {

// The point (row, byte column) reached from `from` after `text`. Tree-sitter counts rows at
// '\n' only, so a CRLF's '\r' is the last byte of its line, as here.
TSPoint advance(TSPoint from, std::string_view text) {
  size_t newlines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  if (newlines == 0) return {from.row, from.column + static_cast<uint32_t>(text.size())};
  size_t last = text.rfind('\n');
  return {from.row + static_cast<uint32_t>(newlines),
          static_cast<uint32_t>(text.size() - last - 1)};
}

}  // namespace

TSPoint point_at(const TSTree* tree, std::string_view text, uint32_t byte) {
  // Down the tree towards `byte`: the deepest node that starts at or before it and holds it,
  // or the end of the last node before it, is where counting starts.
  TSNode node = ts_tree_root_node(tree);
  uint32_t from = 0;
  TSPoint point{0, 0};
  while (!ts_node_is_null(node) && ts_node_start_byte(node) <= byte) {
    from = ts_node_start_byte(node);
    point = ts_node_start_point(node);
    const TSNode holder = ts_node_first_child_for_byte(node, byte);  // first child ending after
    const TSNode before =
        ts_node_is_null(holder)
            ? (ts_node_child_count(node) ? ts_node_child(node, ts_node_child_count(node) - 1)
                                         : TSNode{})
            : ts_node_prev_sibling(holder);
    if (!ts_node_is_null(before) && ts_node_end_byte(before) <= byte &&
        ts_node_end_byte(before) >= from) {
      from = ts_node_end_byte(before);
      point = ts_node_end_point(before);
    }
    if (ts_node_is_null(holder) || ts_node_start_byte(holder) > byte) break;
    node = holder;
  }
  return advance(point, text.substr(from, byte - from));
}

TSNode TreeSnapshot::root() const { return ts_tree_root_node(tree.get()); }

DocumentTree::DocumentTree(const Language& language, std::string text)
    : language_(&language), text_(std::move(text)), parser_(ts_parser_new()) {
  if (!ts_parser_set_language(parser_.get(), language.ts)) {
    throw std::runtime_error("tree-sitter grammar for " + language.name + " has ABI version " +
                             std::to_string(ts_language_version(language.ts)) +
                             ", which this tree-sitter runtime cannot load");
  }
  parse(nullptr);
}

void DocumentTree::parse(const TSTree* old_tree) {
  if (text_.size() > UINT32_MAX) throw std::length_error("document too large to parse");
  auto t0 = std::chrono::steady_clock::now();
  TSTree* tree = ts_parser_parse_string(parser_.get(), old_tree, text_.data(),
                                        static_cast<uint32_t>(text_.size()));
  last_parse_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // No timeout or cancellation flag is set, so the parser always returns a tree.
  if (!tree)
    throw std::runtime_error("tree-sitter returned no tree for a " + language_->name + " document");
  tree_.reset(tree);
}

void DocumentTree::edit(size_t begin, size_t end, std::string_view new_text) {
  if (begin > end || end > text_.size()) {
    throw std::out_of_range("edit [" + std::to_string(begin) + ", " + std::to_string(end) +
                            ") is outside the document (" + std::to_string(text_.size()) +
                            " bytes)");
  }
  if (text_.size() - (end - begin) + new_text.size() > UINT32_MAX) {
    throw std::length_error("document too large to parse");
  }
  std::string_view old_text(text_);
  const TSPoint start = point_at(tree_.get(), old_text, static_cast<uint32_t>(begin));
  TSInputEdit e{};
  e.start_byte = static_cast<uint32_t>(begin);
  e.old_end_byte = static_cast<uint32_t>(end);
  e.new_end_byte = static_cast<uint32_t>(begin + new_text.size());
  e.start_point = start;
  e.old_end_point = advance(start, old_text.substr(begin, end - begin));
  e.new_end_point = advance(start, new_text);
  text_.replace(begin, end - begin, new_text);
  ts_tree_edit(tree_.get(), &e);
  parse(tree_.get());
}

const std::string& DocumentTree::text() const { return text_; }
const TSTree* DocumentTree::tree() const { return tree_.get(); }
const Language& DocumentTree::language() const { return *language_; }
double DocumentTree::last_parse_ms() const { return last_parse_ms_; }

std::shared_ptr<const TreeSnapshot> DocumentTree::snapshot(int64_t version) const {
  auto snap = std::make_shared<TreeSnapshot>();
  snap->language = language_;
  snap->tree = std::shared_ptr<TSTree>(ts_tree_copy(tree_.get()), ts_tree_delete);
  snap->version = version;
  return snap;
}

void DocumentTrees::open(const std::string& key, std::string_view language_id,
                         std::string_view uri, std::string text) {
  const Language* lang = find_language(language_id, uri);
  if (!lang) {
    trees_.erase(key);  // reopened as a language without a grammar
    return;
  }
  trees_[key] = std::make_unique<DocumentTree>(*lang, std::move(text));
}

void DocumentTrees::edit(const std::string& key, size_t begin, size_t end,
                         std::string_view new_text) {
  auto it = trees_.find(key);
  if (it != trees_.end()) it->second->edit(begin, end, new_text);
}

void DocumentTrees::close(const std::string& key) { trees_.erase(key); }

const DocumentTree* DocumentTrees::find(const std::string& key) const {
  auto it = trees_.find(key);
  return it == trees_.end() ? nullptr : it->second.get();
}

std::shared_ptr<const TreeSnapshot> DocumentTrees::snapshot(const std::string& key,
                                                            int64_t version) const {
  const DocumentTree* tree = find(key);
  return tree ? tree->snapshot(version) : nullptr;
}

size_t DocumentTrees::size() const { return trees_.size(); }

}  // namespace ghostline::syntax
