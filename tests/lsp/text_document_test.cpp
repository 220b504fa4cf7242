// TextDocument against a naive reference that works on code points, over random edits in
// every position encoding.
#include "lsp/text_document.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "base/utf8.h"

namespace ghostline::lsp {
namespace {

std::string to_utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

int units(char32_t c, PositionEncoding e) {
  switch (e) {
    case PositionEncoding::Utf8: return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    case PositionEncoding::Utf16: return c >= 0x10000 ? 2 : 1;
    case PositionEncoding::Utf32: return 1;
  }
  return 1;
}

// The reference: a position is found by walking code points; a character inside a code point
// or past the line end rounds up to the next boundary / the line end.
std::optional<size_t> ref_index(const std::u32string& text, Position p, PositionEncoding e) {
  size_t i = 0;
  for (int64_t line = 0; line < p.line; ++i) {
    if (i >= text.size()) return std::nullopt;
    if (text[i] == U'\n') ++line;
  }
  int64_t u = 0;
  while (i < text.size() && text[i] != U'\n' && u < p.character) u += units(text[i++], e);
  return i;
}

std::u32string random_text(std::mt19937& rng, int max_len) {
  static const char32_t kAlphabet[] = {U'a', U'b', U'x', U' ', U'\n', U'\n', U'\u00e9', U'\u65e5',
                                       U'\U0001F600', U'\u0301', U'{', U'\t'};
  std::u32string s(rng() % (max_len + 1), U'a');
  for (auto& c : s) c = kAlphabet[rng() % std::size(kAlphabet)];
  return s;
}

Position random_position(std::mt19937& rng, const std::u32string& text) {
  int64_t lines = 1 + std::count(text.begin(), text.end(), U'\n');
  return {static_cast<int64_t>(rng() % lines), static_cast<int64_t>(rng() % 12)};
}

class RandomEdits : public ::testing::TestWithParam<PositionEncoding> {};

TEST_P(RandomEdits, MatchNaiveReference) {
  const PositionEncoding e = GetParam();
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    std::u32string ref = random_text(rng, 40);
    TextDocument doc("file:///t", "plaintext", 1, to_utf8(ref));
    for (int step = 0; step < 80; ++step) {
      Position a = random_position(rng, ref), b = random_position(rng, ref);
      auto ia = ref_index(ref, a, e), ib = ref_index(ref, b, e);
      ASSERT_TRUE(ia.has_value() && ib.has_value()) << "seed " << seed;
      if (*ia > *ib) {
        std::swap(a, b);
        std::swap(ia, ib);
      }
      std::u32string insert = random_text(rng, 6);
      ASSERT_TRUE(doc.apply_change(Range{a, b}, to_utf8(insert), e)) << "seed " << seed;
      ref.replace(*ia, *ib - *ia, insert);
      ASSERT_EQ(doc.text(), to_utf8(ref)) << "seed " << seed << " step " << step;
      ASSERT_EQ(doc.line_count(), 1 + std::count(ref.begin(), ref.end(), U'\n'));
      // offset_of and position_of agree with the reference and with each other.
      Position p = random_position(rng, ref);
      auto off = doc.offset_of(p, e);
      ASSERT_TRUE(off);
      ASSERT_EQ(*off, to_utf8(ref.substr(0, *ref_index(ref, p, e))).size());
      Position back = doc.position_of(*off, e);
      ASSERT_EQ(doc.offset_of(back, e), off);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllEncodings, RandomEdits,
                         ::testing::Values(PositionEncoding::Utf8, PositionEncoding::Utf16,
                                           PositionEncoding::Utf32));

TEST(TextDocument, Utf16SurrogatePairsAndCombiningMarks) {
  // "e" + combining acute is two code points; the emoji is one code point, two UTF-16 units.
  TextDocument doc("u", "t", 1, "e\u0301\U0001F600z\n");
  EXPECT_EQ(doc.offset_of({0, 1}, PositionEncoding::Utf16), 1u);
  EXPECT_EQ(doc.offset_of({0, 2}, PositionEncoding::Utf16), 3u);
  EXPECT_EQ(doc.offset_of({0, 4}, PositionEncoding::Utf16), 7u);
  EXPECT_EQ(doc.offset_of({0, 3}, PositionEncoding::Utf32), 7u);
  EXPECT_EQ(doc.offset_of({0, 7}, PositionEncoding::Utf8), 7u);
  EXPECT_EQ(doc.offset_of({0, 4}, PositionEncoding::Utf8), 7u);  // inside the emoji: rounds up
  EXPECT_EQ(doc.position_of(7, PositionEncoding::Utf16), (Position{0, 4}));
  EXPECT_EQ(doc.position_of(8, PositionEncoding::Utf16), (Position{0, 5}));
  EXPECT_EQ(doc.position_of(9, PositionEncoding::Utf16), (Position{1, 0}));
}

TEST(TextDocument, LineBreaksCrLfAndLoneCr) {
  TextDocument doc("u", "t", 1, "a\r\nb\rc\nd");
  EXPECT_EQ(doc.line_count(), 4u);
  EXPECT_EQ(doc.offset_of({1, 0}, PositionEncoding::Utf16), 3u);
  EXPECT_EQ(doc.offset_of({1, 5}, PositionEncoding::Utf16), 4u);  // clamped to the line end
  EXPECT_EQ(doc.offset_of({3, 1}, PositionEncoding::Utf16), 8u);
  EXPECT_FALSE(doc.offset_of({4, 0}, PositionEncoding::Utf16));
  // Inserting \n right after a lone \r joins them into one break.
  ASSERT_TRUE(doc.apply_change(Range{{2, 0}, {2, 0}}, "\n", PositionEncoding::Utf16));
  EXPECT_EQ(doc.text(), "a\r\nb\r\nc\nd");
  EXPECT_EQ(doc.line_count(), 4u);
}

TEST(TextDocument, InvalidUtf8CountsBytesAsUnits) {
  TextDocument doc("u", "t", 1, std::string("a\xff\xfe" "b", 4));
  EXPECT_EQ(doc.offset_of({0, 3}, PositionEncoding::Utf16), 3u);
  EXPECT_EQ(count_code_units(doc.text(), PositionEncoding::Utf16), 4);
}

TEST(TextDocument, OutOfBoundsChangeLeavesTextUnchanged) {
  TextDocument doc("u", "t", 1, "one\ntwo");
  EXPECT_FALSE(doc.apply_change(Range{{2, 0}, {2, 0}}, "x", PositionEncoding::Utf16));
  EXPECT_FALSE(doc.apply_change(Range{{1, 2}, {0, 1}}, "x", PositionEncoding::Utf16));
  EXPECT_EQ(doc.text(), "one\ntwo");
  EXPECT_TRUE(doc.apply_change(std::nullopt, "new", PositionEncoding::Utf16));
  EXPECT_EQ(doc.text(), "new");
}

}  // namespace
}  // namespace ghostline::lsp

// Generated text is bytes: a character cut at the end, a stray continuation byte or a byte no
// character has are dropped, every valid character kept.
TEST(Utf8, WellFormedDropsCutAndStrayBytes) {
  EXPECT_EQ(ghostline::utf8_well_formed("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(ghostline::utf8_well_formed("caf\xC3"), "caf");                 // cut after the lead
  EXPECT_EQ(ghostline::utf8_well_formed("x = \xE2\x86"), "x = ");           // cut in a 3-byte one
  EXPECT_EQ(ghostline::utf8_well_formed("a\x80" "b\xFF" "c"), "abc");       // stray bytes
  EXPECT_EQ(ghostline::utf8_well_formed("\xC0\xAF/"), "/");                 // overlong form
  EXPECT_EQ(ghostline::utf8_well_formed("\xED\xA0\x80!"), "!");             // a surrogate
  EXPECT_EQ(ghostline::utf8_well_formed("\xF0\x9F\x98\x80\xF0\x9F"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(ghostline::utf8_well_formed(""), "");
}
