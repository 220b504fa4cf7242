// A recorded typing session (tools/replay/FORMAT.md): what was open, then timestamped
// keystrokes, edits and completion requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ghostline::daemon {

struct SessionFile {
  std::string uri;
  std::string language_id;
  std::string text;
};

enum class Acceptance { Full, Line, Word };

struct SessionEvent {
  enum class Kind { Key, Edit, Complete };
  Kind kind = Kind::Key;
  double t_ms = 0;
  std::string key;                         // Key: the text typed at the cursor, or "Backspace"
  nlohmann::json changes;                  // Edit: LSP TextDocumentContentChangeEvent[]
  bool complete = false;                   // Key, Edit: an automatic completion request follows
  bool invoked = false;                    // the request was invoked explicitly (triggerKind 1)
  std::optional<nlohmann::json> position;  // Complete: the request's position
  // Bytes of the typed region the document holds after this event, when it holds nothing
  // else there (no typo pending). Lets the replay skip what an accepted completion typed.
  std::optional<int64_t> progress;
  bool ignore = false;                // the person did not look at the completion
  std::optional<std::string> expect;  // what the person typed next, when the session says so
};

struct Session {
  std::string name;  // the file name without its directory and extension
  std::string tool;
  SessionFile document;
  std::vector<SessionFile> open_files;
  std::string position_encoding = "utf-16";
  std::optional<std::string> final_text;
  // The region the person typed: where it starts in the final text and its length in bytes.
  std::optional<int64_t> typed_start, typed_bytes;
  std::vector<Acceptance> accepts;
  std::vector<SessionEvent> events;
  int keystrokes() const;
  // What the person is about to type when `progress` bytes of the typed region are in place.
  std::string expected_after(int64_t progress) const;
};

// The part of a shown completion the person takes, given what they were about to type: all of
// it when what they type next starts with it, else its first line, else its first word (as
// editors' "accept word": leading spaces and punctuation, then one word of two bytes or more),
// as far as `accepts` allows. nullopt: they type past it.
struct AcceptedPart {
  std::string text;
  Acceptance kind = Acceptance::Full;
};
std::optional<AcceptedPart> choose_acceptance(const std::string& completion,
                                              const std::string& expected,
                                              const std::vector<Acceptance>& accepts);

// Reads a session file. Throws std::runtime_error naming the file and line of a problem.
Session load_session(const std::string& path);
// Parses the text of a session file; `name` is used in messages.
Session parse_session(const std::string& text, const std::string& name);

}  // namespace ghostline::daemon
