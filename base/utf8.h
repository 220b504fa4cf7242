// Small UTF-8 helpers (tokenizers, LSP positions, completion text). Validity follows RFC 3629 (no
// overlong forms, no surrogates, nothing above U+10FFFF), as PCRE2 checks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ghostline {

// Length of the valid sequence starting at s[0], or 0 when s[0] does not start one.
inline size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned char c = b[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
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
    return 0;
  }
  if (s.size() < n) return 0;
  if (b[1] < lo || b[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if ((b[i] & 0xC0) != 0x80) return 0;
  return n;
}

// Characters (code points) of valid UTF-8 text: the bytes that are not continuation bytes.
inline size_t utf8_code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Length of the longest valid UTF-8 prefix of s.
inline size_t utf8_valid_prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(s.substr(i));
    if (n == 0) break;
    i += n;
  }
  return i;
}

// Length of the run of bytes at the start of s that do not begin a valid sequence.
inline size_t utf8_invalid_prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && utf8_sequence_length(s.substr(i)) == 0) ++i;
  return i;
}

// s without the bytes that are not part of a valid sequence: what a model generated, byte by
// byte, made fit to show and to send as JSON (a character cut at the end of a completion, or
// bytes no character has, are dropped rather than replaced by U+FFFD inside code).
inline std::string utf8_well_formed(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s.substr(i));
    if (n == 0) {
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

// Length of the character starting with lead byte c, as llama.cpp counts it (1 for bytes
// that cannot start a sequence).
inline size_t utf8_len_from_lead(unsigned char c) {
  static constexpr unsigned char kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[c >> 4];
}

inline void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the character at s[i] (any lead byte, lenient), advancing i.
inline uint32_t utf8_decode_lenient(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = utf8_len_from_lead(c);
  if (n == 1 || i + n > s.size()) {
    ++i;
    return c;
  }
  uint32_t cp = c & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

}  // namespace ghostline
