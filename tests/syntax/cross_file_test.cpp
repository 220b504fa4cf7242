// Context from other open documents: the definitions of the names used near the cursor, in a
// stable order and within budget.
#include "syntax/cross_file.h"

#include <gtest/gtest.h>

#include "syntax/document_tree.h"
#include "syntax/language.h"

namespace ghostline::syntax {
namespace {

const std::string kUtil =
    "import os\n\n"
    "def load_config(env):\n    \"\"\"Reads the settings.\"\"\"\n    return {k: v for k, v in "
    "env.items()}\n\n"
    "class Server:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n    def run(self):\n   "
    "     pass\n\n"
    "def unrelated():\n    return 42\n";

class CrossFile : public ::testing::Test {
 protected:
  void SetUp() override {
    trees.open("util", "python", "file:///home/u/proj/pkg/util.py", kUtil);
    index.opened("util", prompt_path("file:///home/u/proj/pkg/util.py"));
    trees.open("main", "python", "file:///home/u/proj/pkg/main.py", "def main():\n    pass\n");
    index.opened("main", "pkg/main.py");
  }
  DocumentTrees trees;
  CrossFileIndex index;
};

TEST_F(CrossFile, FindsTheDefinitionsOfTheNamesUsed) {
  const std::vector<std::string> names = {"Server", "load_config", "print"};
  const auto files = index.context_for("main", names, trees, CrossFileLimits{});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].path, "proj/pkg/util.py");
  // In document order whatever the order of the names, whole heads of definitions.
  EXPECT_EQ(files[0].text,
            "def load_config(env):\n    \"\"\"Reads the settings.\"\"\"\n    return {k: v for k, v "
            "in env.items()}\n\n"
            "class Server:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n    def "
            "run(self):\n        pass");
  const std::vector<std::string> reversed = {"load_config", "Server"};
  EXPECT_EQ(index.context_for("main", reversed, trees, CrossFileLimits{})[0].text, files[0].text);
  // Never the document's own definitions.
  EXPECT_TRUE(index.context_for("util", names, trees, CrossFileLimits{}).empty());
}

TEST_F(CrossFile, KeepsToItsBudgetAndFollowsEdits) {
  CrossFileLimits small;
  small.max_bytes = 80;
  const std::vector<std::string> names = {"load_config", "Server"};
  const auto files = index.context_for("main", names, trees, small);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_LE(files[0].text.size(), small.max_bytes);
  EXPECT_EQ(files[0].text.rfind("def load_config", 0), 0u);

  // Renaming a definition in the other document is seen on the next request.
  const size_t at = kUtil.find("load_config");
  trees.edit("util", at, at + 4, "read");
  index.edited("util", at + 4);
  const std::vector<std::string> renamed = {"read_config"};
  const auto after = index.context_for("main", renamed, trees, CrossFileLimits{});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].text.rfind("def read_config", 0), 0u);
  index.closed("util");
  EXPECT_TRUE(index.context_for("main", renamed, trees, CrossFileLimits{}).empty());
}

TEST_F(CrossFile, TheDefinitionLastEditedElsewhereComesAlong) {
  EXPECT_TRUE(index.context_for("main", {}, trees, CrossFileLimits{}).empty());
  const size_t at = kUtil.find("return 42");
  trees.edit("util", at + 7, at + 9, "43");
  index.edited("util", at + 9);
  const auto files = index.context_for("main", {}, trees, CrossFileLimits{});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].text, "def unrelated():\n    return 43");
}

TEST(PromptPath, KeepsTheLastComponents) {
  EXPECT_EQ(prompt_path("file:///home/u/proj/src/app/main.py"), "src/app/main.py");
  EXPECT_EQ(prompt_path("file:///main.py"), "main.py");
  EXPECT_EQ(prompt_path("untitled:Untitled-1"), "untitled:Untitled-1");
}

}  // namespace
}  // namespace ghostline::syntax
