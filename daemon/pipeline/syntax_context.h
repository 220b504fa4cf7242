// The syntax side of the pipeline: the trees of the open documents, kept up to date on the I/O
// thread from each edit as a listener of every session's documents, and what a request takes
// from them for the engine thread (a copy of its document's tree, snippets from the other
// documents) as its context.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lsp/completer.h"
#include "syntax/context_builder.h"
#include "syntax/cross_file.h"
#include "syntax/document_tree.h"

// A request's context (declared in lsp/completer.h, which knows nothing of syntax).
struct ghostline::lsp::RequestContext {
  std::shared_ptr<const syntax::TreeSnapshot> tree;  // null: no grammar for the language
  int64_t version = 0;
  size_t text_size = 0;
  std::string path;                                 // the document, as the prompt names it
  std::string repo;                                 // the name of the folder it is in
  std::vector<syntax::FileContext> other_files;     // snippets from the other open documents
  double reparse_ms = 0;                            // the document's last reparse
  double attach_ms = 0;                             // time taken here on the I/O thread
};

namespace ghostline::daemon {

class SyntaxState final : public lsp::DocumentContext {
 public:
  explicit SyntaxState(bool cross_file) : cross_file_(cross_file) {}

  // I/O thread: the documents of every session, and each request's context.
  void opened(const lsp::DocumentKey& key, const lsp::TextDocument& document) override;
  void edited(const lsp::DocumentKey& key, const lsp::TextDocument& document,
              std::span<const lsp::DocumentEdit> edits) override;
  void closed(const lsp::DocumentKey& key) override;
  std::shared_ptr<const lsp::RequestContext> context_for(
      const lsp::CompletionRequest& request) override;

  // Engine thread: the tree of exactly request.text: the attached copy when it is of this
  // version and text; none for a request derived from an attached one (prefetch); a fresh parse
  // for a request that never had one (one-shot commands).
  static std::shared_ptr<const syntax::TreeSnapshot> tree_for(
      const lsp::CompletionRequest& request);

  // Engine thread: the pipeline's context stage. `fim`: the model sees the text after the
  // cursor. A request the user made explicitly is always answered.
  static syntax::CompletionContext context_for(const lsp::CompletionRequest& request, bool fim);

  // What the prompt takes from the request's context: the other files' snippets and the
  // repository.
  struct PromptContext {
    std::span<const syntax::FileContext> other_files;
    std::string_view repo;
  };
  static PromptContext prompt_context(const lsp::CompletionRequest& request);

  // The rows whose names pick the other files' snippets end on this grid, so that the snippets
  // stay the same while the user types within a stretch of lines.
  static constexpr uint32_t kNameRowsGrid = 16;
  static constexpr uint32_t kNameRows = 64;
  // Larger documents get no tree (their decisions come from the text).
  static constexpr size_t kMaxParsedBytes = 4 << 20;

 private:
  bool cross_file_;
  syntax::DocumentTrees trees_;
  syntax::CrossFileIndex index_;
  struct Doc {
    std::string path, repo;
    int64_t version = 0;
  };
  std::unordered_map<std::string, Doc> docs_;
};

}  // namespace ghostline::daemon
