// The CUDA entry points of a build without the CUDA toolkit: the backend reports why it cannot
// run, so `--backend cuda` fails with a clear message and `auto` uses the CPU.
#ifndef GHOSTLINE_HAVE_CUDA

#include "engine/backend/backend.h"

namespace ghostline::engine {

CudaStatus cuda_status() {
  return {false, "this ghostline was built without CUDA (no CUDA toolkit found at configure time)"};
}

std::unique_ptr<Backend> make_cuda_backend(const Model&, KvBlockPool&, const BackendOptions&) {
  throw BackendUnavailable(cuda_status().description);
}

KernelCheck cuda_kernel_check() {
  throw BackendUnavailable(cuda_status().description);
}

}  // namespace ghostline::engine

#endif
