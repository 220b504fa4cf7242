// The request's text: one immutable text shared by its copies and by the document version it
// was taken from.
#include "lsp/shared_text.h"

#include <gtest/gtest.h>

#include "lsp/text_document.h"

namespace ghostline::lsp {
namespace {

TEST(SharedText, CopiesShareOneTextAndAppendingMakesANewOne) {
  SharedText a = std::string("def f():\n");
  SharedText b = a;
  EXPECT_TRUE(b.same_as(a));
  EXPECT_EQ(b.data(), a.data());
  b += "    return 1\n";
  EXPECT_FALSE(b.same_as(a));
  EXPECT_EQ(a, "def f():\n");
  EXPECT_EQ(b, "def f():\n    return 1\n");
  EXPECT_EQ(b.substr(9, 4), "    ");
  EXPECT_EQ(b.find("return"), 13u);
  EXPECT_TRUE(SharedText().empty());
}

TEST(SharedText, KeepsTheDocumentVersionItWasTakenFromAlive) {
  auto doc = std::make_shared<const TextDocument>("file:///a.py", "python", 3, "x = 1\n");
  const char* bytes = doc->text().data();
  SharedText text(std::shared_ptr<const std::string>(doc, &doc->text()));
  EXPECT_EQ(doc.use_count(), 2) << "the text shares the document, it does not copy it";
  doc.reset();
  EXPECT_EQ(text.data(), bytes);
  EXPECT_EQ(text, "x = 1\n");
}

}  // namespace
}  // namespace ghostline::lsp
