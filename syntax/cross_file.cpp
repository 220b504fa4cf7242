#include "syntax/cross_file.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "syntax/document_tree.h"
#include "syntax/language.h"
#include "syntax/query.h"

namespace ghostline::syntax {

std::vector<Definition> find_definitions(const DocumentTree& tree) {
  std::vector<Definition> out;
  const TSQuery* q = tree.language().query(QueryKind::Definitions);
  if (!q) return out;
  const std::string& text = tree.text();
  const TSNode root = ts_tree_root_node(tree.tree());
  for_each_match(q, root, text, 0, static_cast<uint32_t>(text.size()),
                 [&](std::span<const Capture> caps) {
                   Definition d;
                   bool has_node = false;
                   for (const Capture& c : caps) {
                     if (c.name == "name") {
                       d.name = text.substr(ts_node_start_byte(c.node),
                                            ts_node_end_byte(c.node) - ts_node_start_byte(c.node));
                     } else if (c.name.substr(0, 11) == "definition.") {
                       d.kind = std::string(c.name.substr(11));
                       d.begin = ts_node_start_byte(c.node);
                       d.end = ts_node_end_byte(c.node);
                       has_node = true;
                     }
                   }
                   if (has_node && !d.name.empty()) out.push_back(std::move(d));
                   return true;
                 });
  std::stable_sort(out.begin(), out.end(),
                   [](const Definition& a, const Definition& b) { return a.begin < b.begin; });
  return out;
}

void CrossFileIndex::edited(const std::string& key, size_t at) {
  auto it = docs_.find(key);
  if (it == docs_.end()) return;
  it->second.dirty = true;
  it->second.last_edit = at;
  it->second.edit_serial = ++edits_;
}

namespace {

// The head of a definition: its first lines, without trailing blank lines; *shown_end is where
// it ends in `text`.
std::string snippet_text(std::string_view text, const Definition& d, size_t max_lines,
                         size_t* shown_end) {
  // Start at the beginning of the definition's line, so that its indentation is kept.
  size_t line_begin = text.rfind('\n', d.begin == 0 ? 0 : d.begin - 1);
  line_begin = (d.begin == 0 || line_begin == std::string_view::npos) ? 0 : line_begin + 1;
  const std::string_view body = text.substr(line_begin, d.end - line_begin);
  size_t end = 0, lines = 0;
  while (end < body.size() && lines < max_lines) {
    const size_t nl = body.find('\n', end);
    end = nl == std::string_view::npos ? body.size() : nl + 1;
    ++lines;
  }
  std::string s(body.substr(0, end));
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == ' ' || s.back() == '\r' || s.back() == '\t'))
    s.pop_back();
  *shown_end = line_begin + s.size();
  return s;
}

}  // namespace

std::vector<FileContext> CrossFileIndex::context_for(const std::string& key,
                                                     std::span<const std::string> names,
                                                     const DocumentTrees& trees,
                                                     const CrossFileLimits& limits) {
  // Definitions by name in the other documents, indexed again where they changed.
  struct Found {
    const std::string* key;
    const Doc* doc;
    const Definition* def;
  };
  std::unordered_map<std::string_view, std::vector<Found>> by_name;
  size_t searched = 0;
  Found last_edited{};  // the innermost definition around the latest edit in another document
  uint64_t last_serial = 0;
  for (auto& [k, doc] : docs_) {
    if (k == key) continue;
    const DocumentTree* tree = trees.find(k);
    if (!tree) continue;
    if (++searched > limits.max_documents) break;
    if (doc.dirty) {
      doc.definitions = find_definitions(*tree);
      doc.dirty = false;
    }
    for (const Definition& d : doc.definitions) {
      by_name[d.name].push_back(Found{&k, &doc, &d});
      if (doc.edit_serial > last_serial && d.begin <= doc.last_edit && doc.last_edit <= d.end &&
          (last_edited.doc != &doc ||
           d.end - d.begin < last_edited.def->end - last_edited.def->begin))
        last_edited = Found{&k, &doc, &d};
    }
    if (last_edited.doc == &doc) last_serial = doc.edit_serial;
  }

  // The most wanted names first, each definition once, until the budget is spent.
  struct Chosen {
    const std::string* key;
    const Doc* doc;
    const Definition* def;
    std::string text;
    size_t shown_end;
  };
  std::vector<Chosen> chosen;
  std::unordered_set<const Definition*> taken;
  size_t bytes = 0;
  std::vector<Found> wanted;
  for (const std::string& name : names)
    if (auto it = by_name.find(name); it != by_name.end())
      wanted.insert(wanted.end(), it->second.begin(), it->second.end());
  if (last_edited.doc) wanted.push_back(last_edited);
  {
    for (const Found& f : wanted) {
      if (!taken.insert(f.def).second) continue;
      size_t shown_end = 0;
      std::string text =
          snippet_text(trees.find(*f.key)->text(), *f.def, limits.max_snippet_lines, &shown_end);
      // What does not fit whole is cut to the lines that do (a signature is worth showing).
      if (bytes + text.size() + 2 > limits.max_bytes) {
        const size_t room = limits.max_bytes > bytes + 2 ? limits.max_bytes - bytes - 2 : 0;
        const size_t nl = room > 0 ? text.rfind('\n', room) : std::string::npos;
        if (nl == std::string::npos || nl == 0) continue;
        shown_end -= text.size() - nl;
        text.resize(nl);
      }
      if (text.empty()) continue;
      bytes += text.size() + 2;
      chosen.push_back(Chosen{f.key, f.doc, f.def, std::move(text), shown_end});
    }
  }
  std::sort(chosen.begin(), chosen.end(), [](const Chosen& a, const Chosen& b) {
    return a.doc->path != b.doc->path ? a.doc->path < b.doc->path : a.def->begin < b.def->begin;
  });
  std::vector<FileContext> out;
  const Chosen* outer = nullptr;
  for (const Chosen& c : chosen) {
    // A definition that the snippet before it shows whole (a method of a short class) once.
    if (outer && outer->doc == c.doc && c.def->end <= outer->shown_end) continue;
    if (out.empty() || out.back().path != c.doc->path) out.push_back(FileContext{c.doc->path, {}});
    else out.back().text += "\n\n";
    out.back().text += c.text;
    outer = &c;
  }
  return out;
}

std::string prompt_path(std::string_view uri) {
  std::string_view path = uri;
  if (const size_t scheme = path.find("://"); scheme != std::string_view::npos)
    path = path.substr(scheme + 3);
  // The last three components: enough to tell files apart, short, and no home directory.
  size_t cut = path.size();
  for (int parts = 0; parts < 3 && cut != std::string_view::npos && cut > 0; ++parts)
    cut = path.rfind('/', cut - 1);
  if (cut != std::string_view::npos && cut < path.size()) path = path.substr(cut + 1);
  return std::string(path);
}

}  // namespace ghostline::syntax
