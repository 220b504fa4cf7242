// The syntax side of the pipeline: the trees of the open documents, kept up to date on the I/O
// thread from each edit, and what a request takes from them for the engine thread (a copy of
// its document's tree, snippets from the other documents).
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

namespace ghostline::daemon {

struct SyntaxAttachment : lsp::RequestAttachment {
  std::shared_ptr<const syntax::TreeSnapshot> tree;  // null: no grammar for the language
  int64_t version = 0;
  size_t text_size = 0;
  std::string path;                                 // the document, as the prompt names it
  std::string repo;                                 // the name of the folder it is in
  std::vector<syntax::FileContext> other_files;     // snippets from the other open documents
  double reparse_ms = 0;                            // the document's last reparse
  double attach_ms = 0;                             // time taken here on the I/O thread
};

// The request's syntax attachment, or null when it has none.
inline const SyntaxAttachment* syntax_attachment(const lsp::CompletionRequest& request) {
  return dynamic_cast<const SyntaxAttachment*>(request.attachment.get());
}

class SyntaxState {
 public:
  explicit SyntaxState(bool cross_file) : cross_file_(cross_file) {}

  // I/O thread.
  void opened(const std::string& key, const std::string& uri, const std::string& language_id, int64_t version,
              const std::string& text);
  void edited(const std::string& key, int64_t version, std::span<const lsp::DocumentEdit> edits);
  void closed(const std::string& key);
  std::shared_ptr<const SyntaxAttachment> attach(const lsp::CompletionRequest& request, const std::string& key);

  // Engine thread: the tree of exactly request.text: the attached copy when it is of this
  // version and text; none for a request derived from an attached one (prefetch); a fresh parse
  // for a request that never had one (one-shot commands).
  static std::shared_ptr<const syntax::TreeSnapshot> tree_for(const lsp::CompletionRequest& request);

  // Engine thread: the pipeline's context stage. `fim`: the model sees the text after the
  // cursor. A request the user made explicitly is always answered.
  static syntax::CompletionContext context_for(const lsp::CompletionRequest& request, bool fim);

  // What the prompt takes from the attachment: the other files' snippets and the repository.
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

// A completer whose requests carry the syntax of their documents: it keeps the open documents'
// trees from the I/O thread's hooks and attaches them to each request as it is submitted.
class SyntaxAwareCompleter : public lsp::Completer {
 public:
  void document_opened(const std::string& key, const std::string& uri, const std::string& language_id,
                       int64_t version, const std::string& text) override {
    syntax_.opened(key, uri, language_id, version, text);
  }
  void document_edited(const std::string& key, int64_t version, std::span<const lsp::DocumentEdit> edits) override {
    syntax_.edited(key, version, edits);
  }
  void document_closed(const std::string& key) override {
    syntax_.closed(key);
    forget(key);
  }
  void attach(lsp::CompletionRequest& request) override {
    request.attachment = syntax_.attach(request, request.document_key);
  }

 protected:
  // What the completer keeps per document besides its tree: dropped as the document closes.
  virtual void forget(const lsp::DocumentKey&) {}

 private:
  SyntaxState syntax_{/*cross_file=*/true};
};

}  // namespace ghostline::daemon
