// Context from the other open documents: the definitions of the names used near the cursor,
// as snippets for the prompt (repository-level FIM templates carry them as other files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ghostline::syntax {

class DocumentTree;
class DocumentTrees;

struct Definition {
  std::string name;
  std::string kind;  // "function", "class", ... (the capture's suffix)
  uint32_t begin = 0, end = 0;  // bytes of the whole definition
};

// The definitions in a document (its language's definitions query), in document order.
std::vector<Definition> find_definitions(const DocumentTree& tree);

// One other document's part of the context.
struct FileContext {
  std::string path;  // as the prompt names it
  std::string text;  // its snippets, in document order, separated by blank lines
};

struct CrossFileLimits {
  size_t max_bytes = 1536;          // all snippets together
  size_t max_snippet_lines = 12;    // of one definition (its head: signature, first lines)
  size_t max_documents = 64;        // documents searched
};

// Indexes the definitions of open documents and picks snippets for a request. I/O thread only:
// documents are indexed again lazily, when another document asks for context after they
// changed.
class CrossFileIndex {
 public:
  void opened(const std::string& key, std::string path) {
    docs_[key] = Doc{std::move(path), {}, true};
  }
  // The document changed at byte `at` (of its text after the change).
  void edited(const std::string& key, size_t at);
  void closed(const std::string& key) { docs_.erase(key); }

  // For a request in document `key`: the definitions of `names` (most wanted first) found in
  // the other documents of `trees`, then the definition the user last edited in another
  // document, fitted into the limits, in a stable order (by document path, then position) so
  // that the prompt's head stays the same while the user types.
  std::vector<FileContext> context_for(const std::string& key, std::span<const std::string> names,
                                       const DocumentTrees& trees, const CrossFileLimits& limits);

 private:
  struct Doc {
    std::string path;
    std::vector<Definition> definitions;
    bool dirty = true;
    size_t last_edit = 0;       // where it was last edited
    uint64_t edit_serial = 0;   // when (0: never since it was opened)
  };
  std::unordered_map<std::string, Doc> docs_;
  uint64_t edits_ = 0;
};

// A path for the prompt from a document URI: the last components of its path.
std::string prompt_path(std::string_view uri);

}  // namespace ghostline::syntax
