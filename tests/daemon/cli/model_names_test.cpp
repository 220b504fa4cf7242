// Model names: what `ghostline pull NAME` and `--model NAME` accept, the one plain file name each
// maps to in the model folder, the folder itself, and the names that would leave it.
#include "daemon/cli/model_names.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace ghostline::daemon {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class TempFolder {
 public:
  TempFolder() {
    char pattern[] = "/tmp/ghostline-names-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempFolder() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string refusal(std::string_view name) {
  try {
    parse_model_name(name);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ModelNames, RecommendedNamesMapToTheirRepositoryAndAFileNamedAfterThem) {
  ASSERT_GE(recommended_models().size(), 5u);
  for (const auto& m : recommended_models()) {
    const HubFile f = parse_model_name(m.name);
    EXPECT_EQ(f.repo, m.repo);
    EXPECT_EQ(f.file, m.file);
    EXPECT_EQ(f.revision, "main");
    EXPECT_EQ(f.local_name, std::string(m.name) + ".gguf");
    EXPECT_TRUE(is_model_name(m.name));
    EXPECT_TRUE(m.file.ends_with(".gguf")) << m.name;
    EXPECT_GT(m.bytes, 100'000'000u) << m.name;
  }
  EXPECT_NE(find_recommended("qwen2.5-coder-1.5b"), nullptr);
  EXPECT_EQ(find_recommended("qwen2.5-coder-1.5b-instruct"), nullptr);
}

TEST(ModelNames, RepositoryFileAndRevision) {
  HubFile f = parse_model_name("bartowski/Some.Model-GGUF:Some-Model-Q4_K_M.gguf");
  EXPECT_EQ(f.repo, "bartowski/Some.Model-GGUF");
  EXPECT_EQ(f.file, "Some-Model-Q4_K_M.gguf");
  EXPECT_EQ(f.revision, "main");
  EXPECT_EQ(f.local_name, "bartowski--Some.Model-GGUF--Some-Model-Q4_K_M.gguf");

  f = parse_model_name("user/repo:dir/model.gguf@v1.2");
  EXPECT_EQ(f.name, "user/repo:dir/model.gguf");
  EXPECT_EQ(f.file, "dir/model.gguf");
  EXPECT_EQ(f.revision, "v1.2");
  EXPECT_EQ(f.local_name, "user--repo--dir--model.gguf");

  EXPECT_EQ(parse_model_name("qwen2.5-coder-3b@0123abc").revision, "0123abc");
}

TEST(ModelNames, NamesThatWouldLeaveTheFolderAreRefused) {
  EXPECT_NE(refusal("user/repo:../x.gguf").find("'..'"), std::string::npos);
  EXPECT_NE(refusal("user/repo:dir/../../x.gguf").find("'..'"), std::string::npos);
  EXPECT_NE(refusal("../models/x.gguf").find("'..'"), std::string::npos);
  EXPECT_NE(refusal("/etc/passwd").find("absolute"), std::string::npos);
  EXPECT_NE(refusal("user/repo:/abs.gguf").find("path of names"), std::string::npos);
  EXPECT_NE(refusal("user/repo:dir//x.gguf").find("path of names"), std::string::npos);
  EXPECT_NE(refusal("user/repo:./x.gguf").find("path of names"), std::string::npos);
  EXPECT_NE(refusal("user\\repo:x.gguf").find("backslash"), std::string::npos);
  EXPECT_NE(refusal("user/repo:a\\b.gguf").find("backslash"), std::string::npos);
  EXPECT_NE(refusal(std::string_view("user/repo:a\0b.gguf", 19)).find("NUL"), std::string::npos);
  EXPECT_NE(refusal("user/repo:x.gguf@../main").find("'..'"), std::string::npos);
  EXPECT_NE(refusal("user/repo:x.gguf@refs/pr/1").find("revision"), std::string::npos);
}

TEST(ModelNames, RepositoriesMustBeOwnerSlashName) {
  for (const char* bad : {"user:x.gguf", "user/repo/more:x.gguf", "us er/repo:x.gguf",
                          "user/re$po:x.gguf", "/repo:x.gguf", "user/:x.gguf"})
    EXPECT_NE(refusal(bad), "") << bad;
  EXPECT_NE(refusal("user/repo").find("name the file"), std::string::npos);
  EXPECT_NE(refusal("user/repo:model.bin").find(".gguf"), std::string::npos);
  EXPECT_NE(refusal("not-a-model").find("qwen2.5-coder-1.5b"), std::string::npos);  // lists them
  EXPECT_NE(refusal("user/repo:" + std::string(300, 'a') + ".gguf").find("too long"),
            std::string::npos);
}

TEST(ModelNames, WhatLooksLikeANameRatherThanAPath) {
  EXPECT_TRUE(is_model_name("starcoder2-3b"));
  EXPECT_TRUE(is_model_name("starcoder2-3b@main"));
  EXPECT_TRUE(is_model_name("user/repo:x.gguf"));
  EXPECT_FALSE(is_model_name("models/ghostline-code.gguf"));
  EXPECT_FALSE(is_model_name("/abs/dir/file.gguf"));
  EXPECT_FALSE(is_model_name("model.gguf"));
}

TEST(ModelNames, TheFolderFollowsGhostlineModelDirThenXdgCacheThenHome) {
  ScopedEnv dir("GHOSTLINE_MODEL_DIR", "/srv/models");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(model_dir(), fs::path("/srv/models"));
  {
    ScopedEnv unset("GHOSTLINE_MODEL_DIR", nullptr);
    EXPECT_EQ(model_dir(), fs::path("/xdg/cache/ghostline/models"));
    ScopedEnv relative("XDG_CACHE_HOME", "relative/cache");  // the XDG spec ignores it
    EXPECT_EQ(model_dir(), fs::path("/home/someone/.cache/ghostline/models"));
    ScopedEnv empty("XDG_CACHE_HOME", "");
    EXPECT_EQ(model_dir(), fs::path("/home/someone/.cache/ghostline/models"));
  }
}

TEST(ModelNames, ResolutionFindsPulledFilesAndSaysHowToPullTheRest) {
  TempFolder folder;
  ScopedEnv dir("GHOSTLINE_MODEL_DIR", folder.path().c_str());
  std::ofstream(folder.path() / "qwen2.5-coder-1.5b.gguf") << "GGUF";
  std::ofstream(folder.path() / "user--repo--m.gguf") << "GGUF";
  EXPECT_EQ(resolve_model_argument("qwen2.5-coder-1.5b"),
            (folder.path() / "qwen2.5-coder-1.5b.gguf").string());
  EXPECT_EQ(resolve_model_argument("user/repo:m.gguf@main"),
            (folder.path() / "user--repo--m.gguf").string());
  try {
    resolve_model_argument("starcoder2-3b");
    FAIL() << "a model not pulled was resolved";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("run `ghostline pull starcoder2-3b`"), std::string::npos)
        << e.what();
  }
  // Paths pass through untouched (the loader reports a missing file); a partial download never
  // passes.
  EXPECT_EQ(resolve_model_argument("models/none.gguf"), "models/none.gguf");
  EXPECT_THROW(resolve_model_argument((folder.path() / "x.gguf.part").string()),
               std::invalid_argument);
  EXPECT_THROW(resolve_model_argument("qwen2.5-coder-1.5b.gguf.part"), std::invalid_argument);
}

TEST(ModelNames, ASymbolicLinkPlantedInTheFolderIsNotFollowed) {
  TempFolder folder;
  ScopedEnv dir("GHOSTLINE_MODEL_DIR", folder.path().c_str());
  std::ofstream(folder.path() / "elsewhere.gguf") << "GGUF";
  fs::create_symlink(folder.path() / "elsewhere.gguf", folder.path() / "starcoder2-3b.gguf");
  try {
    resolve_model_argument("starcoder2-3b");
    FAIL() << "a symbolic link was taken for a pulled model";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  fs::create_directory(folder.path() / "deepseek-coder-1.3b.gguf");
  EXPECT_THROW(resolve_model_argument("deepseek-coder-1.3b"), std::invalid_argument);
}

}  // namespace
}  // namespace ghostline::daemon
