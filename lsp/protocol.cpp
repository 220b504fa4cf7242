#include "lsp/protocol.h"

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
  v.settings = member(j, "settings");
}

void from_json(const json& j, InitializeParams& v) {
  if (!j.is_object()) throw InvalidParams{"params must be an object"};
  v.initialization_options = j.value("initializationOptions", json::object());
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

void to_json(json& j, const Command& v) {
  j = {{"title", v.title}, {"command", v.command}, {"arguments", v.arguments}};
}
void to_json(json& j, const InlineCompletionItem& v) {
  j = {{"insertText", v.insert_text}, {"range", v.range}};
  if (v.command) j["command"] = *v.command;
}

void from_json(const json& j, CompletionOutcomeParams& v) {
  const json& id = member(j, "id");
  if (!id.is_number_unsigned()) throw InvalidParams{"'id' must be a completion id (a positive integer)"};
  v.id = id.get<uint64_t>();
  v.outcome = string_member(j, "outcome");
  v.accepted_chars = 0;
  if (auto chars = j.find("acceptedChars"); chars != j.end()) {
    if (!chars->is_number_unsigned()) throw InvalidParams{"'acceptedChars' must be a non-negative integer"};
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
