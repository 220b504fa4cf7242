// make_backend: the backend of each kind, Auto resolved to the one that can run the model here.
#include <memory>
#include <stdexcept>

#include "engine/backend/backend.h"
#include "engine/sampling/sampler.h"

namespace ghostline::engine {

bool forward_greedy_on_host(Backend& backend, int n_vocab, const ForwardBatch& batch,
                            std::span<int32_t> tokens, std::vector<float>& scratch) {
  if (tokens.size() < size_t(batch.n_logits))
    throw std::invalid_argument("forward_greedy: room for fewer tokens than logits rows");
  const size_t n = size_t(n_vocab);
  scratch.resize(size_t(batch.n_logits) * n);
  if (!backend.forward(batch, scratch)) return false;
  for (size_t i = 0; i < size_t(batch.n_logits); ++i)
    tokens[i] = argmax(std::span<const float>(scratch).subspan(i * n, n));
  return true;
}

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
