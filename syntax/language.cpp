#include "syntax/language.h"

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>

extern "C" {
const TSLanguage* tree_sitter_python();
const TSLanguage* tree_sitter_javascript();
const TSLanguage* tree_sitter_typescript();
const TSLanguage* tree_sitter_tsx();
const TSLanguage* tree_sitter_c();
const TSLanguage* tree_sitter_cpp();
const TSLanguage* tree_sitter_go();
const TSLanguage* tree_sitter_rust();
const TSLanguage* tree_sitter_java();
const TSLanguage* tree_sitter_lua();
}

namespace ghostline::syntax {
namespace detail {
// Rows of {language, kind, query text}, ended by a row of nullptrs; generated at build time
// from syntax/queries/ by syntax/embed_queries.cmake.
extern const char* const kEmbeddedQueries[][3];
extern const std::size_t kEmbeddedQueryCount;
}  // namespace detail

namespace {

constexpr size_t kQueryKinds = std::size(kAllQueryKinds);

struct QueryDeleter {
  void operator()(TSQuery* q) const { ts_query_delete(q); }
};

// The lazily compiled queries of one language.
struct LanguageQueries {
  std::array<std::once_flag, kQueryKinds> once;
  std::array<std::unique_ptr<TSQuery, QueryDeleter>, kQueryKinds> compiled;
};

struct Registry {
  std::vector<std::unique_ptr<Language>> owned;
  std::vector<const Language*> languages;
  std::vector<std::unique_ptr<LanguageQueries>> queries;  // parallel to `languages`
};

Language make(std::string name, std::vector<std::string> ids, std::vector<std::string> exts,
              const TSLanguage* ts, bool indent_blocks = false) {
  return Language{std::move(name), std::move(ids), std::move(exts), ts, indent_blocks};
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    std::vector<Language> table = {
        make("python", {"python"}, {".py", ".pyi", ".pyw"}, tree_sitter_python(), true),
        // JavaScript and JSX both go to tree-sitter-javascript: its grammar parses JSX itself,
        // and the TSX grammar would read some plain JavaScript as TypeScript (type arguments,
        // `as`, `satisfies`), so a .jsx file is best served by the JavaScript grammar.
        make("javascript", {"javascript", "javascriptreact"}, {".js", ".mjs", ".cjs", ".jsx"},
             tree_sitter_javascript()),
        make("typescript", {"typescript"}, {".ts", ".mts", ".cts"}, tree_sitter_typescript()),
        make("tsx", {"typescriptreact"}, {".tsx"}, tree_sitter_tsx()),
        make("c", {"c"}, {".c"}, tree_sitter_c()),
        // ".h" goes to C++ (as in VS Code): the C++ grammar also parses C headers, not the
        // reverse. An editor that says languageId "c" still gets the C grammar.
        make("cpp", {"cpp", "cuda-cpp"},
             {".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".h", ".inl",
              ".ipp", ".tpp", ".cu", ".cuh"},
             tree_sitter_cpp()),
        make("go", {"go"}, {".go"}, tree_sitter_go()),
        make("rust", {"rust"}, {".rs"}, tree_sitter_rust()),
        make("java", {"java"}, {".java"}, tree_sitter_java()),
        make("lua", {"lua"}, {".lua"}, tree_sitter_lua()),
    };
    for (auto& lang : table) {
      reg.owned.push_back(std::make_unique<Language>(std::move(lang)));
      reg.languages.push_back(reg.owned.back().get());
      reg.queries.push_back(std::make_unique<LanguageQueries>());
    }
    return reg;
  }();
  return r;
}

std::string_view embedded_query_file(std::string_view language, QueryKind kind) {
  for (size_t i = 0; i < detail::kEmbeddedQueryCount; ++i) {
    const auto& row = detail::kEmbeddedQueries[i];
    if (language == row[0] && query_kind_name(kind) == row[1]) return row[2];
  }
  return {};
}

// The query text of a language: its file, preceded by the files it names on a first line
// `; inherits: a,b` (as in Neovim), for a grammar that extends another (tsx extends typescript).
std::string embedded_query(std::string_view language, QueryKind kind, int depth = 0) {
  std::string_view file = embedded_query_file(language, kind);
  constexpr std::string_view kInherits = "; inherits:";
  if (!file.starts_with(kInherits) || depth > 4) return std::string(file);
  std::string_view line = file.substr(0, file.find('\n'));
  std::string text;
  for (std::string_view rest = line.substr(kInherits.size()); !rest.empty();) {
    size_t comma = rest.find(',');
    std::string_view base = rest.substr(0, comma);
    while (!base.empty() && base.front() == ' ') base.remove_prefix(1);
    while (!base.empty() && (base.back() == ' ' || base.back() == '\r')) base.remove_suffix(1);
    if (!base.empty()) text += embedded_query(base, kind, depth + 1) + "\n";
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return text + std::string(file);
}

std::string_view query_error_name(TSQueryError error) {
  switch (error) {
    case TSQueryErrorNone: return "none";
    case TSQueryErrorSyntax: return "syntax error";
    case TSQueryErrorNodeType: return "unknown node type";
    case TSQueryErrorField: return "unknown field";
    case TSQueryErrorCapture: return "unknown capture";
    case TSQueryErrorStructure: return "impossible pattern structure";
    case TSQueryErrorLanguage: return "incompatible language";
  }
  return "unknown error";
}

// The registry slot of `lang`: by address for the registry's own objects, else by name.
LanguageQueries* queries_of(const Language& lang, size_t* index) {
  const auto& reg = registry();
  for (size_t i = 0; i < reg.languages.size(); ++i) {
    if (reg.languages[i] == &lang || reg.languages[i]->name == lang.name) {
      *index = i;
      return reg.queries[i].get();
    }
  }
  return nullptr;
}

std::string_view extension_of(std::string_view uri) {
  uri = uri.substr(0, uri.find_first_of("?#"));
  size_t slash = uri.find_last_of("/\\");
  std::string_view file = slash == std::string_view::npos ? uri : uri.substr(slash + 1);
  size_t dot = file.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return {};
  return file.substr(dot);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

TSQuery* compile_query(const TSLanguage* language, std::string_view source, std::string_view file) {
  uint32_t offset = 0;
  TSQueryError error = TSQueryErrorNone;
  TSQuery* q = ts_query_new(language, source.data(), static_cast<uint32_t>(source.size()), &offset,
                            &error);
  if (q) return q;
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::string_view at = source.substr(std::min<size_t>(offset, source.size()));
  at = at.substr(0, at.find('\n'));
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ":" +
                           std::to_string(column) + " (byte " + std::to_string(offset) +
                           "): " + std::string(query_error_name(error)) + " at `" +
                           std::string(at) + "`");
}

std::string_view query_kind_name(QueryKind kind) {
  switch (kind) {
    case QueryKind::Comments: return "comments";
    case QueryKind::Blocks: return "blocks";
    case QueryKind::Definitions: return "definitions";
    case QueryKind::Imports: return "imports";
    case QueryKind::References: return "references";
  }
  return "unknown";
}

const TSQuery* Language::query(QueryKind kind) const {
  size_t index = 0;
  LanguageQueries* slot = queries_of(*this, &index);
  if (!slot) return nullptr;
  const Language& registered = *registry().languages[index];
  auto k = static_cast<size_t>(kind);
  std::call_once(slot->once[k], [&] {
    std::string source = embedded_query(registered.name, kind);
    if (source.empty()) return;
    bool inherits = source.size() != embedded_query_file(registered.name, kind).size();
    std::string file = "syntax/queries/" + registered.name + "/" +
                       std::string(query_kind_name(kind)) + ".scm" +
                       (inherits ? " (after the files it inherits)" : "");
    slot->compiled[k].reset(compile_query(registered.ts, source, file));
  });
  return slot->compiled[k].get();
}

const Language* find_language(std::string_view language_id, std::string_view uri) {
  const auto& langs = registry().languages;
  if (!language_id.empty()) {
    for (const Language* lang : langs) {
      for (const auto& id : lang->language_ids) {
        if (id == language_id) return lang;
      }
    }
  }
  std::string_view ext = extension_of(uri);
  if (ext.empty()) return nullptr;
  // Exact first, so that a case-sensitive convention (".C" for C++ on some projects) could be
  // added as its own row; then without case (".PY").
  for (bool exact : {true, false}) {
    for (const Language* lang : langs) {
      for (const auto& e : lang->extensions) {
        if (exact ? e == ext : iequals(e, ext)) return lang;
      }
    }
  }
  return nullptr;
}

std::span<const Language* const> all_languages() { return registry().languages; }

}  // namespace ghostline::syntax
