#include "lsp/document_store.h"

#include <functional>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

namespace ghostline::lsp {
namespace {

// Hears the edits through a function, and which keys were opened and closed.
class Listener : public DocumentListener {
 public:
  using OnEdit = std::function<void(const DocumentKey& key, std::span<const DocumentEdit>)>;
  explicit Listener(OnEdit on_edit = {}) : on_edit_(std::move(on_edit)) {}
  void opened(const DocumentKey& key, const TextDocument&) override { opened_keys.push_back(key); }
  void edited(const DocumentKey& key, const TextDocument&,
              std::span<const DocumentEdit> edits) override {
    if (on_edit_) on_edit_(key, edits);
  }
  void closed(const DocumentKey& key) override { closed_keys.push_back(key); }
  std::vector<std::string> opened_keys, closed_keys;

 private:
  OnEdit on_edit_;
};

struct Heard {
  std::string uri;
  std::vector<DocumentEdit> edits;
};

TEST(DocumentStore, EmitsTheByteRangeOfEachChange) {
  DocumentStore store;
  std::vector<Heard> heard;
  Listener listener([&](const std::string& uri, std::span<const DocumentEdit> edits) {
    heard.push_back({uri, {edits.begin(), edits.end()}});
  });
  store.add_listener(listener);
  store.open("file:///a.py", "python", 1, "héllo\nworld\n");
  const TextDocumentContentChangeEvent changes[] = {
      {.range = Range{{0, 2}, {0, 2}}, .text = "X"},  // utf-16 column 2 is after 'é' (2 bytes)
      {.range = Range{{1, 0}, {1, 5}}, .text = "there"},
  };
  ASSERT_EQ(store.change("file:///a.py", 2, changes, PositionEncoding::Utf16),
            DocumentStore::ChangeResult::Applied);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].uri, "file:///a.py");
  ASSERT_EQ(heard[0].edits.size(), 2u);
  EXPECT_EQ(heard[0].edits[0].begin, 3u);
  EXPECT_EQ(heard[0].edits[0].end, 3u);
  EXPECT_EQ(heard[0].edits[0].new_text, "X");
  EXPECT_EQ(heard[0].edits[1].begin, 8u);  // offsets after the first edit
  EXPECT_EQ(heard[0].edits[1].end, 13u);
  EXPECT_EQ(heard[0].edits[1].version, 2);
  EXPECT_EQ(store.find("file:///a.py")->text(), "héXllo\nthere\n");
  EXPECT_EQ(store.find("file:///a.py")->version(), 2);
}

TEST(DocumentStore, ListenersHearEachOpenAndCloseUnderTheStoresKeys) {
  DocumentStore store("7\n");
  Listener listener;
  store.add_listener(listener);
  store.open("file:///a.py", "python", 1, "a\n");
  store.open("file:///b.py", "python", 1, "b\n");
  EXPECT_EQ(store.key("file:///a.py"), "7\nfile:///a.py");
  EXPECT_EQ(listener.opened_keys, (std::vector<std::string>{"7\nfile:///a.py", "7\nfile:///b.py"}));
  EXPECT_TRUE(store.close("file:///a.py"));
  EXPECT_FALSE(store.close("file:///a.py"));
  EXPECT_EQ(listener.closed_keys, (std::vector<std::string>{"7\nfile:///a.py"}));
  store.clear();  // the session ends: what is kept of its documents goes with them
  EXPECT_EQ(listener.closed_keys, (std::vector<std::string>{"7\nfile:///a.py", "7\nfile:///b.py"}));
  EXPECT_EQ(store.size(), 0u);
}

TEST(DocumentStore, AWholeTextChangeBecomesTheSmallestEdit) {
  DocumentStore store;
  std::vector<DocumentEdit> last;
  Listener listener([&](const std::string&, std::span<const DocumentEdit> e) {
    last.assign(e.begin(), e.end());
  });
  store.add_listener(listener);
  store.open("u", "c", 1, "int x = 1;\n");
  const TextDocumentContentChangeEvent full[] = {{.range = std::nullopt, .text = "int xy = 1;\n"}};
  store.change("u", 2, full, PositionEncoding::Utf8);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].begin, 5u);
  EXPECT_EQ(last[0].end, 5u);
  EXPECT_EQ(last[0].new_text, "y");
}

TEST(DocumentStore, AChangeOutsideTheDocumentLeavesItAsItWas) {
  DocumentStore store;
  int heard = 0;
  Listener listener([&](const std::string&, std::span<const DocumentEdit>) { ++heard; });
  store.add_listener(listener);
  store.open("u", "c", 1, "ab\n");
  const TextDocumentContentChangeEvent changes[] = {
      {.range = Range{{0, 0}, {0, 0}}, .text = "x"},
      {.range = Range{{9, 0}, {9, 0}}, .text = "y"},
  };
  Range bad;
  EXPECT_EQ(store.change("u", 2, changes, PositionEncoding::Utf8, &bad),
            DocumentStore::ChangeResult::OutOfRange);
  EXPECT_EQ(bad.start.line, 9);
  EXPECT_EQ(store.find("u")->text(), "ab\n");
  EXPECT_EQ(store.find("u")->version(), 1);
  EXPECT_EQ(heard, 0);
  EXPECT_EQ(store.change("v", 2, changes, PositionEncoding::Utf8),
            DocumentStore::ChangeResult::NotOpen);
}

// Applying the emitted edits to the old text, by bytes, gives the new text: random edits in
// every encoding.
TEST(DocumentStore, EditsReplayedOnTheOldTextGiveTheNewText) {
  std::mt19937 rng(11);
  const std::string pieces[] = {"a", "é", "😀", "\n", "\r\n", "xyz", ""};
  for (auto encoding : {PositionEncoding::Utf8, PositionEncoding::Utf16, PositionEncoding::Utf32}) {
    DocumentStore store;
    std::string mirror = "start\nline two\n";
    Listener listener([&](const std::string&, std::span<const DocumentEdit> edits) {
      for (const auto& e : edits) mirror.replace(e.begin, e.end - e.begin, e.new_text);
    });
    store.add_listener(listener);
    store.open("u", "t", 1, mirror);
    for (int step = 0; step < 300; ++step) {
      auto doc = store.find("u");
      const size_t n = doc->text().size();
      size_t a = rng() % (n + 1), b = rng() % (n + 1);
      if (a > b) std::swap(a, b);
      TextDocumentContentChangeEvent change;
      change.text = pieces[rng() % std::size(pieces)] + pieces[rng() % std::size(pieces)];
      if (rng() % 5) {
        // Offsets inside a character map to one of its ends; keep the range ordered.
        Position pa = doc->position_of(a, encoding), pb = doc->position_of(b, encoding);
        if (std::tie(pb.line, pb.character) < std::tie(pa.line, pa.character)) std::swap(pa, pb);
        change.range = Range{pa, pb};
      } else
        change.text = doc->text().substr(0, a) + change.text + doc->text().substr(b);
      const TextDocumentContentChangeEvent one[] = {change};
      ASSERT_EQ(store.change("u", step + 2, one, encoding), DocumentStore::ChangeResult::Applied)
          << "step " << step << " " << a << ".." << b << " of "
          << nlohmann::json(doc->text()).dump() << " range "
          << (change.range ? nlohmann::json(*change.range).dump() : "none");
      ASSERT_EQ(mirror, store.find("u")->text()) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace ghostline::lsp
