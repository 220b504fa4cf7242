// What a session answers with a completion: the CompletionResult a completer made, shaped as
// the LSP result of the request that asked for it, with ranges in the session's position
// encoding. Plain functions of the document as it was when the request was made.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "lsp/completer.h"
#include "lsp/protocol.h"
#include "lsp/text_document.h"

namespace ghostline::lsp {

// How a completion is shown: ghost text (textDocument/inlineCompletion) or one item of a
// completion list (textDocument/completion).
enum class CompletionStyle { Inline, List };

// The result when there is nothing to show: an empty list of the style's kind.
nlohmann::json empty_completion_reply(CompletionStyle style);

// One inline item replacing the cursor and the result's replacement range (whichever is wider)
// of `doc`, whose cursor was at byte `cursor`. It carries `ghostline.completionAccepted` with
// `completion_id`, the id a plugin reports in ghostline/completionOutcome.
InlineCompletionList inline_completion_reply(const CompletionResult& result,
                                             const TextDocument& doc, size_t cursor,
                                             PositionEncoding encoding, uint64_t completion_id);

// One completion item. Clients filter items by the word before the cursor, so the edit covers
// that word and the text starts with it; the label is the first line, cut at 80 characters.
CompletionList completion_list_reply(const CompletionResult& result, const TextDocument& doc,
                                     size_t cursor, PositionEncoding encoding);

// ghostline/completionUpdated for work answered early at byte `cursor` of `doc`.
CompletionUpdatedParams completion_updated_params(const TextDocument& doc, size_t cursor,
                                                  PositionEncoding encoding);

}  // namespace ghostline::lsp
