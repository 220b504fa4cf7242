// The engine commands run as a user runs them: the real binary, its exit code and output.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "daemon/cli/model_command.h"

namespace ghostline::daemon {
namespace {

const std::string kModels = "../shared/data/models/";

struct CommandResult {
  int rc;
  std::string out;
};

// Runs the ghostline binary with `args` (stderr discarded), capturing stdout.
CommandResult run(const std::string& args) {
  const std::string cmd = std::string(GHOSTLINE_BINARY) + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe.release());
  return {WEXITSTATUS(status), out};
}

nlohmann::json reference(const std::string& name) {
  std::ifstream in(kModels + name + ".logits.json");
  return nlohmann::json::parse(in);
}

TEST(EngineCommands, ModelInfoDescribesAServableModel) {
  const CommandResult r = run("model-info " + kModels + "ref-qwen2-dscoder-q8_0.gguf");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("architecture:  qwen2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Q8_0 x15"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pre deepseek-coder, 32256 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fim prefix 32016"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("servable:      yes"), std::string::npos) << r.out;
}

TEST(EngineCommands, ModelInfoOnAVocabularyOnlyFileSaysWhyItCannotServe) {
  const CommandResult r = run("model-info ../shared/data/tokenizer/starcoder.gguf");
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.out.find("servable:      no"), std::string::npos) << r.out;
}

TEST(EngineCommands, MissingFileIsAnError) {
  EXPECT_EQ(run("model-info /nonexistent/model.gguf").rc, 1);
  EXPECT_EQ(run("logits -m /nonexistent/model.gguf --ids 1").rc, 1);
  EXPECT_EQ(run("logits -m " + kModels + "ref-llama-spm-f16.gguf --ids x").rc, 2);
}

TEST(EngineCommands, LogitsMatchTheReference) {
  const auto ref = reference("ref-llama-spm-f16");
  const auto& c = ref["cases"][0];
  std::string ids;
  for (const auto& id : c["ids"]) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id.get<int>());
  }
  const CommandResult r =
      run("logits -m " + kModels + "ref-llama-spm-f16.gguf --top 5 --ids " + ids);
  ASSERT_EQ(r.rc, 0);
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["positions"].size(), c["ids"].size());
  for (size_t p = 0; p < c["ids"].size(); ++p) {
    const auto& top = j["positions"][p]["top"];
    ASSERT_EQ(top.size(), 5u);
    EXPECT_NEAR(top[0][1].get<double>(), c["topk"][p][0][1].get<double>(), 0.05) << p;
  }
}

TEST(EngineCommands, GenerateIdsAreTheGreedyContinuation) {
  const auto ref = reference("ref-llama-spm-f16");
  const auto& c = ref["cases"][0];
  const CommandResult r = run("generate -m " + kModels + "ref-llama-spm-f16.gguf -n 24 --ids -p '" +
                              c["text"].get<std::string>() + "'");
  ASSERT_EQ(r.rc, 0);
  std::string expected_prompt = "prompt:", expected = "generated:";
  for (const auto& id : c["ids"]) expected_prompt.append(" ").append(std::to_string(id.get<int>()));
  for (const auto& id : c["greedy"]) expected.append(" ").append(std::to_string(id.get<int>()));
  EXPECT_NE(r.out.find(expected_prompt + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(expected + "\n"), std::string::npos) << r.out;
}

TEST(EngineCommands, BenchPrintsALlamaBenchTable) {
  const CommandResult r =
      run("bench -m " + kModels + "ref-qwen2-dscoder-q4_0.gguf -p 32 -n 8 -r 2 -t 1");
  ASSERT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("| model | size | params | backend | threads | test | t/s |"),
            std::string::npos);
  EXPECT_NE(r.out.find("| cpu | 1 | pp32 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| cpu | 1 | tg8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak RSS"), std::string::npos);
}

TEST(EngineText, ParsesIdLists) {
  std::vector<int32_t> ids;
  EXPECT_TRUE(parse_ids("1,2, 3", ids));
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(parse_ids("1,x", ids));
  EXPECT_FALSE(parse_ids("-1", ids));
  EXPECT_FALSE(parse_ids("", ids));
  EXPECT_EQ(format_bytes(35857472), "34.20 MiB");
  EXPECT_EQ(format_count(494032768), "494.03 M");
  EXPECT_EQ(quote("a\tb"), "\"a\\tb\"");
}

}  // namespace
}  // namespace ghostline::daemon
