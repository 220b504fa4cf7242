// Runs the real `ghostline tokenize` binary as a script would.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

struct Result {
  int exit_code;
  std::string out;
};

// Runs `ghostline tokenize ARGS` with `input` on stdin; stderr is folded into the output.
Result run_tokenize(const std::string& args, const std::string& input) {
  // ctest runs test cases in parallel processes: each needs its own input file.
  const std::string in_path = ::testing::TempDir() + "ghostline-tokenize-input-" +
                              std::to_string(::getpid()) + "-" +
                              ::testing::UnitTest::GetInstance()->current_test_info()->name();
  FILE* in = std::fopen(in_path.c_str(), "wb");
  std::fwrite(input.data(), 1, input.size(), in);
  std::fclose(in);
  std::string cmd = std::string(GHOSTLINE_BINARY) + " tokenize " + args + " < " + in_path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  Result r{-1, ""};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  std::remove(in_path.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kStarcoder = "-m ../shared/data/tokenizer/starcoder.gguf";

TEST(CmdTokenize, PrintsIdsOnOneLine) {
  // From ../shared/data/tokenizer/starcoder.code.jsonl.
  auto r = run_tokenize(kStarcoder, "if __name__ == \"__main__\":\n    main()\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "344 1176 444 523 630 9609 1850 18021 303 2594 365 222\n");
}

TEST(CmdTokenize, PrintsPiecesQuoted) {
  auto r = run_tokenize(kStarcoder + " --pieces", "a b\n\t\"");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "\"a\" \" b\" \"\\n\" \"\\t\" \"\\\"\"\n");
}

TEST(CmdTokenize, SpecialTokensOnlyWhenAsked) {
  auto plain = run_tokenize(kStarcoder, "<fim_prefix>");
  auto special = run_tokenize(kStarcoder + " --special", "<fim_prefix>");
  EXPECT_EQ(special.out, "1\n");
  EXPECT_NE(plain.out, "1\n");
}

TEST(CmdTokenize, ClearErrorsForBadFiles) {
  auto missing = run_tokenize("-m ../no/such/model.gguf", "x");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("../no/such/model.gguf"), std::string::npos) << missing.out;
  auto not_gguf = run_tokenize("-m CMakeLists.txt", "x");
  EXPECT_EQ(not_gguf.exit_code, 1);
  EXPECT_NE(not_gguf.out.find("not a GGUF file"), std::string::npos) << not_gguf.out;
  auto no_vocab = run_tokenize("", "x");
  EXPECT_EQ(no_vocab.exit_code, 2);
}

}  // namespace
