// Reads the real-looking per-language sample files of tests/syntax/samples/ (tests run from the
// project root).
#pragma once

#include "syntax/language.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ghostline::syntax::testing {

inline std::string read_sample(const std::string& file) {
  std::string path = "tests/syntax/samples/" + file;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open " + path + " (run the tests from the project root)");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A language by its registry name ("tsx"), which is not always an LSP languageId.
inline const Language* language_named(std::string_view name) {
  for (const Language* lang : all_languages()) {
    if (lang->name == name) return lang;
  }
  return nullptr;
}

}  // namespace ghostline::syntax::testing
