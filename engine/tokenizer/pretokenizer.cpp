#include "engine/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "base/utf8.h"

namespace ghostline::engine {
namespace {

// The regexes llama.cpp applies for each pre-tokenizer type (src/llama-vocab.cpp).
constexpr std::string_view kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kCjk = "[一-龥ࠀ-一가-퟿]+";

struct Spec {
  std::vector<std::string_view> regexes;
  bool ignore_merges = false;
};

std::optional<Spec> spec_for(std::string_view name) {
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (auto n : names)
      if (name == n) return true;
    return false;
  };
  if (name.empty() || name == "default")
    return Spec{{"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}};
  if (is({"llama3", "llama-v3", "llama-bpe"})) return Spec{{kLlama3}, true};
  if (is({"falcon3", "pixtral", "dbrx", "smaug-bpe"})) return Spec{{kLlama3}};
  if (is({"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"})) return Spec{{kQwen2}};
  if (name == "deepseek-coder")
    return Spec{{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}};
  if (name == "deepseek-llm")
    return Spec{
        {"[\r\n]",
         "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-"
         "ԯԱ-"
         "ՖႠ-"
         "ჅᎠ-"
         "Ᏽᏸ-"
         "ᏽᲐ-"
         "ᲺᲽ-Ჿᴀ-ᴫᵫ-"
         "ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌῐ-\\x{1FD3}ῖ-\\x{1FDB}ῠ-Ῥῲ-"
         "ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-"
         "ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-"
         "ﬆﬓ-"
         "ﬗＡ-"
         "Ｚａ-"
         "ｚ𐐀-"
         "𐑏𐒰-"
         "𐓓𐓘-"
         "𐓻𐲀-"
         "𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
         "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", kCjk, "\\p{N}+"}};
  if (name == "falcon") return Spec{{"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}};
  if (is({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}))
    return Spec{{"\\p{N}", kGpt2}};
  if (is({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es",
          "jina-v2-de", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais"}))
    return Spec{{kGpt2}};
  return std::nullopt;
}

// llama.cpp's whitespace set (Unicode White_Space). PCRE2's \s with UCP differs from it in
// U+0085, so \s and \S are spelled out.
constexpr std::string_view kWhitespace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

std::string expand_whitespace(std::string_view re) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      char n = re[++i];
      if (n == 's') {
        if (in_class) {
          out += kWhitespace;
        } else {
          out += '[';
          out += kWhitespace;
          out += ']';
        }
      } else if (n == 'S' && !in_class) {
        out += "[^";
        out += kWhitespace;
        out += ']';
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() { pcre2_code_free(code); }
};

std::vector<std::string_view> PreTokenizer::regexes_for(std::string_view name) {
  auto spec = spec_for(name);
  return spec ? spec->regexes : std::vector<std::string_view>{};
}

PreTokenizer::PreTokenizer(std::string_view name) {
  auto spec = spec_for(name);
  if (!spec)
    throw std::runtime_error("unsupported pre-tokenizer \"" + std::string(name) +
                             "\" (tokenizer.ggml.pre); supported: default, gpt-2, llama-bpe, "
                             "qwen2, deepseek-coder, deepseek-llm, starcoder, refact, smollm, "
                             "falcon, command-r, mpt, olmo, stablelm2, dbrx and aliases");
  ignore_merges_ = spec->ignore_merges;
  if (spec->regexes.front() == "[\r\n]")
    newline_cut_ = NewlineCut::kAlways;
  else if (spec->regexes.front() == kLlama3 || spec->regexes.front() == kQwen2)
    newline_cut_ = NewlineCut::kBeforeNonSpace;
  for (std::string_view re : spec->regexes) {
    std::string pattern = expand_whitespace(re);
    int err = 0;
    PCRE2_SIZE err_at = 0;
    auto r = std::make_unique<Regex>();
    r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                            PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_at, nullptr);
    if (!r->code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw std::runtime_error("pre-tokenizer \"" + std::string(name) +
                               "\": regex does not compile (" + reinterpret_cast<const char*>(msg) +
                               ")");
    }
    r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
    regexes_.push_back(std::move(r));
  }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

// Per-thread match state: a JIT stack assigned through a match context makes each match call
// cheaper than the default on-stack one and lets deep backtracking grow to 1 MiB.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  MatchState() {
    if (!data || !context) throw std::bad_alloc();
    if (stack) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  struct Piece {
    size_t begin, end;
    bool final;  // invalid UTF-8 or a single character: no regex can split it further
  };
  std::vector<Piece> pieces, next;
  for (size_t pos = 0; pos < text.size();) {
    size_t valid = utf8_valid_prefix(text.substr(pos));
    if (valid > 0) {
      pieces.push_back({pos, pos + valid, false});
      pos += valid;
    } else {
      size_t bad = utf8_invalid_prefix(text.substr(pos));
      pieces.push_back({pos, pos + bad, true});
      pos += bad;
    }
  }

  thread_local MatchState state;
  const auto* subject_base = reinterpret_cast<PCRE2_SPTR>(text.data());
  auto emit = [&](size_t begin, size_t end) {
    bool single = utf8_sequence_length(text.substr(begin, end - begin)) == end - begin;
    next.push_back({begin, end, single});
  };

  for (const auto& re : regexes_) {
    next.clear();
    next.reserve(pieces.size() * 2);
    for (const Piece& p : pieces) {
      if (p.final) {
        next.push_back(p);
        continue;
      }
      const PCRE2_SPTR subject = subject_base + p.begin;
      const size_t len = p.end - p.begin;
      size_t last = 0, at = 0;
      while (at < len) {
        int rc = re->jit ? pcre2_jit_match(re->code, subject, len, at, 0, state.data, state.context)
                         : PCRE2_ERROR_JIT_STACKLIMIT;
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // or no JIT: the interpreter has no such limit
          rc = pcre2_match(re->code, subject, len, at, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                           state.data, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof msg);
          throw std::runtime_error(std::string("pre-tokenizer regex failed: ") +
                                   reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
        size_t mb = ov[0], me = ov[1];
        if (me == mb) {  // an empty match: step over one character
          at = mb + 1;
          while (at < len && (subject[at] & 0xC0) == 0x80) ++at;
          continue;
        }
        if (mb > last) emit(p.begin + last, p.begin + mb);
        emit(p.begin + mb, p.begin + me);
        last = at = me;
      }
      if (last == 0) {
        next.push_back(p);  // nothing matched: the piece stays whole
      } else if (last < len) {
        emit(p.begin + last, p.end);
      }
    }
    pieces.swap(next);
  }
  for (const Piece& p : pieces) words.push_back(text.substr(p.begin, p.end - p.begin));
}

}  // namespace ghostline::engine
