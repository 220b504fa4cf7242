#include "daemon/replay/typing_session.h"
#include "base/text.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ghostline::daemon {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& name, size_t line, const std::string& what) {
  throw std::runtime_error(name + ":" + std::to_string(line) + ": " + what);
}

SessionFile parse_file(const json& j, const std::string& name, size_t line) {
  if (!j.is_object() || !j.contains("uri") || !j.contains("text"))
    fail(name, line, "an open file needs 'uri' and 'text'");
  return {j.at("uri").get<std::string>(), j.value("languageId", std::string("plaintext")),
          j.at("text").get<std::string>()};
}

}  // namespace

int Session::keystrokes() const {
  int n = 0;
  for (const auto& e : events)
    if (e.kind != SessionEvent::Kind::Complete) ++n;
  return n;
}

std::string Session::expected_after(int64_t progress) const {
  if (!final_text || !typed_start || !typed_bytes || progress < 0 || progress > *typed_bytes)
    return {};
  return final_text->substr(static_cast<size_t>(*typed_start + progress),
                            static_cast<size_t>(*typed_bytes - progress));
}

std::optional<AcceptedPart> choose_acceptance(const std::string& completion,
                                              const std::string& expected,
                                              const std::vector<Acceptance>& accepts) {
  auto allowed = [&](Acceptance a) {
    return std::find(accepts.begin(), accepts.end(), a) != accepts.end();
  };
  if (completion.empty()) return std::nullopt;
  if (allowed(Acceptance::Full) && expected.starts_with(completion))
    return AcceptedPart{completion, Acceptance::Full};
  if (allowed(Acceptance::Line)) {
    size_t nl = completion.find('\n');
    if (nl != std::string::npos && nl > 0) {
      std::string line = completion.substr(0, nl);
      if (expected.starts_with(line)) return AcceptedPart{line, Acceptance::Line};
    }
  }
  if (allowed(Acceptance::Word)) {
    size_t i = 0;
    while (i < completion.size() && !is_identifier_byte(completion[i]) && completion[i] != '\n')
      ++i;
    while (i < completion.size() && is_identifier_byte(completion[i])) ++i;
    std::string word = completion.substr(0, i);
    if (word.size() >= 2 && expected.starts_with(word)) return AcceptedPart{word, Acceptance::Word};
  }
  return std::nullopt;
}

Session parse_session(const std::string& text, const std::string& name) {
  Session s;
  s.name = name;
  std::istringstream in(text);
  std::string line;
  size_t number = 0;
  bool have_header = false;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail(name, number, "not a JSON object");
    std::string type = j.value("type", std::string());
    try {
      if (!have_header) {
        if (type != "header" || j.value("format", std::string()) != "ghostline-session")
          fail(name, number,
               "the first line must be a header with \"format\": \"ghostline-session\"");
        if (j.value("version", 0) != 1) fail(name, number, "unsupported session format version");
        have_header = true;
        s.tool = j.value("tool", std::string());
        s.document = {j.at("uri").get<std::string>(), j.at("language").get<std::string>(),
                      j.at("text").get<std::string>()};
        for (const auto& f : j.value("openFiles", json::array()))
          s.open_files.push_back(parse_file(f, name, number));
        s.position_encoding = j.value("positionEncoding", std::string("utf-16"));
        if (s.position_encoding != "utf-8" && s.position_encoding != "utf-16" &&
            s.position_encoding != "utf-32")
          fail(name, number, "positionEncoding must be utf-8, utf-16 or utf-32");
        if (j.contains("finalText")) s.final_text = j["finalText"].get<std::string>();
        if (auto t = j.find("typed"); t != j.end() && t->is_object()) {
          s.typed_start = t->at("start").get<int64_t>();
          s.typed_bytes = t->at("bytes").get<int64_t>();
          if (!s.final_text || *s.typed_start < 0 || *s.typed_bytes < 0 ||
              static_cast<size_t>(*s.typed_start + *s.typed_bytes) > s.final_text->size())
            fail(name, number, "'typed' lies outside 'finalText'");
        }
        for (const auto& a : j.value("accepts", json::array())) {
          std::string kind = a.get<std::string>();
          if (kind == "full")
            s.accepts.push_back(Acceptance::Full);
          else if (kind == "line")
            s.accepts.push_back(Acceptance::Line);
          else if (kind == "word")
            s.accepts.push_back(Acceptance::Word);
          else
            fail(name, number, "unknown acceptance '" + kind + "' (full, line or word)");
        }
        continue;
      }
      SessionEvent e;
      e.t_ms = j.at("t").get<double>();
      if (!s.events.empty() && e.t_ms < s.events.back().t_ms)
        fail(name, number, "time goes backwards");
      std::string complete = j.value("complete", std::string());
      if (!complete.empty() && complete != "automatic" && complete != "invoked")
        fail(name, number, "'complete' must be automatic or invoked");
      e.complete = !complete.empty();
      e.invoked = complete == "invoked";
      if (j.contains("progress")) e.progress = j["progress"].get<int64_t>();
      e.ignore = j.value("ignore", false);
      if (j.contains("expect")) e.expect = j["expect"].get<std::string>();
      if (type == "key") {
        e.kind = SessionEvent::Kind::Key;
        e.key = j.at("key").get<std::string>();
        if (e.key.empty()) fail(name, number, "empty key");
      } else if (type == "edit") {
        e.kind = SessionEvent::Kind::Edit;
        e.changes = j.at("changes");
        if (!e.changes.is_array() || e.changes.empty())
          fail(name, number, "'changes' must be a non-empty array");
      } else if (type == "complete") {
        e.kind = SessionEvent::Kind::Complete;
        e.complete = true;
        e.invoked = j.value("trigger", std::string("automatic")) == "invoked";
        e.position = j.at("position");
      } else if (type == "outcome") {
        continue;  // what the person did in the recording; the replay decides from real replies
      } else {
        fail(name, number, "unknown event type '" + type + "'");
      }
      s.events.push_back(std::move(e));
    } catch (const json::exception& e) {
      fail(name, number, e.what());
    }
  }
  if (!have_header) fail(name, number, "empty session file");
  return s;
}

Session load_session(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read session file '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Session s = parse_session(buffer.str(), path);
  s.name = std::filesystem::path(path).stem().string();
  return s;
}

}  // namespace ghostline::daemon
