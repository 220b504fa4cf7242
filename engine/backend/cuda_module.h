// The seam between the engine and the CUDA backend, which is built as a module
// (libghostline_cuda.so) and loaded only when a machine has an NVIDIA driver: a process that
// runs on the CPU never maps cuBLAS, which alone is over 100 MB resident. The module resolves
// the few engine functions it calls from the executable that loads it (executables export
// their symbols for this).
#pragma once

#include <memory>

#include "engine/backend/backend.h"

namespace ghostline::engine {

inline constexpr int kCudaModuleVersion = 3;

struct CudaModuleApi {
  int version;  // kCudaModuleVersion of the build that made the module
  CudaStatus (*status)();
  std::unique_ptr<Backend> (*make)(const Model& model, KvBlockPool& pool,
                                   const BackendOptions& options);
  KernelCheck (*check_kernels)();
};

}  // namespace ghostline::engine

// The module's one exported entry point.
extern "C" const ghostline::engine::CudaModuleApi* ghostline_cuda_module();
