#include "engine/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/pretokenizer.h"
#include "gguf_test_writer.h"

namespace ghostline::engine {
namespace {

const std::string kDir = "../shared/data/tokenizer/";

struct Vector {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<Vector> read_vectors(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<Vector> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    out.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>()});
  }
  return out;
}

std::unique_ptr<Tokenizer> load(const std::string& name) {
  auto file = GgufFile::open(kDir + name + ".gguf");
  return Tokenizer::from_gguf(*file);
}

std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class SharedVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedVectors, MatchLlamaCppExactly) {
  auto tok = load(GetParam());
  for (const char* kind : {".published.jsonl", ".code.jsonl"}) {
    auto vectors = read_vectors(kDir + GetParam() + kind);
    EXPECT_GT(vectors.size(), 10u);
    int failures = 0;
    for (const auto& v : vectors) {
      auto ids = tok->encode(v.text);
      EXPECT_EQ(ids, v.ids) << kind << " text: " << nlohmann::json(v.text).dump()
                            << "\n got:      " << ids_string(ids)
                            << "\n expected: " << ids_string(v.ids);
      if (ids != v.ids && ++failures > 5) break;
    }
  }
}

TEST_P(SharedVectors, DecodeInvertsEncode) {
  auto tok = load(GetParam());
  for (const char* kind : {".published.jsonl", ".code.jsonl"}) {
    for (const auto& v : read_vectors(kDir + GetParam() + kind)) {
      EXPECT_EQ(tok->decode(tok->encode(v.text)), v.text);
      std::string pieces;
      for (int32_t id : v.ids) pieces += tok->token_bytes(id);
      if (tok->model() == "llama" && !pieces.empty() && pieces[0] == ' ') pieces.erase(0, 1);
      EXPECT_EQ(pieces, v.text);
    }
  }
}

// Random strings of code-like ASCII, multi-byte characters, whitespace runs and digits.
std::string random_text(std::mt19937& rng, size_t n) {
  static const std::vector<std::string> kAlphabet = {"a",        "b",
                                                     "Z",        "_",
                                                     "0",        "7",
                                                     " ",        " ",
                                                     "  ",       "\t",
                                                     "\n",       "\r\n",
                                                     "(",        ")",
                                                     "{",        "}",
                                                     "'s",       "'",
                                                     "\"",       "->",
                                                     "::",       ".",
                                                     ",",        ";",
                                                     "=",        "é",
                                                     "ß",        "Ж",
                                                     "中",       "文",
                                                     "한",       "🚀",
                                                     "\xcc\x81", "\xe2\x80\x8b",
                                                     "\xc2\xa0", "\xc2\x85",
                                                     "½",        "٣",
                                                     "…",        "—",
                                                     "<",        ">",
                                                     "$",        "~",
                                                     "\x01"};
  std::string s;
  for (size_t i = 0; i < n; ++i) s += kAlphabet[rng() % kAlphabet.size()];
  return s;
}

TEST_P(SharedVectors, RoundTripsRandomUtf8) {
  auto tok = load(GetParam());
  std::mt19937 rng(42);
  for (int i = 0; i < 300; ++i) {
    std::string text = random_text(rng, 1 + rng() % 60);
    EXPECT_EQ(tok->decode(tok->encode(text)), text) << nlohmann::json(text).dump();
  }
}

TEST_P(SharedVectors, InvalidUtf8DoesNotCrash) {
  auto tok = load(GetParam());
  // A byte survives encoding when the vocabulary has a token that decodes to it alone. Some
  // byte-level vocabularies lack tokens for bytes that valid UTF-8 never contains (starcoder),
  // or use their characters for user-defined tokens (deepseek-coder: C0, C1, F5-FF).
  std::vector<char> kept;
  for (int b = 0x80; b < 0x100; ++b) {
    std::string one(1, static_cast<char>(b));
    auto ids = tok->encode_continuation(one);
    if (ids.size() == 1 && tok->token_bytes(ids[0]) == one) kept.push_back(one[0]);
  }
  EXPECT_GE(kept.size(), 64u);
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string text, any;
    size_t n = 1 + rng() % 40;
    for (size_t k = 0; k < n; ++k) {
      bool high = rng() % 3 == 0;
      any += high ? static_cast<char>(0x80 + rng() % 128) : static_cast<char>(rng() % 128);
      text += high ? kept[rng() % kept.size()] : static_cast<char>(rng() % 128);
    }
    for (const std::string& s : {any, text}) {
      for (int32_t id : tok->encode(s)) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, tok->n_vocab());
      }
    }
    EXPECT_EQ(tok->decode(tok->encode(text)), text) << ::testing::PrintToString(text);
  }
}

// Where two strings first differ, with a little context, for readable failures.
std::string first_difference(const std::string& got, const std::string& want) {
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  if (i == got.size() && i == want.size()) return "";
  size_t from = i < 20 ? 0 : i - 20;
  return "at byte " + std::to_string(i) + ": got " +
         ::testing::PrintToString(got.substr(from, 50)) + ", want " +
         ::testing::PrintToString(want.substr(from, 50));
}

TEST_P(SharedVectors, RoundTripsRealCode) {
  auto tok = load(GetParam());
  // SentencePiece reads a literal "▁" in the text as a space (llama.cpp does the same), so
  // those vocabularies get sources that do not contain one.
  std::vector<const char*> paths = {"engine/gguf/gguf_file.cpp", "engine/tokenizer/bpe.cpp",
                                    "tests/engine/gguf_file_test.cpp"};
  if (tok->model() == "gpt2") paths.push_back("engine/tokenizer/tokenizer.cpp");
  for (const char* path : paths) {
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::string code{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_EQ(first_difference(tok->decode(tok->encode(code)), code), "") << path;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, SharedVectors,
                         ::testing::Values("deepseek-coder", "starcoder", "gpt-2", "llama-spm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Tokenizer, ReportsModelAndSpecials) {
  auto ds = load("deepseek-coder");
  EXPECT_EQ(ds->model(), "gpt2");
  EXPECT_EQ(ds->pre(), "deepseek-coder");
  EXPECT_EQ(ds->n_vocab(), 32256);
  const auto& s = ds->specials();
  EXPECT_EQ(s.bos, 32013);
  EXPECT_EQ(s.eos, 32014);
  EXPECT_TRUE(s.add_bos);
  EXPECT_EQ(s.fim_pre, ds->find_token("<｜fim▁begin｜>"));
  EXPECT_EQ(s.fim_suf, ds->find_token("<｜fim▁hole｜>"));
  EXPECT_EQ(s.fim_mid, ds->find_token("<｜fim▁end｜>"));
  EXPECT_EQ(s.eot, 32014);  // <｜end▁of▁sentence｜>
  EXPECT_TRUE(ds->is_control(*s.fim_pre));
  EXPECT_FALSE(ds->is_control(ds->find_token("def").value()));

  EXPECT_TRUE(ds->is_end_of_generation(32014));
  EXPECT_FALSE(ds->is_end_of_generation(32013));

  auto sc = load("starcoder");
  // <|endoftext|> (EOS and EOT), <fim_pad>, <repo_name>, <file_sep>.
  EXPECT_EQ(sc->end_of_generation(), (std::vector<int32_t>{0, 4, 5, 6}));
  EXPECT_EQ(sc->specials().fim_pre, 1);
  EXPECT_EQ(sc->specials().fim_mid, 2);
  EXPECT_EQ(sc->specials().fim_suf, 3);
  EXPECT_EQ(sc->specials().fim_pad, 4);
  EXPECT_EQ(sc->specials().fim_rep, 5);
  EXPECT_EQ(sc->specials().fim_sep, 6);
  EXPECT_FALSE(sc->specials().add_bos);

  auto spm = load("llama-spm");
  EXPECT_EQ(spm->model(), "llama");
  EXPECT_EQ(spm->specials().bos, 1);
  EXPECT_EQ(spm->specials().eos, 2);
  EXPECT_TRUE(spm->specials().add_bos);
  EXPECT_TRUE(spm->is_control(1));
  EXPECT_EQ(spm->token_text(1), "<s>");
  EXPECT_EQ(spm->token_bytes(3 + 0x41), "A");  // <0x41>
}

TEST(Tokenizer, DecodeContinuationKeepsLeadingSpaces) {
  auto spm = load("llama-spm");
  auto ids = spm->encode_continuation(" return x");
  EXPECT_EQ(spm->decode_continuation(ids), " return x");
  EXPECT_EQ(spm->decode(spm->encode("return x")), "return x");
  auto bpe = load("starcoder");
  EXPECT_EQ(bpe->decode_continuation(bpe->encode(" return x")), " return x");
  EXPECT_THROW(bpe->decode_continuation(std::vector<int32_t>{-1}), std::out_of_range);
}

TEST(Tokenizer, SpecialTokensAreParsedOnlyWhenAllowed) {
  auto sc = load("starcoder");
  const std::string text = "<fim_prefix>def f():<fim_suffix>\n<fim_middle>";
  auto plain = sc->encode(text);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(sc->decode(plain), text);
  auto special = sc->encode(text, true);
  ASSERT_GE(special.size(), 4u);
  EXPECT_EQ(special.front(), 1);
  EXPECT_EQ(special.back(), 2);
  EXPECT_EQ(std::count(special.begin(), special.end(), 3), 1);
  EXPECT_EQ(sc->decode(special), text);

  // deepseek-coder's FIM tokens are user-defined in the file; recognised as FIM tokens they
  // become control tokens and a file containing their text is not split on them.
  auto ds = load("deepseek-coder");
  const std::string fim = "<｜fim▁begin｜>x";
  auto ids = ds->encode(fim);
  EXPECT_NE(ids.front(), *ds->specials().fim_pre);
  EXPECT_EQ(ds->encode(fim, true).front(), *ds->specials().fim_pre);

  auto spm = load("llama-spm");
  auto with_bos = spm->encode("<s>hello", true);
  EXPECT_EQ(with_bos.front(), 1);
  EXPECT_NE(spm->encode("<s>hello").front(), 1);
}

TEST(Tokenizer, SegmentsCutAfterNewlinesConcatenate) {
  const std::string a = "def f(x):\n", b = "return x + 1\n", c = "print(f(2))";
  for (const char* name : {"deepseek-coder", "starcoder", "gpt-2", "llama-spm"}) {
    SCOPED_TRACE(name);
    auto tok = load(name);
    auto whole = tok->encode(a + b + c);
    auto parts = tok->encode(a);
    for (const auto& s : {b, c}) {
      auto more = tok->encode_continuation(s);
      parts.insert(parts.end(), more.begin(), more.end());
    }
    EXPECT_EQ(parts, whole);
    EXPECT_EQ(tok->decode(parts), a + b + c);
  }
}

// Splits with the named pre-tokenizer.
std::vector<std::string> split(std::string_view pre, std::string_view text) {
  PreTokenizer p(pre);
  std::vector<std::string_view> words;
  p.split(text, words);
  return {words.begin(), words.end()};
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Qwen2SplitsDigitsSingly) {
  // qwen2: contractions (any case), optional non-letter prefix before letters, single
  // digits, punctuation runs with trailing newlines, newline runs, whitespace.
  EXPECT_EQ(split("qwen2", "Hello world123 "), (Words{"Hello", " world", "1", "2", "3", " "}));
  EXPECT_EQ(split("qwen2", "I'M here, you'll"), (Words{"I", "'M", " here", ",", " you", "'ll"}));
  EXPECT_EQ(split("qwen2", "x = 42;\n\n    y"),
            (Words{"x", " =", " ", "4", "2", ";\n\n", "   ", " y"}));
  EXPECT_EQ(split("qwen2", "if (a)\n\treturn"), (Words{"if", " (", "a", ")\n", "\treturn"}));
  EXPECT_EQ(split("qwen2", "  \n  \n x"), (Words{"  \n  \n", " x"}));
  EXPECT_EQ(split("qwen2", "$foo.bar"), (Words{"$foo", ".bar"}));
  EXPECT_EQ(split("qwen2", "中文 text"), (Words{"中文", " text"}));
  EXPECT_EQ(split("qwen2", "end   "), (Words{"end", "   "}));
  // llama-bpe differs only in grouping up to three digits.
  EXPECT_EQ(split("llama-bpe", "x=1234567"), (Words{"x", "=", "123", "456", "7"}));
  EXPECT_EQ(split("qwen2", "x=1234567"), (Words{"x", "=", "1", "2", "3", "4", "5", "6", "7"}));
}

TEST(PreTokenizer, SeveralRegexesSplitInTurn) {
  // deepseek-coder: newlines alone, letters with one optional leading space, punctuation,
  // CJK runs, single digits; what no regex matches stays as it lies between matches.
  EXPECT_EQ(split("deepseek-coder", "a1b 22\n\nc"),
            (Words{"a", "1", "b", " ", "2", "2", "\n", "\n", "c"}));
  EXPECT_EQ(split("deepseek-coder", "int变量 = 1;"), (Words{"int", "变量", " = ", "1", ";"}));
  // starcoder: every digit alone, then GPT-2's regex within what is left.
  EXPECT_EQ(split("starcoder", "abc 123def  x"),
            (Words{"abc", " ", "1", "2", "3", "def", " ", " x"}));
  EXPECT_EQ(split("gpt-2", "abc 123def  x"), (Words{"abc", " 123", "def", " ", " x"}));
}

TEST(PreTokenizer, InvalidUtf8StaysWhole) {
  EXPECT_EQ(split("gpt-2", "ab\xff\xfe cd"), (Words{"ab", "\xff\xfe", " cd"}));
  EXPECT_EQ(split("qwen2", "\xe4\xb8"), (Words{"\xe4\xb8"}));
}

TEST(PreTokenizer, UnknownNameIsRefused) {
  EXPECT_THROW(PreTokenizer("no-such-pre"), std::runtime_error);
  for (const char* name : {"default", "gpt-2", "llama-bpe", "qwen2", "deepseek-coder",
                           "deepseek-llm", "starcoder", "refact", "smollm", "falcon"})
    EXPECT_NO_THROW(PreTokenizer{name}) << name;
}

}  // namespace
}  // namespace ghostline::engine

namespace ghostline::engine {
namespace {

using testing::GgufValue;
using testing::GgufWriter;

// GPT-2's printable character for each byte (bytes_to_unicode).
std::string byte_char(unsigned char b) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int next = 256;
    for (int c = 0; c < 256; ++c) {
      bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE);
      int cp = printable ? c : next++;
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
      t[c] = s;
    }
    return t;
  }();
  return table[b];
}

// A tiny byte-level BPE vocabulary: all 256 byte characters, then the merged tokens.
std::unique_ptr<Tokenizer> tiny_bpe(const std::string& pre, const std::vector<std::string>& merges,
                                    const std::vector<std::string>& extra_tokens,
                                    const std::string& dir_name) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_char(static_cast<unsigned char>(b)));
  for (const auto& t : extra_tokens) tokens.push_back(t);
  GgufWriter w;
  w.add("tokenizer.ggml.model", GgufValue::string("gpt2"));
  w.add("tokenizer.ggml.pre", GgufValue::string(pre));
  w.add("tokenizer.ggml.tokens", GgufValue::strings(tokens));
  w.add("tokenizer.ggml.merges", GgufValue::strings(merges));
  const std::string path = ::testing::TempDir() + dir_name + ".gguf";
  GgufWriter::write_file(path, w.build());
  auto file = GgufFile::open(path);
  return Tokenizer::from_gguf(*file);
}

TEST(TokenizerBpe, MergesLowestRankFirstAndLeftmostOnTies) {
  // Ranks: "b c" before "a b", so "abc" -> "a" + "bc"; "x x" applies left to right.
  auto tok = tiny_bpe("gpt-2", {"b c", "a b", "x x"}, {"bc", "ab", "xx"}, "tiny-ranks");
  EXPECT_EQ(tok->encode("abc"), (std::vector<int32_t>{'a', 256}));
  EXPECT_EQ(tok->encode("ab"), (std::vector<int32_t>{257}));
  EXPECT_EQ(tok->encode("xxx"), (std::vector<int32_t>{258, 'x'}));
  EXPECT_EQ(tok->decode(tok->encode("abc xxx")), "abc xxx");
}

TEST(TokenizerBpe, LlamaBpeTakesWholeWordTokensWithoutMerging) {
  // "abc" is a token that the merges cannot build ("a b" then nothing joins "ab" and "c").
  const std::vector<std::string> merges = {"a b"};
  const std::vector<std::string> extra = {"ab", "abc"};
  auto llama3 = tiny_bpe("llama-bpe", merges, extra, "tiny-llama3");
  auto gpt2 = tiny_bpe("gpt-2", merges, extra, "tiny-gpt2");
  EXPECT_EQ(llama3->encode("abc"), (std::vector<int32_t>{257}));
  EXPECT_EQ(gpt2->encode("abc"), (std::vector<int32_t>{256, 'c'}));
  EXPECT_TRUE(llama3->specials().add_bos);
  EXPECT_FALSE(gpt2->specials().add_bos);
}

TEST(TokenizerBpe, RefusesUnsupportedVocabularies) {
  auto open_tokenizer = [](GgufWriter& w, const std::string& name) -> std::string {
    const std::string path = ::testing::TempDir() + name + ".gguf";
    GgufWriter::write_file(path, w.build());
    try {
      auto file = GgufFile::open(path);
      Tokenizer::from_gguf(*file);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
  GgufWriter none;
  none.add("general.architecture", GgufValue::string("llama"));
  EXPECT_NE(open_tokenizer(none, "tok-none").find("tokenizer.ggml.model"), std::string::npos);
  GgufWriter bert;
  bert.add("tokenizer.ggml.model", GgufValue::string("bert"));
  bert.add("tokenizer.ggml.tokens", GgufValue::strings({"a"}));
  EXPECT_NE(open_tokenizer(bert, "tok-bert").find("\"bert\""), std::string::npos);
  GgufWriter pre;
  pre.add("tokenizer.ggml.model", GgufValue::string("gpt2"));
  pre.add("tokenizer.ggml.pre", GgufValue::string("future-pre"));
  pre.add("tokenizer.ggml.tokens", GgufValue::strings({"a"}));
  pre.add("tokenizer.ggml.merges", GgufValue::strings({}));
  EXPECT_NE(open_tokenizer(pre, "tok-pre").find("future-pre"), std::string::npos);
  GgufWriter types;
  types.add("tokenizer.ggml.model", GgufValue::string("llama"));
  types.add("tokenizer.ggml.tokens", GgufValue::strings({"a", "b"}));
  types.add("tokenizer.ggml.token_type", GgufValue::i32s({1}));
  EXPECT_NE(open_tokenizer(types, "tok-types").find("token_type"), std::string::npos);
}

// Encoding at every cut that splits_exactly_at() accepts gives the ids of the whole text (the
// contract the prompt assembler relies on); the cuts it refuses do differ somewhere.
TEST(TokenizerSegments, AcceptedCutsAreExactOnRealCode) {
  std::string code;
  for (const char* path : {"engine/gguf/gguf_file.cpp", "tests/engine/gguf_file_test.cpp"}) {
    std::ifstream in(path);
    code.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  code += "\r\nx = 1\r\n\r\n  y\n\n\n z \n\tw\n";
  auto encode_cut = [](const Tokenizer& tok, std::string_view text,
                       const std::vector<size_t>& cuts) {
    std::vector<int32_t> ids;
    size_t start = 0;
    for (size_t i = 0; i <= cuts.size(); ++i) {
      size_t end = i < cuts.size() ? cuts[i] : text.size();
      auto seg = text.substr(start, end - start);
      auto more = start == 0 ? tok.encode(seg) : tok.encode_continuation(seg);
      ids.insert(ids.end(), more.begin(), more.end());
      start = end;
    }
    return ids;
  };
  std::vector<std::pair<std::string, std::unique_ptr<Tokenizer>>> tokenizers;
  for (const char* name : {"deepseek-coder", "starcoder", "gpt-2", "llama-spm"}) {
    auto file = GgufFile::open(std::string("../shared/data/tokenizer/") + name + ".gguf");
    tokenizers.emplace_back(name, Tokenizer::from_gguf(*file));
  }
  // No qwen2 or llama-bpe vocabulary is shared: tiny ones whose merges join whitespace show
  // where their pre-tokenizers put word boundaries.
  const std::vector<std::string> merges = {"Ċ Ċ", "Ġ Ġ", "ĠĠ ĠĠ", "Ġ Ċ", "ĉ ĉ", "č Ċ", "ĠĠ Ċ"};
  const std::vector<std::string> merged = {"ĊĊ", "ĠĠ", "ĠĠĠĠ", "ĠĊ", "ĉĉ", "čĊ", "ĠĠĊ"};
  for (const char* pre : {"qwen2", "llama-bpe"})
    tokenizers.emplace_back(pre, tiny_bpe(pre, merges, merged, std::string("tiny-cut-") + pre));
  for (const auto& [name, tok] : tokenizers) {
    SCOPED_TRACE(name);
    std::vector<size_t> accepted, refused;
    for (size_t i = 1; i < code.size(); ++i) {
      if (code[i - 1] != '\n') {
        EXPECT_FALSE(tok->splits_exactly_at(code, i));
        continue;
      }
      (tok->splits_exactly_at(code, i) ? accepted : refused).push_back(i);
    }
    EXPECT_GT(accepted.size(), 50u);
    const auto whole = tok->encode(code);
    EXPECT_EQ(encode_cut(*tok, code, accepted), whole);
    if (!refused.empty()) {
      EXPECT_NE(encode_cut(*tok, code, refused), whole);
    }
  }
}

TEST(TokenizerThreads, ConcurrentEncodesAgree) {
  auto file = GgufFile::open("../shared/data/tokenizer/deepseek-coder.gguf");
  auto tok = Tokenizer::from_gguf(*file);
  std::ifstream in("engine/gguf/gguf_file.cpp");
  std::string code{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto expected = tok->encode(code);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        if (tok->encode(code) != expected) ++mismatches;
        if (tok->encode(code.substr(t * 100, 500)) != tok->encode(code.substr(t * 100, 500)))
          ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace ghostline::engine

namespace ghostline::engine {
namespace {

// CodeGemma's FIM tokens carry no *_token_id keys in converted files: they are found by their
// texts, and <|file_separator|> separates (and ends) files as <|file_sep|> does for Qwen.
TEST(TokenizerFim, FindsCodeGemmaFimTokensByText) {
  std::vector<std::string> tokens = {
      "<pad>",          "<eos>",          "<bos>",          "<unk>", "<|fim_prefix|>",
      "<|fim_middle|>", "<|fim_suffix|>", "<|file_separator|>", "▁def", "▁x"};
  // Single characters, so that the separator's text can be encoded as ordinary text.
  for (std::string_view c :
       {"▁", "<", "|", "f", "i", "l", "e", "_", "s", "p", "a", "r", "t", "o", ">"})
    tokens.emplace_back(c);
  testing::GgufWriter w;
  w.add("tokenizer.ggml.model", testing::GgufValue::string("llama"));
  w.add("tokenizer.ggml.tokens", testing::GgufValue::strings(tokens));
  w.add("tokenizer.ggml.scores", testing::GgufValue::f32s(std::vector<float>(tokens.size(), 0)));
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = types[1] = types[2] = 3;
  types[3] = 2;
  w.add("tokenizer.ggml.token_type", testing::GgufValue::i32s(types));
  w.add("tokenizer.ggml.bos_token_id", testing::GgufValue::u32(2));
  w.add("tokenizer.ggml.eos_token_id", testing::GgufValue::u32(1));
  const std::string path = ::testing::TempDir() + "codegemma-fim.gguf";
  testing::GgufWriter::write_file(path, w.build());
  auto tok = Tokenizer::from_gguf(*GgufFile::open(path));
  const auto& s = tok->specials();
  EXPECT_EQ(s.fim_pre, 4);
  EXPECT_EQ(s.fim_mid, 5);
  EXPECT_EQ(s.fim_suf, 6);
  EXPECT_EQ(s.fim_sep, 7);
  EXPECT_TRUE(tok->is_control(7));
  EXPECT_TRUE(tok->is_end_of_generation(7));
  // A FIM text inside a file is ordinary text, never the special token.
  const auto ids = tok->encode("<|file_separator|>");
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 7), 0);
}

}  // namespace
}  // namespace ghostline::engine
