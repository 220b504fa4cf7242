// Character classes of source text shared by the layers that look at words.
#pragma once

namespace ghostline {

// A byte of an identifier: ASCII letters, digits, '_' and any byte of a non-ASCII character
// (identifiers in most languages may hold them).
inline bool is_identifier_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '_' ||
         (u & 0x80);
}

}  // namespace ghostline
