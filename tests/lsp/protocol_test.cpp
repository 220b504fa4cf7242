#include "lsp/protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lsp/completer.h"

namespace ghostline::lsp {
namespace {

using nlohmann::json;

TEST(Protocol, ParamsRoundTripThroughJson) {
  DidChangeTextDocumentParams change;
  change.text_document = {.uri = "file:///a", .version = 3};
  change.content_changes = {{.range = Range{{1, 2}, {1, 4}}, .text = "xy"},
                            {.range = std::nullopt, .text = "all"}};
  const auto back = json(change).get<DidChangeTextDocumentParams>();
  EXPECT_EQ(back.text_document.uri, "file:///a");
  EXPECT_EQ(back.text_document.version, 3);
  ASSERT_EQ(back.content_changes.size(), 2u);
  EXPECT_EQ(back.content_changes[0].range, (Range{{1, 2}, {1, 4}}));
  EXPECT_FALSE(back.content_changes[1].range);
  EXPECT_EQ(back.content_changes[1].text, "all");

  const InlineCompletionParams inline_params{
      .text_document = {.uri = "u"},
      .position = {4, 5},
      .trigger_kind = InlineCompletionTriggerKind::Invoked,
      .selected = SelectedCompletionInfo{Range{{4, 0}, {4, 5}}, "print"}};
  const auto p = json(inline_params).get<InlineCompletionParams>();
  EXPECT_EQ(p.position, (Position{4, 5}));
  EXPECT_EQ(p.trigger_kind, InlineCompletionTriggerKind::Invoked);
  ASSERT_TRUE(p.selected);
  EXPECT_EQ(p.selected->text, "print");
}

TEST(Protocol, WrongShapesNameTheField) {
  auto message_of = [](const json& j) {
    try {
      (void)j.get<InlineCompletionParams>();
    } catch (const InvalidParams& e) {
      return e.message;
    }
    return std::string("no error");
  };
  EXPECT_EQ(message_of(json::array()), "params must be an object");
  EXPECT_EQ(message_of({{"position", {{"line", 0}, {"character", 0}}}}), "missing 'textDocument'");
  EXPECT_EQ(
      message_of({{"textDocument", {{"uri", 1}}}, {"position", {{"line", 0}, {"character", 0}}}}),
      "'uri' must be a string");
  EXPECT_EQ(message_of(
                {{"textDocument", {{"uri", "u"}}}, {"position", {{"line", 0}, {"character", -1}}}}),
            "position must not be negative");
}

TEST(Protocol, ResultsHaveTheSpecsFieldNames) {
  const json list =
      InlineCompletionList{{{.insert_text = "x + 1", .range = Range{{0, 1}, {0, 1}}}}};
  EXPECT_EQ(list, json::parse(
                      R"({"items":[{"insertText":"x + 1","range":{"start":{"line":0,"character":1},
                                  "end":{"line":0,"character":1}}}]})"));
  const json empty = CompletionList{};
  EXPECT_EQ(empty, json::parse(R"({"isIncomplete":true,"items":[]})"));
}

std::vector<std::string> messages_of(const std::vector<SettingsProblem>& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems) out.push_back(std::to_string(p.type) + " " + p.message);
  return out;
}

TEST(Settings, EachWrongSettingIsReportedAndTheOthersStillApply) {
  const auto change = json::parse(R"({"debounceMs":"5","maxTokens":64,"deadlineMs":60001,
                                      "enabled":1,"completion":"line",
                                      "languages":{"go":false,"rust":"no"}})")
                          .get<SettingsChange>();
  EXPECT_EQ(messages_of(change.problems),
            (std::vector<std::string>{
                "2 setting 'debounceMs' must be an integer in [0, 2000]; ignored",
                "2 setting 'deadlineMs' must be an integer in [0, 60000]; ignored",
                "2 setting 'enabled' must be a boolean; ignored",
                "2 setting 'languages.rust' must be a boolean; ignored",
            }));
  Settings settings;
  settings.debounce_ms = 25;
  change.apply_to(settings);
  EXPECT_EQ(settings.debounce_ms, 25);
  EXPECT_EQ(settings.max_tokens, 64);
  EXPECT_EQ(settings.deadline_ms, 0);
  EXPECT_TRUE(settings.enabled);
  EXPECT_EQ(settings.completion, CompletionMode::Line);
  EXPECT_FALSE(settings.language_enabled("go"));
  EXPECT_TRUE(settings.language_enabled("rust"));
}

TEST(Settings, WrongTypesForEverySettingAreIgnored) {
  const auto change = json::parse(R"({"debounceMs":1.5,"maxTokens":-1,"deadlineMs":null,
                                      "enabled":"true","completion":"all","languages":[]})")
                          .get<SettingsChange>();
  EXPECT_EQ(change.problems.size(), 6u);
  Settings settings;
  settings.languages = {{"go", false}};
  const json before = settings;
  change.apply_to(settings);
  EXPECT_EQ(json(settings), before);
  // A huge integer is out of range, not wrapped into it.
  EXPECT_FALSE(json::parse(R"({"maxTokens":18446744073709551615})")
                   .get<SettingsChange>()
                   .max_tokens);
}

TEST(Settings, AChangeLeavesWhatItDoesNotNameAsItWas) {
  Settings settings;
  json::parse(R"({"maxTokens":8,"languages":{"go":false}})")
      .get<SettingsChange>()
      .apply_to(settings);
  json::parse(R"({"deadlineMs":300})").get<SettingsChange>().apply_to(settings);
  EXPECT_EQ(settings.max_tokens, 8);
  EXPECT_EQ(settings.deadline_ms, 300);
  EXPECT_FALSE(settings.language_enabled("go"));
  // A new languages map replaces the old one.
  json::parse(R"({"languages":{"c":false}})").get<SettingsChange>().apply_to(settings);
  EXPECT_TRUE(settings.language_enabled("go"));
  EXPECT_FALSE(settings.language_enabled("c"));
  // Settings that are not an object change nothing and report nothing.
  const auto none = json("fast").get<SettingsChange>();
  EXPECT_TRUE(none.problems.empty());
  EXPECT_FALSE(none.max_tokens || none.enabled || none.completion || none.languages);
}

TEST(Settings, ModelFilesAreRefused) {
  const auto change =
      json::parse(R"({"model":"/etc/shadow","draftModelPath":"x","maxTokens":4})")
          .get<SettingsChange>();
  ASSERT_EQ(change.problems.size(), 2u);
  EXPECT_EQ(change.problems[0].type, 1);
  EXPECT_EQ(change.problems[0].message,
            "setting 'model' refused: models are chosen on the daemon's command line (--model, "
            "--draft); a client cannot make it load a file");
  EXPECT_EQ(change.problems[1].message.rfind("setting 'draftModelPath' refused", 0), 0u);
  EXPECT_EQ(change.max_tokens, 4);
}

TEST(Settings, RoundTripThroughTheFormAClientSends) {
  Settings settings;
  settings.enabled = false;
  settings.debounce_ms = 0;
  settings.max_tokens = 100;
  settings.deadline_ms = 900;
  settings.completion = CompletionMode::Block;
  settings.languages = {{"python", true}, {"markdown", false}};
  const auto change = json(settings).get<SettingsChange>();
  EXPECT_TRUE(change.problems.empty());
  Settings back;
  change.apply_to(back);
  EXPECT_EQ(json(back), json(settings));
  EXPECT_EQ(json(settings)["completion"], "block");
}

TEST(Settings, ConfigurationChangesAreReadFromTheGhostlineSection) {
  const auto ours = json::parse(R"({"settings":{"ghostline":{"maxTokens":7},"maxTokens":9}})")
                        .get<DidChangeConfigurationParams>();
  EXPECT_EQ(ours.settings.max_tokens, 7);
  const auto alone =
      json::parse(R"({"settings":{"maxTokens":9}})").get<DidChangeConfigurationParams>();
  EXPECT_EQ(alone.settings.max_tokens, 9);
  EXPECT_THROW((void)json::object().get<DidChangeConfigurationParams>(), InvalidParams);
}

TEST(Initialize, TheAuthTokenAndSettingsComeFromInitializationOptions) {
  const auto params = json::parse(R"({"capabilities":{"general":{"positionEncodings":
                                        ["utf-32",7,"utf-8"]}},"trace":"verbose",
                                      "initializationOptions":{"authToken":"t0k","debounceMs":0}})")
                          .get<InitializeParams>();
  EXPECT_EQ(params.position_encodings, (std::vector<std::string>{"utf-32", "utf-8"}));
  EXPECT_EQ(params.trace, "verbose");
  EXPECT_EQ(params.auth_token, "t0k");
  EXPECT_EQ(params.settings.debounce_ms, 0);
  // A token that is not a string is no token; options that are not an object carry nothing.
  EXPECT_FALSE(json::parse(R"({"initializationOptions":{"authToken":12}})")
                   .get<InitializeParams>()
                   .auth_token);
  const auto plain = json::parse(R"({"initializationOptions":"t0k"})").get<InitializeParams>();
  EXPECT_FALSE(plain.auth_token);
  EXPECT_TRUE(plain.settings.problems.empty());
}

TEST(Initialize, TheResultNamesGhostlinesCapabilities) {
  ServerCapabilities capabilities;
  capabilities.position_encoding = PositionEncoding::Utf8;
  const json result = InitializeResult{capabilities, {"ghostline", "1.2.3"}};
  EXPECT_EQ(result, json::parse(R"({
    "capabilities": {
      "positionEncoding": "utf-8",
      "textDocumentSync": {"openClose": true, "change": 2, "save": {"includeText": false}},
      "inlineCompletionProvider": {},
      "completionProvider": {"resolveProvider": false, "triggerCharacters": []},
      "experimental": {"ghostlineStats": true, "ghostline": {"completionUpdated": true}}
    },
    "serverInfo": {"name": "ghostline", "version": "1.2.3"}})"));
}

}  // namespace
}  // namespace ghostline::lsp
