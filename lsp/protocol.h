// The LSP messages Ghostline speaks, as plain structs with from_json/to_json beside them (the
// nlohmann conventions, so `params.get<DidOpenTextDocumentParams>()` and `json j = item;` work).
// The session's handlers receive these; the replay client and the tests build their messages
// from the same structs. from_json throws InvalidParams naming the field that is wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lsp/text_document.h"

namespace ghostline::lsp {

// Params of the wrong shape: a request is answered with -32602, a notification is reported to
// the user.
struct InvalidParams {
  std::string message;
};

void from_json(const nlohmann::json& j, Position& p);
void to_json(nlohmann::json& j, const Position& p);
void from_json(const nlohmann::json& j, Range& r);
void to_json(nlohmann::json& j, const Range& r);

struct TextDocumentIdentifier {
  std::string uri;
};
struct VersionedTextDocumentIdentifier {
  std::string uri;
  int64_t version = 0;
};
struct TextDocumentItem {
  std::string uri;
  std::string language_id;
  int64_t version = 0;
  std::string text;
};

// One entry of didChange's contentChanges: a range replacement, or (no range) the whole text.
struct TextDocumentContentChangeEvent {
  std::optional<Range> range;
  std::string text;
};

struct DidOpenTextDocumentParams {
  TextDocumentItem text_document;
};
struct DidChangeTextDocumentParams {
  VersionedTextDocumentIdentifier text_document;
  std::vector<TextDocumentContentChangeEvent> content_changes;
};
// didSave and didClose, and ghostline/documentText.
struct TextDocumentParams {
  TextDocumentIdentifier text_document;
};
struct TextDocumentPositionParams {
  TextDocumentIdentifier text_document;
  Position position;
};

enum class InlineCompletionTriggerKind { Invoked = 1, Automatic = 2 };
struct SelectedCompletionInfo {
  Range range;
  std::string text;
};
struct InlineCompletionParams {
  TextDocumentIdentifier text_document;
  Position position;
  InlineCompletionTriggerKind trigger_kind = InlineCompletionTriggerKind::Automatic;
  std::optional<SelectedCompletionInfo> selected{};
};

struct CancelParams {
  nlohmann::json id;  // integer or string
};
struct SetTraceParams {
  std::string value;  // off, messages or verbose
};

// Requests and notifications that take no params (any params are ignored).
struct NoParams {};

// The `completion` setting, defined in completer.h (which includes this header).
enum class CompletionMode;

// Settings a client can change (initializationOptions, workspace/didChangeConfiguration).
struct Settings {
  bool enabled = true;
  int debounce_ms = 10;
  int max_tokens = 0;   // 0: the completer's default
  int deadline_ms = 0;  // 0: the completer's default
  CompletionMode completion{};  // Auto, its first enumerator
  // Language ids switched on or off (`languages`); one not named here gets completions.
  std::map<std::string, bool, std::less<>> languages;
  bool language_enabled(std::string_view language_id) const {
    auto it = languages.find(language_id);
    return it == languages.end() || it->second;
  }
};

// A setting the client sent that was refused or ignored, for the user. `type` is
// window/logMessage's: 1 (an error) for a setting refused, 2 (a warning) for a value ignored.
struct SettingsProblem {
  int type = 2;
  std::string message;
};

// Settings as a client sent them: each field holds a value only where the client named one of
// the right type and range. Anything else is in `problems` and leaves the setting as it was.
struct SettingsChange {
  std::optional<int> debounce_ms, max_tokens, deadline_ms;
  std::optional<bool> enabled;
  std::optional<CompletionMode> completion;
  // The whole map is replaced: a language left out of a new map gets completions again.
  std::optional<std::map<std::string, bool, std::less<>>> languages;
  std::vector<SettingsProblem> problems;

  void apply_to(Settings& settings) const;
};

struct DidChangeConfigurationParams {
  // Clients send either our section alone or all settings with ours under "ghostline".
  SettingsChange settings;
};

struct InitializeParams {
  std::vector<std::string> position_encodings;  // capabilities.general.positionEncodings
  std::optional<std::string> trace;
  // initializationOptions: the token a daemon that requires one checks (when it is a string),
  // and settings.
  std::optional<std::string> auth_token;
  SettingsChange settings;
};

// What the server offers, as initialize answers it; the defaults are Ghostline's.
enum class TextDocumentSyncKind { None = 0, Full = 1, Incremental = 2 };
struct TextDocumentSyncOptions {
  bool open_close = true;
  TextDocumentSyncKind change = TextDocumentSyncKind::Incremental;
  bool save_include_text = false;  // save: {includeText}
};
struct CompletionOptions {
  bool resolve_provider = false;
  std::vector<std::string> trigger_characters;
};
struct ServerCapabilities {
  PositionEncoding position_encoding = PositionEncoding::Utf16;
  TextDocumentSyncOptions text_document_sync;
  bool inline_completion_provider = true;
  CompletionOptions completion_provider;
  // Under `experimental`: ghostline/stats, and ghostline/completionUpdated notifications.
  bool ghostline_stats = true;
  bool completion_updated = true;
};
struct ServerInfo {
  std::string name;
  std::string version;
};
struct InitializeResult {
  ServerCapabilities capabilities;
  ServerInfo server_info;
};

// A command the editor runs when the user accepts an item (LSP's Command).
struct Command {
  std::string title;
  std::string command;
  nlohmann::json arguments = nlohmann::json::array();
};

struct InlineCompletionItem {
  std::string insert_text;
  Range range;
  // Ghostline's items carry `ghostline.completionAccepted` with the completion's id, the id a
  // plugin reports in ghostline/completionOutcome.
  std::optional<Command> command = std::nullopt;
};
struct InlineCompletionList {
  std::vector<InlineCompletionItem> items;
};

struct TextEdit {
  Range range;
  std::string new_text;
};
struct CompletionItem {
  std::string label;
  std::string filter_text;
  TextEdit text_edit;
  std::string detail;
};
struct CompletionList {
  bool is_incomplete = true;
  std::vector<CompletionItem> items;
};

struct LogMessageParams {
  int type = 3;  // 1 error, 2 warning, 3 info, 4 log
  std::string message;
};

// ghostline/completionUpdated (server to client): work answered early at `position` of that
// version of the document has finished with more text; ask for the inline completion again.
struct CompletionUpdatedParams {
  TextDocumentIdentifier text_document;
  int64_t version = 0;
  Position position;
};

// ghostline/completionOutcome (client to server): what became of a completion the editor
// showed. `outcome` is accepted, acceptedPartially, dismissed or typedOver; `acceptedChars` the
// characters (code points) kept so far.
struct CompletionOutcomeParams {
  uint64_t id = 0;
  std::string outcome;
  uint64_t accepted_chars = 0;
  std::string language_id;  // optional; the daemon knows the document's
};

struct DocumentTextResult {
  std::string uri;
  int64_t version = 0;
  std::string text;
};

void from_json(const nlohmann::json& j, TextDocumentIdentifier& v);
void to_json(nlohmann::json& j, const TextDocumentIdentifier& v);
void from_json(const nlohmann::json& j, VersionedTextDocumentIdentifier& v);
void to_json(nlohmann::json& j, const VersionedTextDocumentIdentifier& v);
void from_json(const nlohmann::json& j, TextDocumentItem& v);
void to_json(nlohmann::json& j, const TextDocumentItem& v);
void from_json(const nlohmann::json& j, TextDocumentContentChangeEvent& v);
void to_json(nlohmann::json& j, const TextDocumentContentChangeEvent& v);
void from_json(const nlohmann::json& j, DidOpenTextDocumentParams& v);
void to_json(nlohmann::json& j, const DidOpenTextDocumentParams& v);
void from_json(const nlohmann::json& j, DidChangeTextDocumentParams& v);
void to_json(nlohmann::json& j, const DidChangeTextDocumentParams& v);
void from_json(const nlohmann::json& j, TextDocumentParams& v);
void to_json(nlohmann::json& j, const TextDocumentParams& v);
void from_json(const nlohmann::json& j, TextDocumentPositionParams& v);
void to_json(nlohmann::json& j, const TextDocumentPositionParams& v);
void from_json(const nlohmann::json& j, InlineCompletionParams& v);
void to_json(nlohmann::json& j, const InlineCompletionParams& v);
void from_json(const nlohmann::json& j, CancelParams& v);
void to_json(nlohmann::json& j, const CancelParams& v);
void from_json(const nlohmann::json& j, SetTraceParams& v);
void from_json(const nlohmann::json& j, InitializeParams& v);
inline void from_json(const nlohmann::json&, NoParams&) {}
void from_json(const nlohmann::json& j, DidChangeConfigurationParams& v);
void from_json(const nlohmann::json& j, SettingsChange& v);
void to_json(nlohmann::json& j, const Settings& v);
void to_json(nlohmann::json& j, const TextDocumentSyncOptions& v);
void to_json(nlohmann::json& j, const CompletionOptions& v);
void to_json(nlohmann::json& j, const ServerCapabilities& v);
void to_json(nlohmann::json& j, const ServerInfo& v);
void to_json(nlohmann::json& j, const InitializeResult& v);
void to_json(nlohmann::json& j, const Command& v);
void to_json(nlohmann::json& j, const InlineCompletionItem& v);
void from_json(const nlohmann::json& j, CompletionOutcomeParams& v);
void to_json(nlohmann::json& j, const CompletionOutcomeParams& v);
void to_json(nlohmann::json& j, const InlineCompletionList& v);
void to_json(nlohmann::json& j, const TextEdit& v);
void to_json(nlohmann::json& j, const CompletionItem& v);
void to_json(nlohmann::json& j, const CompletionList& v);
void to_json(nlohmann::json& j, const LogMessageParams& v);
void to_json(nlohmann::json& j, const DocumentTextResult& v);
void to_json(nlohmann::json& j, const CompletionUpdatedParams& v);
void from_json(const nlohmann::json& j, CompletionUpdatedParams& v);
void from_json(const nlohmann::json& j, DocumentTextResult& v);

}  // namespace ghostline::lsp
