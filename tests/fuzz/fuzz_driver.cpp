// Runs a fuzz target's LLVMFuzzerTestOneInput on files, so that the normal builds (release,
// asan) replay the seed corpus and every regression input as a test without libFuzzer.
// Usage: fuzz_<target> FILE_OR_DIR...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace fs = std::filesystem;

static bool run_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    fs::path arg = argv[i];
    if (!fs::exists(arg)) {
      std::fprintf(stderr, "%s does not exist\n", arg.c_str());
      return 2;
    }
    std::vector<fs::path> files;
    if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(arg);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      if (!run_file(f)) return 2;
      ++ran;
    }
  }
  // An input that breaks an invariant aborts above; reaching here means all passed.
  std::printf("%zu inputs ran without a crash or a broken invariant\n", ran);
  return ran > 0 ? 0 : 1;
}
