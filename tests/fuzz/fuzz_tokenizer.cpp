// Every tokenizer on arbitrary text: ids within the vocabulary, decoding gives the text back,
// and a text encoded in two segments at a cut that splits_exactly_at() accepts gives the ids
// of the whole. The first byte picks the tokenizer and whether special tokens are parsed.
#include <algorithm>
#include <bitset>
#include <cstdint>
#include <vector>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_tokenizers.h"

namespace {

// Strict UTF-8 (RFC 3629): no overlong forms, surrogates or code points past U+10FFFF.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      unsigned char b = s[i + k];
      if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// Bytes that a vocabulary can represent: StarCoder's has no token for the byte 0xF1 (the lead
// byte of U+40000-U+7FFFF), and its encoder drops the byte as llama.cpp does.
const std::vector<std::bitset<256>>& representable_bytes() {
  static const std::vector<std::bitset<256>> all = [] {
    std::vector<std::bitset<256>> out;
    for (const auto& [name, tok] : ghostline::fuzz::shared_tokenizers()) {
      std::bitset<256> ok;
      for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        ok[b] = tok->decode(tok->encode(one)) == one;
      }
      out.push_back(ok);
    }
    return out;
  }();
  return all;
}

bool representable(std::string_view text, const std::bitset<256>& bytes) {
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return bytes[static_cast<unsigned char>(c)]; });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  representable_bytes();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& all = ghostline::fuzz::shared_tokenizers();
  const size_t which = data[0] % all.size();
  const auto& [name, tok] = all[which];
  const bool special = (data[0] / all.size()) & 1;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  auto ids = tok->encode(text, special);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tok->n_vocab(), "%s: id %d", name.c_str(), id);
  std::string back = tok->decode(ids);
  // Byte-level BPE and SentencePiece with byte fallback represent any valid UTF-8 exactly,
  // except that SentencePiece writes spaces as U+2581 and so decodes a U+2581 of the text as a
  // space (as llama.cpp does, whose ids these are).
  const bool spm = tok->model() == "llama";
  if (!special && valid_utf8(text) && representable(text, representable_bytes()[which]) &&
      !(spm && text.find("\xe2\x96\x81") != std::string_view::npos))
    FUZZ_CHECK(back == text, "%s: decode(encode(text)) differs (%zu bytes in, %zu out)",
               name.c_str(), text.size(), back.size());
  // A few of the cuts the prompt assembler may use (each check encodes the whole text again).
  int checked = 0;
  for (size_t cut = 1; cut < text.size() && !special && checked < 4; ++cut) {
    if (!tok->splits_exactly_at(text, cut)) continue;
    ++checked;
    auto head = tok->encode(text.substr(0, cut));
    auto tail = tok->encode_continuation(text.substr(cut));
    head.insert(head.end(), tail.begin(), tail.end());
    FUZZ_CHECK(head == ids, "%s: segments cut at %zu give other ids than the whole", name.c_str(),
               cut);
  }
  return 0;
}
