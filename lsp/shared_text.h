// One immutable text shared by all who read it: a request holds the version of its document
// that the session's DocumentStore holds (no copy of the file per request), and copies of the
// request (prefetch, the memory of completions) share it too. Reads like a const std::string.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ghostline::lsp {

class SharedText {
 public:
  SharedText() : text_(empty_text()) {}
  SharedText(std::string text)  // NOLINT: implicit, a text is a text
      : text_(std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT
  // Shares `text` (which may point into something `text` owns, such as a document version).
  explicit SharedText(std::shared_ptr<const std::string> text)
      : text_(text ? std::move(text) : empty_text()) {}

  const std::string& str() const { return *text_; }
  const std::shared_ptr<const std::string>& share() const { return text_; }
  operator const std::string&() const { return *text_; }  // NOLINT
  operator std::string_view() const { return *text_; }    // NOLINT

  size_t size() const { return text_->size(); }
  bool empty() const { return text_->empty(); }
  const char* data() const { return text_->data(); }
  char operator[](size_t i) const { return (*text_)[i]; }
  std::string::const_iterator begin() const { return text_->begin(); }
  std::string::const_iterator end() const { return text_->end(); }
  std::string substr(size_t pos, size_t n = std::string::npos) const {
    return text_->substr(pos, n);
  }
  size_t find(std::string_view s, size_t pos = 0) const { return text_->find(s, pos); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const {
    return text_->rfind(s, pos);
  }
  // A new text: this one with `s` appended (the shared one is never changed).
  SharedText& operator+=(std::string_view s) {
    text_ = std::make_shared<const std::string>(*text_ + std::string(s));
    return *this;
  }

  // Whether two texts are one shared text (then they are equal without comparing bytes).
  bool same_as(const SharedText& other) const { return text_ == other.text_; }
  friend bool operator==(const SharedText& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.same_as(b) || a.str() == b.str();
  }

 private:
  static const std::shared_ptr<const std::string>& empty_text() {
    static const auto empty = std::make_shared<const std::string>();
    return empty;
  }
  std::shared_ptr<const std::string> text_;
};

}  // namespace ghostline::lsp
