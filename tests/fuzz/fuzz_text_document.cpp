// Document edits in the three position encodings: a sequence of range replacements decoded
// from the input, each checked against the same edit done naively on the text, and the line
// index checked against one built from scratch.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "lsp/text_document.h"

namespace {

using ghostline::lsp::Position;
using ghostline::lsp::PositionEncoding;
using ghostline::lsp::Range;
using ghostline::lsp::TextDocument;

struct Input {
  const uint8_t* p;
  size_t left;
  uint8_t byte() {
    if (!left) return 0;
    --left;
    return *p++;
  }
  std::string_view bytes(size_t n) {
    n = std::min(n, left);
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    left -= n;
    return s;
  }
};

void check_same_index(const TextDocument& doc, PositionEncoding enc) {
  TextDocument fresh("u", "x", 0, doc.text());
  FUZZ_CHECK(doc.line_count() == fresh.line_count(), "line count %zu, rebuilt %zu",
             doc.line_count(), fresh.line_count());
  for (size_t line = 0; line < doc.line_count(); ++line) {
    Position start{static_cast<int64_t>(line), 0};
    FUZZ_CHECK(doc.offset_of(start, enc) == fresh.offset_of(start, enc), "line %zu starts differ",
               line);
  }
  const bool ascii =
      std::all_of(doc.text().begin(), doc.text().end(), [](char c) { return (c & 0x80) == 0; });
  for (size_t off = 0; off <= doc.text().size(); ++off) {
    Position p = doc.position_of(off, enc);
    FUZZ_CHECK(p == fresh.position_of(off, enc), "position of %zu differs", off);
    // A position the document gives out is one it accepts; in ASCII text, the same offset
    // (a \r\n pair is one line break, so its middle maps to its start).
    auto back = doc.offset_of(p, enc);
    FUZZ_CHECK(back, "offset %zu -> (%lld,%lld), which is refused", off, (long long)p.line,
               (long long)p.character);
    FUZZ_CHECK(!ascii || *back == off || (off > 0 && doc.text()[off - 1] == '\r'),
               "offset %zu -> %zu", off, *back);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const PositionEncoding enc = static_cast<PositionEncoding>(in.byte() % 3);
  TextDocument doc("file:///f", "python", 1, std::string(in.bytes(in.byte())));
  check_same_index(doc, enc);
  for (int edit = 0; in.left > 0 && edit < 64; ++edit) {
    // Positions may fall past line ends, past the last line, or inside a multi-unit character.
    Range r{{in.byte() % 8, in.byte() % 24}, {in.byte() % 8, in.byte() % 24}};
    std::string new_text(in.bytes(in.byte() % 16));
    std::string before = doc.text();
    auto b = doc.offset_of(r.start, enc), e = doc.offset_of(r.end, enc);
    bool applied = doc.apply_change(r, new_text, enc);
    if (b && e && *b <= *e) {
      FUZZ_CHECK(applied, "a valid range was refused");
      std::string expected = before.substr(0, *b) + new_text + before.substr(*e);
      FUZZ_CHECK(doc.text() == expected, "edit %d gave a different text", edit);
    } else {
      FUZZ_CHECK(!applied && doc.text() == before, "an invalid range changed the document");
    }
    check_same_index(doc, enc);
  }
  return 0;
}
