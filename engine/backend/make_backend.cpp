// make_backend: the backend of each kind, Auto resolved to the one that can run the model here.
#include <memory>

#include "engine/backend/backend.h"

namespace ghostline::engine {

std::unique_ptr<Backend> make_backend(const Model& model, KvBlockPool& pool,
                                      const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::Reference:
      return make_reference_backend(model, pool);
    case BackendKind::Cuda:
      return make_cuda_backend(model, pool, options);
    case BackendKind::Auto:
      if (cuda_status().available) {
        try {
          return make_cuda_backend(model, pool, options);
        } catch (const BackendUnavailable&) {
          // A model the CUDA backend does not implement runs on the CPU.
        }
      }
      break;
    case BackendKind::Cpu:
      break;
  }
  return make_cpu_backend(model, pool, options);
}

}  // namespace ghostline::engine
