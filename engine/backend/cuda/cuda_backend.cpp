// The CUDA backend: the forward pass of the reference backend on the GPU. Weights are uploaded
// once (quantized types the kernels read stay quantized, others become F16); decode and short
// verification batches use the mat-vec kernel, longer batches dequantize weight tiles to F32
// and multiply with cuBLAS. K/V live in one device array of pool-capacity blocks addressed by
// the host pool's BlockIds.
//
// The device KV is the only copy: the pool keeps no host arena, and when it copies a shared
// partial block before a sequence extends it (copy-on-extend), the backend queues the copy of
// the device block on its stream, ahead of the kernels that write into it. Nothing crosses per
// step but the token ids, the block table and the logits.
//
// A step of up to kMaxMatvecTokens tokens (decode, verification) runs as a CUDA graph captured
// the first time its shape (tokens, logits rows) is seen: one launch instead of ~18 per layer.
// The kernels read the first position from device memory, so the graph replays at any position;
// it is captured again only when a buffer it names is reallocated. GHOSTLINE_CUDA_GRAPHS=0 runs
// every kernel by itself (to measure what the graphs save). Each forward synchronizes once.
// GHOSTLINE_CUDA_MATVEC=rows computes decode's mat-vecs with the rows kernel, `int8` the
// quantized types' mat-vecs of every step with integer dot products (cuda_kernels.cuh; `blocks`,
// the default, the first). GHOSTLINE_CUDA_GEMM=f16 runs the longer batches' products on tensor
// cores: weights and activations rounded to fp16, sums in F32 (F32 and BF16 weights keep the F32
// GEMM).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_kernels.cuh"
#include "engine/backend/cuda_module.h"
#include "engine/gguf/quant.h"
#include "engine/model/model.h"
#include "engine/model/model_weights.h"

namespace ghostline::engine {

// Each kernel alone against the host's arithmetic (cuda_kernel_check.cpp).
KernelCheck check_cuda_kernels();
namespace {

using cuda::DeviceMatrix;

constexpr int kB = KvBlockPool::kBlockTokens;
// Weight elements dequantized per GEMM tile (64 MiB of F32 scratch).
constexpr size_t kTileElems = size_t(16) << 20;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS: ") + what + ": status " + std::to_string(int(s)));
}

}  // namespace

namespace cuda {

// y = W x for a long batch of n tokens, by tiles of tile_rows of W's rows dequantized into
// `tile`. Without x16: F32 tiles and the handle's pedantic F32 GEMM (no TF32). With x16, on
// tensor cores (GHOSTLINE_CUDA_GEMM=f16): x rounded to fp16 into x16 (n * w.cols values), fp16
// tiles (an F16 matrix is read in place, as one tile), products summed in F32; fp16 inputs with
// F32 sums are what tensor cores compute, so the handle takes CUBLAS_DEFAULT_MATH for it and is
// left pedantic. Declared in cuda_kernels.cuh: the kernel check (cuda_kernel_check.cpp) calls it
// too.
void matmul_tiles(cublasHandle_t h, const DeviceMatrix& w, const float* x, int n, uint16_t* x16,
                  void* tile, int tile_rows, float* y, cudaStream_t s) {
  const bool f16 = x16 != nullptr, in_place = f16 && w.type == uint32_t(GgmlType::F16);
  if (in_place) tile_rows = w.rows;
  const float one = 1.0f, zero = 0.0f;
  if (f16) {
    round_to_f16(x, size_t(n) * w.cols, x16, s);
    check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  for (int r0 = 0; r0 < w.rows; r0 += tile_rows) {
    const int rows = std::min(tile_rows, w.rows - r0);
    // Column-major view: the tile is W_tile^T (cols x rows), x is cols x n, y is rows x n with
    // leading dimension w.rows; y_tile = W_tile x.
    if (!f16) {
      dequantize_rows(w, r0, rows, static_cast<float*>(tile), s);
      check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, w.cols, &one,
                        static_cast<const float*>(tile), w.cols, x, w.cols, &zero, y + r0, w.rows),
            "cublasSgemm");
      continue;
    }
    const void* t = w.data;
    if (!in_place) {
      dequantize_rows_f16(w, r0, rows, static_cast<uint16_t*>(tile), s);
      t = tile;
    }
    check(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, w.cols, &one, t, CUDA_R_16F, w.cols,
                       x16, CUDA_R_16F, w.cols, &zero, y + r0, CUDA_R_32F, w.rows,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }
  if (f16) check(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
}

}  // namespace cuda

namespace {

// Memory from one of CUDA's allocators, freed with it.
template <typename Allocator>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(size_t bytes) {
    if (bytes > 0) check(Allocator::allocate(&ptr_, bytes), Allocator::kName);
    bytes_ = bytes;
  }
  CudaBuffer(CudaBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~CudaBuffer() {
    if (ptr_) Allocator::release(ptr_);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory.
struct DeviceAllocator {
  static constexpr const char* kName = "cudaMalloc";
  static cudaError_t allocate(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
  static void release(void* p) { cudaFree(p); }
};
// Page-locked host memory, so that copies are asynchronous and take the fast path.
struct PinnedAllocator {
  static constexpr const char* kName = "cudaMallocHost";
  static cudaError_t allocate(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
  static void release(void* p) { cudaFreeHost(p); }
};
using DeviceBuffer = CudaBuffer<DeviceAllocator>;
using PinnedBuffer = CudaBuffer<PinnedAllocator>;

// Layers of a long batch the host queues ahead of the device at most (see run_layers).
constexpr int kLayersAhead = 2;

// The backend's stream, cuBLAS handle and the events that mark queued layers done: created
// first and released last, also when a later step of the backend's constructor throws.
class CudaContext {
 public:
  CudaContext() {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    for (cudaEvent_t& e : layer_done_)
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    // Plain F32 GEMMs (no TF32): prefill logits stay within the F32 tolerance of the oracle.
    check(cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  }
  ~CudaContext() {
    if (stream_) cudaStreamSynchronize(stream_);
    if (cublas_) cublasDestroy(cublas_);
    for (cudaEvent_t e : layer_done_)
      if (e) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  // The event recorded after layer l of a batch (one of kLayersAhead, in turn).
  cudaEvent_t layer_done(int l) const { return layer_done_[l % kLayersAhead]; }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t layer_done_[kLayersAhead] = {};
};

// An instantiated graph, destroyed with it.
struct GraphExecDeleter {
  void operator()(cudaGraphExec_t g) const { cudaGraphExecDestroy(g); }
};
using GraphExec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, GraphExecDeleter>;

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::string_view(v) != "0";
}

// GHOSTLINE_CUDA_PROFILE=1: where the forwards' time went, printed to stderr when the backend is
// destroyed. The device's time between two marks comes from CUDA events on the stream: each
// kernel apart when the step graphs are off (GHOSTLINE_CUDA_GRAPHS=0), the whole step when they
// are on (no marks inside a graph); the host's from its clock. The events cost a little, so the
// figures are for finding where the time goes, not for speed tables.
class StepProfile {
 public:
  explicit StepProfile(cudaStream_t stream) : stream_(stream) {}
  ~StepProfile() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  void begin() {
    labels_.clear();
    mark("");
  }
  // The device's time since the previous mark goes to `label`.
  void mark(const char* label) {
    if (labels_.size() == events_.size()) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    check(cudaEventRecord(events_[labels_.size()], stream_), "cudaEventRecord");
    labels_.push_back(label);
  }
  // After the stream has synchronized.
  void end() {
    for (size_t i = 1; i < labels_.size(); ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]), "cudaEventElapsedTime");
      add(device_, labels_[i], ms);
    }
    ++forwards_;
  }
  void host(const char* label, double ms) { add(host_, label, ms); }

  void print() const {
    std::fprintf(stderr, "ghostline: CUDA profile of %ld forwards (ms in all, us per call):\n",
                 forwards_);
    for (const auto* part : {&device_, &host_}) {
      std::vector<std::pair<std::string, Total>> rows(part->begin(), part->end());
      std::sort(rows.begin(), rows.end(),
                [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
      for (const auto& [label, t] : rows)
        std::fprintf(stderr, "  %-6s %-24s %10.3f ms %8ld calls %9.1f us\n",
                     part == &device_ ? "device" : "host", label.c_str(), t.ms, t.calls,
                     1000.0 * t.ms / double(std::max(1L, t.calls)));
    }
  }

 private:
  struct Total {
    double ms = 0;
    long calls = 0;
  };
  static void add(std::map<std::string, Total>& m, const std::string& label, double ms) {
    Total& t = m[label];
    t.ms += ms;
    ++t.calls;
  }
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  std::vector<const char*> labels_;
  std::map<std::string, Total> device_, host_;
  long forwards_ = 0;
};

struct LayerMatrices {
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  const float *attn_norm = nullptr, *ffn_norm = nullptr;
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(const Model& model, KvBlockPool& pool, const BackendOptions& options)
      : model_(model), pool_(pool), use_graphs_(env_flag("GHOSTLINE_CUDA_GRAPHS", true)) {
    const ModelConfig& c = model.config();
    check_supported(c);
    context_ = std::make_unique<CudaContext>();
    stream_ = context_->stream();
    cublas_ = context_->cublas();
    if (env_flag("GHOSTLINE_CUDA_PROFILE", false))
      profile_ = std::make_unique<StepProfile>(stream_);
    if (const char* v = std::getenv("GHOSTLINE_CUDA_MATVEC"); v && *v) {
      const std::string_view kernel(v);
      if (kernel == "rows")
        cuda::select_matvec_kernel(cuda::MatvecKernel::Rows);
      else if (kernel == "int8")
        cuda::select_matvec_kernel(cuda::MatvecKernel::Int8);
      else if (kernel == "blocks")
        cuda::select_matvec_kernel(cuda::MatvecKernel::Blocks);
      else
        std::fprintf(stderr,
                     "ghostline: GHOSTLINE_CUDA_MATVEC=%s: expected blocks, rows or int8\n", v);
    }
    if (const char* v = std::getenv("GHOSTLINE_CUDA_GEMM"); v && *v) {
      const std::string_view gemm(v);
      if (gemm == "f16" || gemm == "f32")
        gemm_f16_ = gemm == "f16";
      else
        std::fprintf(stderr, "ghostline: GHOSTLINE_CUDA_GEMM=%s: expected f32 or f16\n", v);
    }
    upload_weights();
    kv_ = DeviceBuffer(size_t(pool.capacity()) * pool.block_bytes());
    attn_scratch_ = DeviceBuffer(cuda::attention_scratch_floats(c.n_head, c.head_dim) * 4);
    check(cudaMemsetAsync(kv_.as<void>(), 0, kv_.bytes(), stream_), "cudaMemset");
    reserve(std::max(1, options.max_batch_tokens));
    check(cudaStreamSynchronize(stream_), "upload");
    // The device array is the only copy of the blocks: the pool's host arena goes, and its
    // copy-on-extend copies the device block. Last: a constructor that throws never runs the
    // destructor that gives the arena back (`--backend auto` then runs on the CPU with it).
    pool_.keep_on_device([this](BlockId from, BlockId to) {
      const size_t bytes = pool_.block_bytes();
      check(cudaMemcpyAsync(kv_.as<uint8_t>() + size_t(to) * bytes,
                            kv_.as<uint8_t>() + size_t(from) * bytes, bytes,
                            cudaMemcpyDeviceToDevice, stream_),
            "copy KV block");
    });
  }

  ~CudaBackend() override {
    pool_.keep_on_device(nullptr);
    if (profile_) profile_->print();
  }

  std::string_view name() const override { return "cuda"; }
  int threads() const override { return 1; }
  // Up to kMaxMatvecTokens tokens share one read of the weights in the mat-vec kernel and each
  // gets the bits of a single step; decode is bound by reading the weights, so an extra token
  // costs little.
  VerifyCost verify_cost() const override {
    return {.max_tokens = cuda::kMaxMatvecTokens, .per_token = 0.1};
  }
  // From the H200 report of 2026-11-27 17:05 (gpu-report-2026-11-27-1705.md), until the
  // speculative loop has timed the draft's forwards here: a step of the 0.5B draft took 2.4 ms
  // against 4.4 ms for the 1.5B target (decode waits on latency, not on bytes, so a small draft
  // is not much cheaper), and its prefill ran at about 21,900 tokens/s (0.05 ms a token).
  DraftCost draft_cost() const override { return {.step = 0.55, .catch_up_per_token = 0.01}; }

  bool forward(const ForwardBatch& batch, std::span<float> logits) override {
    if (logits.size() < size_t(std::max(0, batch.n_logits)) * model_.config().n_vocab)
      throw std::invalid_argument("CUDA backend: logits buffer too small");
    return step(batch, logits, {});
  }

  // The argmax runs where the logits are: n_logits ids cross instead of n_logits x n_vocab
  // floats, and the host searches nothing.
  bool forward_greedy(const ForwardBatch& batch, std::span<int32_t> tokens) override {
    if (tokens.size() < size_t(std::max(0, batch.n_logits)))
      throw std::invalid_argument("CUDA backend: room for fewer tokens than logits rows");
    return step(batch, {}, tokens);
  }

 private:
  // A forward that hands over the logits (`logits` not empty) or the greedy tokens.
  bool step(const ForwardBatch& batch, std::span<float> logits, std::span<int32_t> greedy) {
    const ModelConfig& c = model_.config();
    const int n = static_cast<int>(batch.tokens.size());
    if (n == 0) return true;
    if (batch.n_logits < 0 || batch.n_logits > n)
      throw std::invalid_argument("CUDA backend: n_logits outside the batch");
    const bool want_ids = logits.empty();
    const int end = batch.start_pos + n;
    const int n_blocks = (end + kB - 1) / kB;
    if (batch.blocks.size() < size_t(n_blocks))
      throw std::invalid_argument("CUDA backend: block table shorter than the batch");
    reserve(n);
    if (n_blocks > max_blocks_) reserve_blocks(n_blocks);
    const int m = batch.n_logits;
    reserve_logits(m);
    const bool graph = use_graphs_ && n <= cuda::kMaxMatvecTokens;
    // A graph runs the step whole: a cancel is seen before it starts.
    if (graph && batch.cancel && batch.cancel->load(std::memory_order_relaxed)) return false;

    Clock::time_point t0, t1, t2;  // read only when profiling: the step's hot path stays bare
    if (profile_) {
      t0 = Clock::now();
      profile_->begin();
    }
    // The few bytes that cross, through pinned memory: the first position and the token ids in
    // one copy, and the block table.
    int32_t* io = h_io_.as<int32_t>();
    io[0] = batch.start_pos;
    std::memcpy(io + 1, batch.tokens.data(), size_t(n) * sizeof(int32_t));
    std::memcpy(h_blocks_.as<int32_t>(), batch.blocks.data(), size_t(n_blocks) * sizeof(int32_t));
    check(cudaMemcpyAsync(d_io_.as<int32_t>(), io, size_t(n + 1) * sizeof(int32_t),
                          cudaMemcpyHostToDevice, stream_),
          "upload position and tokens");
    check(cudaMemcpyAsync(d_blocks_.as<int32_t>(), h_blocks_.as<int32_t>(),
                          size_t(n_blocks) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_),
          "upload block table");
    mark("upload");

    if (graph) {
      launch_step_graph(n, m, want_ids);
      mark("step graph");
    } else {
      if (!run_layers(batch.cancel, n)) {
        check(cudaStreamSynchronize(stream_), "forward");
        return false;
      }
      compute_logits(n, m, want_ids);
    }
    const size_t out_bytes = size_t(m) * (want_ids ? sizeof(int32_t) : c.n_vocab * sizeof(float));
    if (m > 0)
      check(cudaMemcpyAsync(h_logits_.as<void>(),
                            want_ids ? d_greedy_.as<void>() : logits_.as<void>(), out_bytes,
                            cudaMemcpyDeviceToHost, stream_),
            want_ids ? "download greedy tokens" : "download logits");
    mark(want_ids ? "greedy tokens download" : "logits download");
    if (profile_) t1 = Clock::now();
    check(cudaStreamSynchronize(stream_), "forward");
    if (profile_) t2 = Clock::now();
    if (m > 0)
      std::memcpy(want_ids ? static_cast<void*>(greedy.data()) : logits.data(),
                  h_logits_.as<void>(), out_bytes);
    if (profile_) {
      profile_->end();
      profile_->host("queue the work", ms_between(t0, t1));
      profile_->host("wait for the device", ms_between(t1, t2));
      profile_->host(want_ids ? "copy the greedy tokens" : "copy the logits",
                     ms_between(t2, Clock::now()));
    }
    return true;
  }

  static void check_supported(const ModelConfig& c) {
    if (c.arch != "llama" && c.arch != "qwen2")
      throw BackendUnavailable("the CUDA backend implements llama and qwen2, not '" + c.arch + "'");
    if (c.head_dim > cuda::kMaxHeadDim || c.head_dim % 2 != 0)
      throw BackendUnavailable("the CUDA backend supports head dimensions up to " +
                               std::to_string(cuda::kMaxHeadDim) + ", not " +
                               std::to_string(c.head_dim));
    if (c.n_head_kv <= 0 || c.n_head % c.n_head_kv != 0)
      throw BackendUnavailable("the CUDA backend needs n_head a multiple of n_head_kv");
  }

  // Every weight tensor once (a tied output shares the embedding's copy).
  void upload_weights() {
    const ModelWeights& w = model_.weights();
    std::vector<std::string> converted;
    embd_ = matrix(w.token_embd, converted);
    output_ = matrix(w.output, converted);
    output_norm_ = vector_f32(w.output_norm);
    for (const LayerWeights& l : w.layers) {
      LayerMatrices m;
      m.wq = matrix(l.wq, converted);
      m.wk = matrix(l.wk, converted);
      m.wv = matrix(l.wv, converted);
      m.wo = matrix(l.wo, converted);
      m.w_gate = matrix(l.w_gate, converted);
      m.w_up = matrix(l.w_up, converted);
      m.w_down = matrix(l.w_down, converted);
      m.attn_norm = vector_f32(l.attn_norm);
      m.ffn_norm = vector_f32(l.ffn_norm);
      if (l.bq) m.bq = vector_f32(l.bq);
      if (l.bk) m.bk = vector_f32(l.bk);
      if (l.bv) m.bv = vector_f32(l.bv);
      layers_.push_back(m);
    }
    if (!converted.empty())
      std::fprintf(stderr,
                   "ghostline: CUDA backend converted %zu tensors to F16 on upload (types its "
                   "kernels do not read: e.g. %s)\n",
                   converted.size(), converted.front().c_str());
  }

  DeviceMatrix matrix(const GgufTensor* t, std::vector<std::string>& converted) {
    if (auto it = matrices_.find(t); it != matrices_.end()) return it->second;
    DeviceMatrix m{.type = static_cast<uint32_t>(t->type),
                   .rows = static_cast<int>(t->shape[1]),
                   .cols = static_cast<int>(t->shape[0]),
                   .row_bytes = ggml_row_bytes(t->type, t->shape[0])};
    const size_t bytes = m.row_bytes * size_t(m.rows);
    if (cuda::kernels_read_type(m.type)) {
      m.data = upload(t->data, bytes);
    } else {
      // Converted row by row so that the host holds one row of F32 at a time.
      converted.push_back(t->name + " (" + std::string(ggml_type_name(t->type)) + ")");
      std::vector<float> row(size_t(m.cols));
      std::vector<uint16_t> half(size_t(m.cols) * m.rows);
      for (int r = 0; r < m.rows; ++r) {
        gguf::dequantize_row(t->type, t->data + size_t(r) * m.row_bytes, row.data(), m.cols);
        for (int i = 0; i < m.cols; ++i)
          half[size_t(r) * m.cols + i] = gguf::fp32_to_fp16(row[size_t(i)]);
      }
      m.type = static_cast<uint32_t>(GgmlType::F16);
      m.row_bytes = size_t(m.cols) * 2;
      m.data = upload(reinterpret_cast<const std::byte*>(half.data()), half.size() * 2);
    }
    matrices_[t] = m;
    return m;
  }

  const float* vector_f32(const GgufTensor* t) {
    const int64_t n = t->shape[0];
    std::vector<float> v(static_cast<size_t>(n));
    gguf::dequantize_row(t->type, t->data, v.data(), n);
    return reinterpret_cast<const float*>(
        upload(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)));
  }

  const uint8_t* upload(const std::byte* src, size_t bytes) {
    DeviceBuffer& b = weights_.emplace_back(bytes);
    // Synchronous: the source may be a temporary, and this runs once at load.
    check(cudaMemcpy(b.as<void>(), src, bytes, cudaMemcpyHostToDevice), "upload weights");
    return b.as<uint8_t>();
  }

  // Activation buffers for batches of up to n tokens (grown on demand, never shrunk).
  void reserve(int n) {
    if (n <= max_tokens_) return;
    const ModelConfig& c = model_.config();
    const size_t N = size_t(n);
    x_ = DeviceBuffer(N * c.n_embd * 4);
    xb_ = DeviceBuffer(N * std::max(c.n_embd, c.q_dim()) * 4);
    q_ = DeviceBuffer(N * c.q_dim() * 4);
    k_ = DeviceBuffer(N * c.kv_dim() * 4);
    v_ = DeviceBuffer(N * c.kv_dim() * 4);
    att_ = DeviceBuffer(N * c.q_dim() * 4);
    gate_ = DeviceBuffer(N * c.n_ff * 4);
    up_ = DeviceBuffer(N * c.n_ff * 4);
    proj_ = DeviceBuffer(N * c.n_embd * 4);
    d_io_ = DeviceBuffer((N + 1) * 4);
    h_io_ = PinnedBuffer((N + 1) * 4);
    // F32 tiles (fp16 ones take half of it).
    if (n > cuda::kMaxMatvecTokens && !tile_.bytes()) tile_ = DeviceBuffer(kTileElems * 4);
    // The fp16 activations of the widest product (the down projection's input), for the
    // batches that take a GEMM.
    if (gemm_f16_ && n > cuda::kMaxMatvecTokens)
      x16_ = DeviceBuffer(N * std::max({c.n_embd, c.q_dim(), c.n_ff}) * sizeof(uint16_t));
    max_tokens_ = n;
    graphs_.clear();  // they name the buffers replaced above
    if (max_blocks_ == 0) reserve_blocks(std::max(1, model_.n_ctx() / kB + 1));
  }

  // Logits buffers for up to m rows: only the rows asked for cross, so they are sized apart
  // from the batch (a long prefill usually wants one).
  void reserve_logits(int m) {
    if (m <= max_logits_) return;
    const size_t bytes = size_t(m) * model_.config().n_vocab * sizeof(float);
    logits_ = DeviceBuffer(bytes);
    h_logits_ = PinnedBuffer(bytes);  // the logits, or the greedy tokens, on their way out
    d_greedy_ = DeviceBuffer(size_t(m) * sizeof(int32_t));
    d_argmax_ = DeviceBuffer(cuda::argmax_scratch_bytes(m, model_.config().n_vocab));
    max_logits_ = m;
    graphs_.clear();
  }

  void reserve_blocks(int n_blocks) {
    d_blocks_ = DeviceBuffer(size_t(n_blocks) * 4);
    h_blocks_ = PinnedBuffer(size_t(n_blocks) * 4);
    max_blocks_ = n_blocks;
    graphs_.clear();
  }

  cuda::KvLayout kv_layout() const {
    return {.base = kv_.as<uint16_t>(),
            .kv_dim = pool_.kv_dim(),
            .block_elems = pool_.block_bytes() / sizeof(uint16_t)};
  }

  // Batches longer than a step whose product the int8 kernel reads (a keystroke's new text) go
  // through it a step of kMaxMatvecTokens tokens at a time, each step reading the weights once,
  // rather than dequantizing every weight for a GEMM: up to this many tokens.
  static constexpr int kInt8BatchMaxTokens = 32;

  bool by_steps(const DeviceMatrix& w, int n) const {
    return n <= cuda::kMaxMatvecTokens || (n <= kInt8BatchMaxTokens && cuda::int8_reads(w));
  }

  // The mat-vec kernel over n tokens, kMaxMatvecTokens at a time.
  void matvec_steps(const DeviceMatrix& w, const float* x, int n, float* y, bool accumulate,
                    const float* bias) {
    for (int t0 = 0; t0 < n; t0 += cuda::kMaxMatvecTokens)
      cuda::matvec(w, x + size_t(t0) * w.cols, std::min(cuda::kMaxMatvecTokens, n - t0),
                   y + size_t(t0) * w.rows, accumulate, bias, stream_);
  }

  // y = W x for n tokens: the mat-vec kernel for short batches, a GEMM over dequantized tiles
  // of rows for long ones.
  void matmul(const DeviceMatrix& w, const float* x, int n, float* y) {
    if (by_steps(w, n)) {
      matvec_steps(w, x, n, y, /*accumulate=*/false, /*bias=*/nullptr);
      return;
    }
    // fp16 tiles of a multiple of 8 rows keep each tile's output 32-byte aligned.
    const size_t fit = kTileElems / size_t(w.cols);
    const bool f16 = gemm_f16(w);
    const int tile_rows = static_cast<int>(f16 ? std::max<size_t>(8, fit / 8 * 8)
                                               : std::max<size_t>(1, fit));
    cuda::matmul_tiles(cublas_, w, x, n, f16 ? x16_.as<uint16_t>() : nullptr, tile_.as<void>(),
                       tile_rows, y, stream_);
  }

  // Whether w's long products run on tensor cores (GHOSTLINE_CUDA_GEMM=f16): every type whose
  // values fp16 holds, so not F32, nor BF16 with its wider range.
  bool gemm_f16(const DeviceMatrix& w) const {
    return gemm_f16_ && w.type != uint32_t(GgmlType::F32) && w.type != uint32_t(GgmlType::BF16);
  }

  // y = W x + bias (a projection with a bias: qwen2's Q, K, V): in the mat-vec kernel's output
  // for short batches, else a product and an add.
  void matmul_bias(const DeviceMatrix& w, const float* x, int n, const float* bias, float* y) {
    if (by_steps(w, n)) {
      matvec_steps(w, x, n, y, /*accumulate=*/false, bias);
      return;
    }
    matmul(w, x, n, y);
    if (bias) cuda::add_bias(y, bias, n, w.rows, stream_);
  }

  // residual += W x: in the mat-vec kernel's output for short batches, else a product and an add.
  void matmul_add(const DeviceMatrix& w, const float* x, int n, float* residual, float* scratch) {
    if (by_steps(w, n)) {
      matvec_steps(w, x, n, residual, /*accumulate=*/true, /*bias=*/nullptr);
      return;
    }
    matmul(w, x, n, scratch);
    cuda::add_in_place(residual, scratch, size_t(n) * w.rows, stream_);
  }

  // A profile mark (GHOSTLINE_CUDA_PROFILE), never inside a graph being captured.
  void mark(const char* label) {
    if (profile_ && !capturing_) profile_->mark(label);
  }

  // The step of n tokens with logits (or their greedy tokens) for the last m as one graph,
  // captured on first use.
  void launch_step_graph(int n, int m, bool greedy) {
    GraphExec& exec = graphs_[{n, m, greedy}];
    if (!exec) {
      check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "begin capture");
      capturing_ = true;
      cudaGraph_t graph = nullptr;
      try {
        run_layers(nullptr, n);
        compute_logits(n, m, greedy);
      } catch (...) {
        capturing_ = false;
        cudaStreamEndCapture(stream_, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      capturing_ = false;
      check(cudaStreamEndCapture(stream_, &graph), "end capture");
      cudaGraphExec_t instance = nullptr;
      const cudaError_t e = cudaGraphInstantiate(&instance, graph, 0);
      cudaGraphDestroy(graph);
      check(e, "instantiate graph");
      exec.reset(instance);
    }
    check(cudaGraphLaunch(exec.get(), stream_), "launch graph");
  }

  // Queues the layers of a batch of n tokens; false when `cancel` was seen between layers.
  // The device runs whatever was queued, and queuing every layer takes the host far less than
  // the device needs to run them: a cancel seen between layers would come after all of them
  // were queued, and a long prefill would run to its end. So outside a graph's capture, a
  // batch longer than a step (with a cancel flag) queues layer l only once layer
  // l - kLayersAhead has run: the device always has the next layer queued, and a cancel stops
  // it within about kLayersAhead layers' work.
  bool run_layers(const std::atomic<bool>* cancel, int n) {
    const ModelConfig& c = model_.config();
    const int E = c.n_embd;
    const cuda::KvLayout kv = kv_layout();
    const cuda::RopeParams rope{.n_head = c.n_head,
                                .n_head_kv = c.n_head_kv,
                                .head_dim = c.head_dim,
                                .theta_base = c.rope_theta,
                                .freq_scale = c.rope_freq_scale,
                                .neox = c.rope_neox};
    float *x = x_.as<float>(), *xb = xb_.as<float>(), *q = q_.as<float>(), *k = k_.as<float>(),
          *v = v_.as<float>(), *att = att_.as<float>(), *gate = gate_.as<float>(),
          *up = up_.as<float>(), *proj = proj_.as<float>();
    const int32_t* blocks = d_blocks_.as<int32_t>();
    const int32_t* start_pos = d_io_.as<int32_t>();
    const int32_t* tokens = start_pos + 1;

    cuda::embed(embd_, tokens, n, x, stream_);
    mark("embedding");
    const bool paced = cancel && !capturing_ && n > cuda::kMaxMatvecTokens;
    for (int l = 0; l < c.n_layer; ++l) {
      if (paced && l >= kLayersAhead)
        check(cudaEventSynchronize(context_->layer_done(l)), "wait for a layer");
      if (l > 0 && cancel && cancel->load(std::memory_order_relaxed)) return false;
      const LayerMatrices& lw = layers_[size_t(l)];
      const bool step = n <= cuda::kMaxMatvecTokens;
      const cuda::MatvecTarget qkv[] = {
          {&lw.wq, q, lw.bq}, {&lw.wk, k, lw.bk}, {&lw.wv, v, lw.bv}};
      // With the int8 kernel the norm is folded into the projections that read it.
      if (!step ||
          !cuda::matvec_shared_input_normed(qkv, 3, x, lw.attn_norm, c.rms_eps, n, stream_)) {
        cuda::rmsnorm(x, lw.attn_norm, n, E, c.rms_eps, xb, stream_);
        mark("norms");
        if (!step || !cuda::matvec_shared_input(qkv, 3, xb, n, stream_)) {
          matmul_bias(lw.wq, xb, n, lw.bq, q);
          matmul_bias(lw.wk, xb, n, lw.bk, k);
          matmul_bias(lw.wv, xb, n, lw.bv, v);
        }
      }
      mark("q, k, v");
      cuda::rope_store_kv(q, k, v, n, start_pos, rope, kv, l, blocks, stream_);
      mark("rope and KV store");
      // A batch whose products go by steps (the int8 kernel) splits its attention too.
      cuda::attention(kv, l, blocks, start_pos, n, q, c.n_head, c.n_head_kv, c.head_dim,
                      attn_scratch_.as<float>(), att, stream_, by_steps(lw.wq, n));
      mark("attention");
      matmul_add(lw.wo, att, n, x, proj);
      mark("attention output");

      if (!step || !cuda::matvec_swiglu_normed(lw.w_gate, lw.w_up, x, lw.ffn_norm, c.rms_eps, n,
                                               gate, stream_)) {
        cuda::rmsnorm(x, lw.ffn_norm, n, E, c.rms_eps, xb, stream_);
        mark("norms");
        if (!step || !cuda::matvec_swiglu(lw.w_gate, lw.w_up, xb, n, gate, stream_)) {
          matmul(lw.w_gate, xb, n, gate);
          matmul(lw.w_up, xb, n, up);
          cuda::swiglu(gate, up, size_t(n) * c.n_ff, stream_);
        }
      }
      mark("ffn gate, up, SwiGLU");
      matmul_add(lw.w_down, gate, n, x, proj);
      mark("ffn down");
      if (paced) check(cudaEventRecord(context_->layer_done(l), stream_), "mark a layer done");
    }
    check(cudaGetLastError(), "kernel launch");
    return true;
  }

  // Queues the final norm and output projection of the last m of n tokens into logits_, and
  // with `greedy` the argmax of each row into d_greedy_.
  void compute_logits(int n, int m, bool greedy) {
    if (m == 0) return;
    const ModelConfig& c = model_.config();
    const float* last = x_.as<float>() + size_t(n - m) * c.n_embd;
    const cuda::MatvecTarget output{&output_, logits_.as<float>(), nullptr};
    if (m > cuda::kMaxMatvecTokens ||
        !cuda::matvec_shared_input_normed(&output, 1, last, output_norm_, c.rms_eps, m,
                                          stream_)) {
      cuda::rmsnorm(last, output_norm_, m, c.n_embd, c.rms_eps, xb_.as<float>(), stream_);
      mark("norms");
      matmul(output_, xb_.as<float>(), m, logits_.as<float>());
    }
    mark("output");
    if (!greedy) return;
    cuda::argmax_rows(logits_.as<float>(), m, c.n_vocab, d_argmax_.as<void>(),
                      d_greedy_.as<int32_t>(), stream_);
    mark("argmax");
  }

  const Model& model_;
  KvBlockPool& pool_;
  // Declared before the device buffers, so it outlives them (cudaFree waits for the device).
  std::unique_ptr<CudaContext> context_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;

  std::vector<DeviceBuffer> weights_;
  std::map<const GgufTensor*, DeviceMatrix> matrices_;
  DeviceMatrix embd_, output_;
  const float* output_norm_ = nullptr;
  std::vector<LayerMatrices> layers_;

  DeviceBuffer kv_, attn_scratch_;
  int max_tokens_ = 0, max_blocks_ = 0, max_logits_ = 0;
  // d_io_: the batch's first position, then its token ids.
  DeviceBuffer x_, xb_, q_, k_, v_, att_, gate_, up_, proj_, logits_, d_greedy_, d_argmax_, tile_,
      x16_, d_io_, d_blocks_;
  PinnedBuffer h_io_, h_blocks_, h_logits_;

  const bool use_graphs_;
  bool gemm_f16_ = false;  // GHOSTLINE_CUDA_GEMM=f16
  std::unique_ptr<StepProfile> profile_;  // GHOSTLINE_CUDA_PROFILE
  bool capturing_ = false;
  // Step graphs by (tokens, logits rows, greedy tokens wanted); after the buffers they name, so
  // destroyed first.
  std::map<std::tuple<int, int, bool>, GraphExec> graphs_;
};

// Named differently from the engine's cuda_status / make_cuda_backend (the loader's), which the
// executable exports and which would otherwise take the place of these.
CudaStatus device_status() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return {false, std::string("no CUDA device (") + cudaGetErrorString(e) + ")"};
  if (count == 0) return {false, "no CUDA device"};
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return {false, "no usable CUDA device"};
  return {true, std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                    std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 20) +
                    " MiB)"};
}

KernelCheck checked_on_device() {
  const CudaStatus status = device_status();
  if (!status.available) throw BackendUnavailable(status.description);
  return check_cuda_kernels();
}

std::unique_ptr<Backend> make_backend_on_device(const Model& model, KvBlockPool& pool,
                                                const BackendOptions& options) {
  const CudaStatus status = device_status();
  if (!status.available) throw BackendUnavailable(status.description);
  return std::make_unique<CudaBackend>(model, pool, options);
}

}  // namespace

}  // namespace ghostline::engine

extern "C" __attribute__((visibility("default"))) const ghostline::engine::CudaModuleApi*
ghostline_cuda_module() {
  static const ghostline::engine::CudaModuleApi api{ghostline::engine::kCudaModuleVersion,
                                                    ghostline::engine::device_status,
                                                    ghostline::engine::make_backend_on_device,
                                                    ghostline::engine::checked_on_device};
  return &api;
}
