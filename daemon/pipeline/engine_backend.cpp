#include "daemon/pipeline/engine_backend.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <stdexcept>
#include <string>

namespace ghostline::daemon {

engine::BackendKind engine_backend(BackendChoice choice, std::string* note) {
  switch (choice) {
    case BackendChoice::Cpu:
      return engine::BackendKind::Cpu;
    case BackendChoice::Cuda: {
      const engine::CudaStatus status = engine::cuda_status();
      if (!status.available) throw std::runtime_error("--backend cuda: " + status.description);
      return engine::BackendKind::Cuda;
    }
    case BackendChoice::Remote:
      throw std::runtime_error("--backend remote: not available in this build");
    case BackendChoice::Auto:
      break;
  }
  const engine::CudaStatus status = engine::cuda_status();
  if (!status.available) {
    const std::string why =
        "CUDA backend not used (" + status.description + "): running on the CPU";
    if (note) {
      *note = why;
    } else {
      static std::once_flag said;
      std::call_once(said, [&] { spdlog::info("{}", why); });
    }
  }
  return engine::BackendKind::Auto;
}

}  // namespace ghostline::daemon
