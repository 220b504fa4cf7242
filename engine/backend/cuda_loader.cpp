// The CUDA entry points of a build with CUDA: the backend lives in a module
// (libghostline_cuda.so, see cuda_module.h) loaded on first use, and only on a machine with an
// NVIDIA driver, so a run on the CPU pays nothing for it.
#ifdef GHOSTLINE_HAVE_CUDA

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "base/platform.h"
#include "engine/backend/backend.h"
#include "engine/backend/cuda_module.h"

namespace ghostline::engine {
namespace {

bool nvidia_driver_present() {
  std::error_code ec;
  for (const char* path : {"/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"})
    if (std::filesystem::exists(path, ec)) return true;
  return false;
}

// Beside the executable (an installed ghostline), then where the build put it (tests and tools
// in the build tree's subdirectories).
std::vector<std::string> module_candidates() {
  std::vector<std::string> paths;
  const auto exe = platform::executable_path();
  if (!exe.empty()) paths.push_back((exe.parent_path() / "libghostline_cuda.so").string());
  paths.emplace_back(GHOSTLINE_CUDA_MODULE);
  return paths;
}

struct Loaded {
  const CudaModuleApi* api = nullptr;
  std::string why_not;  // when api is null
};

const Loaded& loaded() {
  static const Loaded module = [] {
    Loaded l;
    if (!nvidia_driver_present()) {
      l.why_not = "no CUDA device (no NVIDIA driver: /dev/nvidiactl is missing)";
      return l;
    }
    std::string errors;
    for (const std::string& path : module_candidates()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        errors += std::string(errors.empty() ? "" : "; ") + dlerror();
        continue;
      }
      using Entry = const CudaModuleApi* (*)();
      const auto entry = reinterpret_cast<Entry>(dlsym(handle, "ghostline_cuda_module"));
      const CudaModuleApi* api = entry ? entry() : nullptr;
      if (api == nullptr || api->version != kCudaModuleVersion) {
        errors += (errors.empty() ? "" : "; ") + path + " is not this build's CUDA module";
        dlclose(handle);
        continue;
      }
      l.api = api;  // stays loaded: the backend's code and cuBLAS live in it
      return l;
    }
    l.why_not = "the CUDA backend module could not be loaded (" + errors + ")";
    return l;
  }();
  return module;
}

}  // namespace

CudaStatus cuda_status() {
  const Loaded& l = loaded();
  if (l.api == nullptr) return {false, l.why_not};
  return l.api->status();
}

std::unique_ptr<Backend> make_cuda_backend(const Model& model, KvBlockPool& pool,
                                           const BackendOptions& options) {
  const Loaded& l = loaded();
  if (l.api == nullptr) throw BackendUnavailable(l.why_not);
  return l.api->make(model, pool, options);
}

KernelCheck cuda_kernel_check() {
  const Loaded& l = loaded();
  if (l.api == nullptr) throw BackendUnavailable(l.why_not);
  return l.api->check_kernels();  // throws BackendUnavailable without a device
}

}  // namespace ghostline::engine

#endif
