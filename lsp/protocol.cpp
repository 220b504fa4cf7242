#include "lsp/protocol.h"

#include "lsp/completer.h"

namespace ghostline::lsp {

using nlohmann::json;

namespace {

const json& member(const json& obj, const char* key) {
  if (!obj.is_object()) throw InvalidParams{"params must be an object"};
  auto it = obj.find(key);
  if (it == obj.end()) throw InvalidParams{std::string("missing '") + key + "'"};
  return *it;
}

std::string string_member(const json& obj, const char* key) {
  const json& v = member(obj, key);
  if (!v.is_string()) throw InvalidParams{std::string("'") + key + "' must be a string"};
  return v.get<std::string>();
}

int64_t int_member(const json& obj, const char* key) {
  const json& v = member(obj, key);
  if (!v.is_number_integer()) throw InvalidParams{std::string("'") + key + "' must be an integer"};
  return v.get<int64_t>();
}

}  // namespace

void from_json(const json& j, Position& p) {
  if (!j.is_object()) throw InvalidParams{"position must be an object"};
  p = {int_member(j, "line"), int_member(j, "character")};
  if (p.line < 0 || p.character < 0) throw InvalidParams{"position must not be negative"};
}
void to_json(json& j, const Position& p) {
  j = {{"line", p.line}, {"character", p.character}};
}

void from_json(const json& j, Range& r) {
  if (!j.is_object()) throw InvalidParams{"range must be an object"};
  r = {member(j, "start").get<Position>(), member(j, "end").get<Position>()};
}
void to_json(json& j, const Range& r) {
  j = {{"start", r.start}, {"end", r.end}};
}

void from_json(const json& j, TextDocumentIdentifier& v) {
  v.uri = string_member(j, "uri");
}
void to_json(json& j, const TextDocumentIdentifier& v) {
  j = {{"uri", v.uri}};
}

void from_json(const json& j, VersionedTextDocumentIdentifier& v) {
  v.uri = string_member(j, "uri");
  v.version = int_member(j, "version");
}
void to_json(json& j, const VersionedTextDocumentIdentifier& v) {
  j = {{"uri", v.uri}, {"version", v.version}};
}

void from_json(const json& j, TextDocumentItem& v) {
  v.uri = string_member(j, "uri");
  v.language_id = string_member(j, "languageId");
  v.version = int_member(j, "version");
  v.text = string_member(j, "text");
}
void to_json(json& j, const TextDocumentItem& v) {
  j = {{"uri", v.uri}, {"languageId", v.language_id}, {"version", v.version}, {"text", v.text}};
}

void from_json(const json& j, TextDocumentContentChangeEvent& v) {
  if (!j.is_object()) throw InvalidParams{"a content change must be an object"};
  v.text = string_member(j, "text");
  v.range.reset();
  if (auto r = j.find("range"); r != j.end()) v.range = r->get<Range>();
}
void to_json(json& j, const TextDocumentContentChangeEvent& v) {
  j = {{"text", v.text}};
  if (v.range) j["range"] = *v.range;
}

void from_json(const json& j, DidOpenTextDocumentParams& v) {
  v.text_document = member(j, "textDocument").get<TextDocumentItem>();
}
void to_json(json& j, const DidOpenTextDocumentParams& v) {
  j = {{"textDocument", v.text_document}};
}

void from_json(const json& j, DidChangeTextDocumentParams& v) {
  v.text_document = member(j, "textDocument").get<VersionedTextDocumentIdentifier>();
  const json& changes = member(j, "contentChanges");
  if (!changes.is_array()) throw InvalidParams{"contentChanges must be an array"};
  v.content_changes.clear();
  for (const auto& c : changes)
    v.content_changes.push_back(c.get<TextDocumentContentChangeEvent>());
}
void to_json(json& j, const DidChangeTextDocumentParams& v) {
  j = {{"textDocument", v.text_document}, {"contentChanges", v.content_changes}};
}

void from_json(const json& j, TextDocumentParams& v) {
  v.text_document = member(j, "textDocument").get<TextDocumentIdentifier>();
}
void to_json(json& j, const TextDocumentParams& v) {
  j = {{"textDocument", v.text_document}};
}

void from_json(const json& j, TextDocumentPositionParams& v) {
  v.text_document = member(j, "textDocument").get<TextDocumentIdentifier>();
  v.position = member(j, "position").get<Position>();
}
void to_json(json& j, const TextDocumentPositionParams& v) {
  j = {{"textDocument", v.text_document}, {"position", v.position}};
}

void from_json(const json& j, InlineCompletionParams& v) {
  v.text_document = member(j, "textDocument").get<TextDocumentIdentifier>();
  v.position = member(j, "position").get<Position>();
  v.trigger_kind = InlineCompletionTriggerKind::Automatic;
  v.selected.reset();
  auto context = j.find("context");
  if (context == j.end() || !context->is_object()) return;
  if (context->value("triggerKind", 2) == 1) v.trigger_kind = InlineCompletionTriggerKind::Invoked;
  if (auto sel = context->find("selectedCompletionInfo"); sel != context->end() && sel->is_object())
    v.selected =
        SelectedCompletionInfo{member(*sel, "range").get<Range>(), string_member(*sel, "text")};
}
void to_json(json& j, const InlineCompletionParams& v) {
  json context = {{"triggerKind", static_cast<int>(v.trigger_kind)}};
  if (v.selected)
    context["selectedCompletionInfo"] = {{"range", v.selected->range}, {"text", v.selected->text}};
  j = {{"textDocument", v.text_document}, {"position", v.position}, {"context", context}};
}

void from_json(const json& j, CancelParams& v) {
  v.id = member(j, "id");
}
void to_json(json& j, const CancelParams& v) {
  j = {{"id", v.id}};
}

void from_json(const json& j, SetTraceParams& v) {
  v.value = string_member(j, "value");
  if (v.value != "off" && v.value != "messages" && v.value != "verbose")
    throw InvalidParams{"trace value must be off, messages or verbose"};
}

void from_json(const json& j, DidChangeConfigurationParams& v) {
  const json& settings = member(j, "settings");
  auto section = settings.is_object() ? settings.find("ghostline") : settings.end();
  v.settings = (section != settings.end() ? *section : settings).get<SettingsChange>();
}

void from_json(const json& j, InitializeParams& v) {
  if (!j.is_object()) throw InvalidParams{"params must be an object"};
  v.auth_token.reset();
  v.settings = {};
  if (auto options = j.find("initializationOptions"); options != j.end() && options->is_object()) {
    if (auto token = options->find("authToken"); token != options->end() && token->is_string())
      v.auth_token = token->get<std::string>();
    v.settings = options->get<SettingsChange>();
  }
  v.position_encodings.clear();
  if (auto caps = j.find("capabilities"); caps != j.end() && caps->is_object())
    if (auto general = caps->find("general"); general != caps->end() && general->is_object())
      if (auto encodings = general->find("positionEncodings");
          encodings != general->end() && encodings->is_array())
        for (const auto& e : *encodings)
          if (e.is_string()) v.position_encodings.push_back(e.get<std::string>());
  v.trace.reset();
  if (auto t = j.find("trace"); t != j.end() && t->is_string()) v.trace = t->get<std::string>();
}

void SettingsChange::apply_to(Settings& s) const {
  if (debounce_ms) s.debounce_ms = *debounce_ms;
  if (max_tokens) s.max_tokens = *max_tokens;
  if (deadline_ms) s.deadline_ms = *deadline_ms;
  if (enabled) s.enabled = *enabled;
  if (completion) s.completion = *completion;
  if (languages) s.languages = *languages;
}

static_assert(CompletionMode{} == CompletionMode::Auto, "Settings::completion is Auto by default");

namespace {

const std::map<std::string, CompletionMode, std::less<>>& completion_modes() {
  static const std::map<std::string, CompletionMode, std::less<>> modes = {
      {"auto", CompletionMode::Auto},
      {"line", CompletionMode::Line},
      {"block", CompletionMode::Block}};
  return modes;
}

}  // namespace

// Each setting is read on its own: one of the wrong type is reported and the others still apply.
void from_json(const json& j, SettingsChange& v) {
  v = {};
  if (!j.is_object()) return;
  // Files are named only on the daemon's command line: a setting that could make it read or
  // load a path is refused, whatever the path.
  for (const char* key : {"model", "modelPath", "draft", "draftModel", "draftModelPath"}) {
    if (j.contains(key))
      v.problems.push_back(
          {1, std::string("setting '") + key +
                  "' refused: models are chosen on the daemon's command line (--model, --draft); "
                  "a client cannot make it load a file"});
  }
  auto read_int = [&](const char* key, std::optional<int>& out, int lo, int hi) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi) {
      v.problems.push_back({2, std::string("setting '") + key + "' must be an integer in [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]; ignored"});
      return;
    }
    out = it->get<int>();
  };
  read_int("debounceMs", v.debounce_ms, 0, 2000);
  read_int("maxTokens", v.max_tokens, 0, 4096);
  read_int("deadlineMs", v.deadline_ms, 0, 60000);
  if (auto it = j.find("enabled"); it != j.end()) {
    if (it->is_boolean()) {
      v.enabled = it->get<bool>();
    } else {
      v.problems.push_back({2, "setting 'enabled' must be a boolean; ignored"});
    }
  }
  if (auto it = j.find("completion"); it != j.end()) {
    const auto& modes = completion_modes();
    auto mode = it->is_string() ? modes.find(it->get<std::string>()) : modes.end();
    if (mode != modes.end()) {
      v.completion = mode->second;
    } else {
      v.problems.push_back(
          {2, "setting 'completion' must be \"auto\", \"line\" or \"block\"; ignored"});
    }
  }
  if (auto it = j.find("languages"); it != j.end()) {
    if (it->is_object()) {
      v.languages.emplace();
      for (const auto& [language, on] : it->items()) {
        if (on.is_boolean()) {
          (*v.languages)[language] = on.get<bool>();
        } else {
          v.problems.push_back(
              {2, "setting 'languages." + language + "' must be a boolean; ignored"});
        }
      }
    } else {
      v.problems.push_back(
          {2, "setting 'languages' must be an object of language id -> true/false; ignored"});
    }
  }
}

void to_json(json& j, const Settings& v) {
  json languages = json::object();
  for (const auto& [language, on] : v.languages) languages[language] = on;
  std::string_view completion = "auto";
  for (const auto& [name, mode] : completion_modes())
    if (mode == v.completion) completion = name;
  j = {{"enabled", v.enabled},         {"debounceMs", v.debounce_ms},
       {"maxTokens", v.max_tokens},    {"deadlineMs", v.deadline_ms},
       {"completion", completion},     {"languages", std::move(languages)}};
}

void to_json(json& j, const TextDocumentSyncOptions& v) {
  j = {{"openClose", v.open_close},
       {"change", static_cast<int>(v.change)},
       {"save", {{"includeText", v.save_include_text}}}};
}
void to_json(json& j, const CompletionOptions& v) {
  j = {{"resolveProvider", v.resolve_provider}, {"triggerCharacters", v.trigger_characters}};
}
void to_json(json& j, const ServerCapabilities& v) {
  j = {{"positionEncoding", to_string(v.position_encoding)},
       {"textDocumentSync", v.text_document_sync},
       {"completionProvider", v.completion_provider},
       {"experimental",
        {{"ghostlineStats", v.ghostline_stats},
         {"ghostline", {{"completionUpdated", v.completion_updated}}}}}};
  if (v.inline_completion_provider) j["inlineCompletionProvider"] = json::object();
}
void to_json(json& j, const ServerInfo& v) {
  j = {{"name", v.name}, {"version", v.version}};
}
void to_json(json& j, const InitializeResult& v) {
  j = {{"capabilities", v.capabilities}, {"serverInfo", v.server_info}};
}

void to_json(json& j, const Command& v) {
  j = {{"title", v.title}, {"command", v.command}, {"arguments", v.arguments}};
}
void to_json(json& j, const InlineCompletionItem& v) {
  j = {{"insertText", v.insert_text}, {"range", v.range}};
  if (v.command) j["command"] = *v.command;
}

void from_json(const json& j, CompletionOutcomeParams& v) {
  const json& id = member(j, "id");
  if (!id.is_number_unsigned())
    throw InvalidParams{"'id' must be a completion id (a positive integer)"};
  v.id = id.get<uint64_t>();
  v.outcome = string_member(j, "outcome");
  v.accepted_chars = 0;
  if (auto chars = j.find("acceptedChars"); chars != j.end()) {
    if (!chars->is_number_unsigned())
      throw InvalidParams{"'acceptedChars' must be a non-negative integer"};
    v.accepted_chars = chars->get<uint64_t>();
  }
  v.language_id.clear();
  if (auto language = j.find("languageId"); language != j.end() && language->is_string())
    v.language_id = language->get<std::string>();
}
void to_json(json& j, const CompletionOutcomeParams& v) {
  j = {{"id", v.id}, {"outcome", v.outcome}, {"acceptedChars", v.accepted_chars}};
  if (!v.language_id.empty()) j["languageId"] = v.language_id;
}
void to_json(json& j, const InlineCompletionList& v) {
  j = {{"items", v.items}};
}

void to_json(json& j, const TextEdit& v) {
  j = {{"range", v.range}, {"newText", v.new_text}};
}
void to_json(json& j, const CompletionItem& v) {
  j = {{"label", v.label},      {"kind", 1 /* text */},    {"filterText", v.filter_text},
       {"insertTextFormat", 1}, {"textEdit", v.text_edit}, {"detail", v.detail}};
}
void to_json(json& j, const CompletionList& v) {
  j = {{"isIncomplete", v.is_incomplete}, {"items", v.items}};
}

void to_json(json& j, const LogMessageParams& v) {
  j = {{"type", v.type}, {"message", v.message}};
}

void to_json(json& j, const CompletionUpdatedParams& v) {
  j = {{"textDocument", v.text_document}, {"version", v.version}, {"position", v.position}};
}
void from_json(const json& j, CompletionUpdatedParams& v) {
  v.text_document = member(j, "textDocument").get<TextDocumentIdentifier>();
  v.version = int_member(j, "version");
  v.position = member(j, "position").get<Position>();
}

void to_json(json& j, const DocumentTextResult& v) {
  j = {{"uri", v.uri}, {"version", v.version}, {"text", v.text}};
}
void from_json(const json& j, DocumentTextResult& v) {
  v.uri = string_member(j, "uri");
  v.version = int_member(j, "version");
  v.text = string_member(j, "text");
}

}  // namespace ghostline::lsp
