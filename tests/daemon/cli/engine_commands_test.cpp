// The engine commands run as a user runs them: the real binary, its exit code and output.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
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

// A file whose every 2-D weight has a type Ghostline cannot compute with: model-info prints
// one line for all of them (with the count, an example and the remedy), not one per tensor.
TEST(EngineCommands, ModelInfoGroupsRepeatedProblemsAndSaysWhatWouldServe) {
  const std::string path = ::testing::TempDir() + "ghostline-iq3s.gguf";
  ASSERT_EQ(run("make-model -o " + path +
                " --type Q3_K --vocab 300 --embd 256 --layers 3 --heads 4 --kv-heads 2 --ff 512")
                .rc,
            0);
  // Q3_K and IQ3_S blocks are both 110 bytes for 256 values: rewrite each Q3_K tensor's type id
  // in the header (name, n_dims, dims, type) so that the file stays valid GGUF.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  int patched = 0;
  for (size_t pos = 0; (pos = bytes.find(".weight", pos)) != std::string::npos; pos += 7) {
    const size_t type_at = pos + 7 + 4 + 2 * 8;  // after n_dims (u32) and two u64 dims
    uint32_t dims, type;
    std::memcpy(&dims, bytes.data() + pos + 7, 4);
    if (dims != 2) continue;
    std::memcpy(&type, bytes.data() + type_at, 4);
    if (type != 11) continue;  // Q3_K
    const uint32_t iq3_s = 21;
    std::memcpy(bytes.data() + type_at, &iq3_s, 4);
    ++patched;
  }
  ASSERT_EQ(patched, 22);  // the tied embedding and 7 matrices in each of 3 layers
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  const CommandResult r = run("model-info " + path);
  std::remove(path.c_str());
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.out.find("IQ3_S x22"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("servable:      no\n"), std::string::npos) << r.out;
  const size_t problems_at = r.out.find("servable:      no\n");
  const std::string problems = r.out.substr(problems_at);
  EXPECT_EQ(std::count(problems.begin(), problems.end(), '\n'), 2) << problems;
  EXPECT_NE(problems.find("tensor type IQ3_S on 22 tensors (e.g. tensor 'token_embd.weight'"),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("to serve it: re-quantize to one of"), std::string::npos) << problems;
}

// make-model --type `preset` at Qwen2.5-Coder-0.5B's widths (896, ffn 4864) with fewer layers
// and a small vocabulary: its output and model-info's name the tensor types `types`, and the
// file can be served.
void expect_mix_of_a_896_wide_model(const std::string& preset, const std::string& types) {
  const std::string path = ::testing::TempDir() + "ghostline-" + preset + ".gguf";
  const CommandResult made = run("make-model -o " + path + " --type " + preset +
                                 " --vocab 1000 --layers 8 --heads 14 --kv-heads 2");
  ASSERT_EQ(made.rc, 0);
  EXPECT_NE(made.out.find(types), std::string::npos) << made.out;
  const CommandResult r = run("model-info " + path);
  std::remove(path.c_str());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(types), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("servable:      yes"), std::string::npos) << r.out;
}

TEST(EngineCommands, MakeModelWritesTheQ4KMMixOfA896WideModel) {
  // llama-quantize's use_more_bits picks layers 0 (< 8/8), 3 and 6 ((i - 1) % 3 == 2) and 7
  // (>= 7*8/8): their attn_v wants Q6_K (896 wide: Q8_0 instead) and their ffn_down (4864 wide)
  // gets Q6_K; the other ffn_down Q4_K; the tied embedding Q6_K, so Q8_0; every other 896-wide
  // matrix Q4_K, so Q5_0.
  expect_mix_of_a_896_wide_model("q4_k_m", "Q4_K x4, Q5_0 x44, Q6_K x4, Q8_0 x5");
}

TEST(EngineCommands, MakeModelWritesTheQ5KMMixOverQ5K) {
  // The layers of the Q4_K_M mix above, over Q5_K, whose 896-wide matrices fall back to Q5_1.
  expect_mix_of_a_896_wide_model("q5_k_m", "Q5_1 x44, Q5_K x4, Q6_K x4, Q8_0 x5");
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

// How soon a cancelled batch stops: a line after the table, whichever way the race went; a
// cancel needs a prompt batch.
TEST(EngineCommands, BenchTimesACancelledPromptBatch) {
  const CommandResult r = run("bench -m " + kModels +
                              "ref-qwen2-dscoder-q4_0.gguf -p 32 -n 0 -r 2 -t 1 --cancel-after 0");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("| cpu | 1 | pp32 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncancel 0.0 ms into pp32: "), std::string::npos) << r.out;
  EXPECT_EQ(run("bench -m " + kModels + "ref-qwen2-dscoder-q4_0.gguf -p 0 -n 4 --cancel-after 5")
                .rc,
            2);
}

// The shipped pair, every mode on a window of this repository's code twice over: greedy output
// the same in every mode, and a cost table for each model with a row per batch size.
TEST(EngineCommands, BenchSpeculativeComparesTheModesAndTablesTheCosts) {
  const CommandResult r = run(
      "bench --speculative -m models/ghostline-code.gguf --draft models/ghostline-code-draft.gguf "
      "-n 8 -w 1 -p 64 -r 3 --passes 2 -t 2 engine/generator.cpp");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("1 prompts of up to 64 tokens from 1 files, 8 tokens each, greedy, 2 "
                       "threads, backend cpu, 2 passes, modes in turn on each prompt"),
            std::string::npos)
      << r.out;
  for (const char* mode : {"| plain | ", "| n-gram | ", "| draft | ", "| n-gram + draft | "})
    EXPECT_NE(r.out.find(mode), std::string::npos) << mode << "\n" << r.out;
  EXPECT_NE(r.out.find("greedy output identical in every mode: yes"), std::string::npos) << r.out;
  for (const char* model : {"target: ", "draft: "})
    EXPECT_NE(r.out.find(std::string(model) + "forward of 1 + k tokens after 64 tokens of context "
                         "(median of 3 runs, the sizes in turn)"),
              std::string::npos)
        << model << "\n" << r.out;
  EXPECT_NE(r.out.find("| 16 | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("one draft step costs "), std::string::npos) << r.out;
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
