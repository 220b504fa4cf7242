// --backend: the four names parse, and each choice gives the backend this machine can run.
#include "daemon/pipeline/engine_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace ghostline::daemon {
namespace {

TEST(EngineBackendTest, EveryNameParsesAndPrintsBack) {
  for (const char* name : {"auto", "cpu", "cuda", "remote"}) {
    const auto choice = parse_backend_choice(name);
    ASSERT_TRUE(choice.has_value()) << name;
    EXPECT_STREQ(backend_choice_name(*choice), name);
  }
  EXPECT_FALSE(parse_backend_choice("gpu").has_value());
  EXPECT_FALSE(parse_backend_choice("").has_value());
}

TEST(EngineBackendTest, CpuIsAlwaysTheCpu) {
  EXPECT_EQ(engine_backend(BackendChoice::Cpu), engine::BackendKind::Cpu);
}

TEST(EngineBackendTest, AutoIsLeftToTheEngineAndCudaFollowsTheDevice) {
  const engine::CudaStatus status = engine::cuda_status();
  std::string note;
  // make_backend resolves auto, with the model at hand.
  EXPECT_EQ(engine_backend(BackendChoice::Auto, &note), engine::BackendKind::Auto);
  if (status.available) {
    EXPECT_TRUE(note.empty());
    EXPECT_EQ(engine_backend(BackendChoice::Cuda), engine::BackendKind::Cuda);
  } else {
    // Without a device auto says why it will run on the CPU; cuda is an error naming the reason.
    EXPECT_NE(note.find(status.description), std::string::npos) << note;
    try {
      engine_backend(BackendChoice::Cuda);
      ADD_FAILURE() << "--backend cuda without a device did not throw";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(status.description), std::string::npos) << e.what();
    }
  }
}

TEST(EngineBackendTest, WithoutAnNvidiaDriverNoCudaLibraryIsMapped) {
  std::error_code ec;
  if (std::filesystem::exists("/dev/nvidiactl", ec))
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  // Asking is what a CPU run does at start (auto); cuBLAS alone would be over 100 MiB resident.
  engine_backend(BackendChoice::Auto);
  EXPECT_FALSE(engine::cuda_status().available);
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  for (const char* library : {"libcublas", "libcudart", "libghostline_cuda"})
    EXPECT_EQ(text.str().find(library), std::string::npos) << library << " is mapped";
}

}  // namespace
}  // namespace ghostline::daemon
