#include "lsp/auth_token.h"

#include <cstddef>

namespace ghostline::lsp {

bool tokens_equal(std::string_view presented, std::string_view expected) {
  // Every byte of `expected` is compared whatever the lengths; no early exit. The volatile
  // accumulator keeps the compiler from turning the loop back into a short-circuiting memcmp.
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff = diff | (p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

}  // namespace ghostline::lsp
