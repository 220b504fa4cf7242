#include "syntax/language.h"

#include "syntax/document_tree.h"
#include "syntax/sample_file.h"

#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

namespace ghostline::syntax {
namespace {

TEST(Language, EveryGrammarHasAnAbiThisRuntimeLoadsAndParses) {
  ASSERT_EQ(all_languages().size(), 10u);
  for (const Language* lang : all_languages()) {
    SCOPED_TRACE(lang->name);
    ASSERT_NE(lang->ts, nullptr);
    uint32_t abi = ts_language_version(lang->ts);
    EXPECT_GE(abi, static_cast<uint32_t>(TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION));
    EXPECT_LE(abi, static_cast<uint32_t>(TREE_SITTER_LANGUAGE_VERSION));
    DocumentTree tree(*lang, "x");
    EXPECT_FALSE(ts_node_is_null(ts_tree_root_node(tree.tree())));
  }
}

TEST(Language, EveryQueryOfEveryLanguageCompiles) {
  for (const Language* lang : all_languages()) {
    for (QueryKind kind : kAllQueryKinds) {
      SCOPED_TRACE(lang->name + "/" + std::string(query_kind_name(kind)));
      const TSQuery* q = nullptr;
      EXPECT_NO_THROW(q = lang->query(kind));
      ASSERT_NE(q, nullptr) << "missing query file";
      EXPECT_GT(ts_query_pattern_count(q), 0u);
      EXPECT_EQ(lang->query(kind), q) << "compiled once, then reused";
    }
  }
}

TEST(Language, AQueryThatDoesNotCompileIsALoudError) {
  const TSLanguage* py = find_language("python")->ts;
  auto message = [&](std::string_view source) {
    try {
      ts_query_delete(compile_query(py, source, "syntax/queries/python/blocks.scm"));
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("compiled");
  };
  EXPECT_EQ(
      message("(block) @block\n(no_such_node) @x"),
      "syntax/queries/python/blocks.scm:2:2 (byte 16): unknown node type at `no_such_node) @x`");
  EXPECT_EQ(message("(call nosuchfield: (identifier))"),
            "syntax/queries/python/blocks.scm:1:7 (byte 6): unknown field at `nosuchfield: "
            "(identifier))`");
  EXPECT_NE(message("((block) @b"), "compiled");
  EXPECT_EQ(message("(block) @block"), "compiled");
}

TEST(Language, NamesAndIdsAreUnique) {
  std::set<std::string> names, ids, extensions;
  for (const Language* lang : all_languages()) {
    EXPECT_TRUE(names.insert(lang->name).second) << lang->name;
    for (const auto& id : lang->language_ids) EXPECT_TRUE(ids.insert(id).second) << id;
    for (const auto& ext : lang->extensions) EXPECT_TRUE(extensions.insert(ext).second) << ext;
  }
}

TEST(FindLanguage, ByLspLanguageId) {
  struct Case { const char* id; const char* name; };
  for (auto [id, name] : {Case{"python", "python"}, Case{"javascript", "javascript"},
                          Case{"javascriptreact", "javascript"}, Case{"typescript", "typescript"},
                          Case{"typescriptreact", "tsx"}, Case{"c", "c"}, Case{"cpp", "cpp"},
                          Case{"go", "go"}, Case{"rust", "rust"}, Case{"java", "java"},
                          Case{"lua", "lua"}}) {
    const Language* lang = find_language(id);
    ASSERT_NE(lang, nullptr) << id;
    EXPECT_EQ(lang->name, name) << id;
  }
}

TEST(FindLanguage, TheIdWinsOverTheExtension) {
  // An editor that says "c" for a header gets the C grammar, though ".h" alone means C++.
  EXPECT_EQ(find_language("c", "file:///src/ring.h")->name, "c");
  EXPECT_EQ(find_language("", "file:///src/ring.h")->name, "cpp");
}

TEST(FindLanguage, ByExtensionOfUriOrPath) {
  struct Case { const char* uri; const char* name; };
  for (auto [uri, name] : {Case{"file:///home/u/app/main.py", "python"},
                           Case{"stubs/types.pyi", "python"},
                           Case{"file:///w/web/index.mjs", "javascript"},
                           Case{"file:///w/web/App.jsx", "javascript"},
                           Case{"file:///w/web/api.ts", "typescript"},
                           Case{"file:///w/web/App.tsx", "tsx"},
                           Case{"/usr/src/ring.c", "c"},
                           Case{"file:///w/matrix.cc", "cpp"},
                           Case{"file:///w/matrix.hpp", "cpp"},
                           Case{"file:///w/cmd/main.go", "go"},
                           Case{"file:///w/src/lib.rs", "rust"},
                           Case{"file:///w/src/Main.java", "java"},
                           Case{"file:///w/init.lua", "lua"},
                           Case{"file:///w/SCRIPT.PY", "python"},
                           Case{"file:///w/a.b/tool.py?version=3#L10", "python"}}) {
    const Language* lang = find_language("", uri);
    ASSERT_NE(lang, nullptr) << uri;
    EXPECT_EQ(lang->name, name) << uri;
  }
  // An unknown languageId falls back to the extension.
  EXPECT_EQ(find_language("plaintext-ish", "file:///w/x.go")->name, "go");
}

TEST(FindLanguage, UnknownLanguagesHaveNoGrammar) {
  EXPECT_EQ(find_language("markdown", "file:///w/README.md"), nullptr);
  EXPECT_EQ(find_language("plaintext"), nullptr);
  EXPECT_EQ(find_language("", "file:///w/Makefile"), nullptr);
  EXPECT_EQ(find_language("", "file:///w/.gitignore"), nullptr);
  EXPECT_EQ(find_language("", "file:///w.py/notes"), nullptr);  // a dot in a folder name
  EXPECT_EQ(find_language(""), nullptr);
}

TEST(Language, OnlyPythonEndsBlocksByDedent) {
  for (const Language* lang : all_languages()) {
    EXPECT_EQ(lang->indent_blocks, lang->name == "python") << lang->name;
  }
}

}  // namespace
}  // namespace ghostline::syntax
