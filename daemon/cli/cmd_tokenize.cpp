// `ghostline tokenize -m FILE`: tokenizes stdin with a model's vocabulary, for scripts and
// for checking the tokenizer against other implementations.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <span>
#include <string>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/model_names.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "base/utf8.h"

namespace ghostline::daemon {
namespace {

// JSON string literal of `bytes`; bytes that are not valid UTF-8 (pieces of a character split
// across tokens) are written as \xNN, which JSON itself does not have.
std::string json_quoted(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size();) {
    auto c = static_cast<unsigned char>(bytes[i]);
    size_t n = utf8_sequence_length(bytes.substr(i));
    char buf[8];
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
      continue;
    }
    if (n > 1) {
      out += bytes.substr(i, n);
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    i += n;
  }
  out += '"';
  return out;
}

}  // namespace

int tokenize_main(std::span<char* const> args) {
  std::string model;
  bool pieces = false, special = false, bos = false;
  ArgParser p("ghostline tokenize",
              "Read text from stdin and print its token ids on one line, separated by spaces.");
  p.option("-m,--model", "FILE|NAME",
           "GGUF file (or pulled model) whose vocabulary to use (required)", &model);
  p.flag("--pieces",
         "print each token's bytes as a JSON string instead of its id (bytes of a character "
         "split across tokens appear as \\xNN)",
         &pieces);
  p.flag("--special",
         "read special-token texts in the input (e.g. <fim_prefix>) as those tokens; by default "
         "they are ordinary text",
         &special);
  p.flag("--bos", "start with the BOS token when the model adds one", &bos);
  if (auto rc = p.parse(args)) return *rc;
  if (model.empty()) {
    std::fprintf(stderr,
                 "ghostline tokenize: -m FILE is required\nTry 'ghostline tokenize --help'.\n");
    return 2;
  }

  std::unique_ptr<engine::Tokenizer> tok;
  try {
    auto file = engine::GgufFile::open(resolve_model_argument(model));
    tok = engine::Tokenizer::from_gguf(*file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline tokenize: %s\n", e.what());
    return 1;
  }

  std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  std::vector<int32_t> ids;
  const auto& sp = tok->specials();
  if (bos && sp.add_bos && sp.bos) ids.push_back(*sp.bos);
  auto body = tok->encode(text, special);
  ids.insert(ids.end(), body.begin(), body.end());

  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += pieces ? json_quoted(tok->token_bytes(ids[i])) : std::to_string(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  return 0;
}

}  // namespace ghostline::daemon
