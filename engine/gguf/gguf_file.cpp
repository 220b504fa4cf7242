#include "engine/gguf/gguf_file.h"
#include "base/platform.h"
#include "engine/gguf/mapped_file_faults.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

namespace ghostline::engine {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr size_t kMaxDims = 4;           // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;      // guards the recursion against corrupt files
constexpr size_t kRenderedArrayValues = 8;
constexpr size_t kRenderedStringChars = 64;

// Size in bytes of a scalar value type; 0 for STRING/ARRAY or unknown ids.
size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::U16:
    case GgufValueType::I16:
      return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32:
      return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64:
      return 8;
    default:
      return 0;
  }
}

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::U16:
    case GgufValueType::I16:
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::BOOL:
      return true;
    default:
      return false;
  }
}

bool is_float(GgufValueType t) {
  return t == GgufValueType::F32 || t == GgufValueType::F64;
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Reads an integer-typed scalar. Returns false for a U64 that does not fit in int64_t.
bool load_int(const std::byte* p, GgufValueType t, int64_t& out) {
  switch (t) {
    case GgufValueType::U8:
      out = load<uint8_t>(p);
      return true;
    case GgufValueType::I8:
      out = load<int8_t>(p);
      return true;
    case GgufValueType::U16:
      out = load<uint16_t>(p);
      return true;
    case GgufValueType::I16:
      out = load<int16_t>(p);
      return true;
    case GgufValueType::U32:
      out = load<uint32_t>(p);
      return true;
    case GgufValueType::I32:
      out = load<int32_t>(p);
      return true;
    case GgufValueType::I64:
      out = load<int64_t>(p);
      return true;
    case GgufValueType::BOOL:
      out = load<uint8_t>(p) != 0;
      return true;
    case GgufValueType::U64: {
      uint64_t u = load<uint64_t>(p);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      out = static_cast<int64_t>(u);
      return true;
    }
    default:
      return false;
  }
}

double load_number(const std::byte* p, GgufValueType t) {
  if (t == GgufValueType::F32) return load<float>(p);
  if (t == GgufValueType::F64) return load<double>(p);
  if (t == GgufValueType::U64) return static_cast<double>(load<uint64_t>(p));
  int64_t i = 0;
  load_int(p, t, i);
  return static_cast<double>(i);
}

std::string human_bytes(size_t n) {
  char buf[32];
  if (n >= (size_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  else if (n >= 1024)
    std::snprintf(buf, sizeof buf, "%zu KiB", n / 1024);
  else
    std::snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

void render_string(std::string& out, std::string_view s) {
  out += '"';
  size_t shown = 0;
  for (char c : s) {
    if (shown++ == kRenderedStringChars) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

void render_scalar(std::string& out, const std::byte* p, GgufValueType t) {
  char buf[64];
  switch (t) {
    case GgufValueType::BOOL:
      out += load<uint8_t>(p) ? "true" : "false";
      return;
    case GgufValueType::F32:
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(load<float>(p)));
      break;
    case GgufValueType::F64:
      std::snprintf(buf, sizeof buf, "%.17g", load<double>(p));
      break;
    case GgufValueType::U64:
      std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(load<uint64_t>(p)));
      break;
    default: {
      int64_t i = 0;
      load_int(p, t, i);
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(i));
      break;
    }
  }
  out += buf;
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::U8:
      return "u8";
    case GgufValueType::I8:
      return "i8";
    case GgufValueType::U16:
      return "u16";
    case GgufValueType::I16:
      return "i16";
    case GgufValueType::U32:
      return "u32";
    case GgufValueType::I32:
      return "i32";
    case GgufValueType::F32:
      return "f32";
    case GgufValueType::BOOL:
      return "bool";
    case GgufValueType::STRING:
      return "string";
    case GgufValueType::ARRAY:
      return "array";
    case GgufValueType::U64:
      return "u64";
    case GgufValueType::I64:
      return "i64";
    case GgufValueType::F64:
      return "f64";
  }
  return "unknown";
}

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A read-only private mapping of the whole file.
class GgufFile::Mapping {
 public:
  Mapping(const std::filesystem::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw GgufError(path.string() + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      throw GgufError(path.string() + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw GgufError(path.string() + ": not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        throw GgufError(path.string() + ": cannot map " + human_bytes(size_) + ": " +
                        std::strerror(err));
      }
      addr_ = p;
      guard_.emplace(addr_, size_, path);
    }
    ::close(fd);
  }
  ~Mapping() {
    guard_.reset();
    if (addr_) ::munmap(addr_, size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const std::byte* data() const { return static_cast<const std::byte*>(addr_); }
  size_t size() const { return size_; }

  std::string lock_resident() {
    if (!addr_) return {};
    const auto refusal = platform::lock_resident(addr_, size_);
    if (!refusal) {
      locked_ = true;
      return {};
    }
    std::string why = "could not lock " + human_bytes(size_) + " of model data in memory (" +
                      refusal->error + ")";
    if (refusal->limit_bytes) {
      why += ", locked-memory limit is " + human_bytes(*refusal->limit_bytes);
      if (!refusal->how_to_raise.empty()) why += "; raise it with " + refusal->how_to_raise;
    }
    // Writing to every page of the private mapping makes each one an anonymous copy: the
    // pointers stay valid and, with no swap, the pages can no longer be dropped when idle.
    if (::mprotect(addr_, size_, PROT_READ | PROT_WRITE) != 0)
      return why + "; the data stays file-backed and may be paged out while idle";
    auto* bytes = static_cast<volatile unsigned char*>(addr_);
    const size_t page = platform::page_size();
    for (size_t off = 0; off < size_; off += page) bytes[off] = bytes[off];
    ::mprotect(addr_, size_, PROT_READ);
    return why + "; the data was copied into anonymous memory instead (" + human_bytes(size_) +
           " of RAM, resident unless the system swaps)";
  }

  bool locked() const { return locked_; }

  void release(const std::byte* p, size_t n) const {
    if (n == 0) return;
    const auto page = static_cast<uintptr_t>(platform::page_size());
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
    if (end <= begin) return;
    void* start = reinterpret_cast<void*>(begin);
    if (locked_) platform::unlock_resident(start, end - begin);
    platform::release_file_pages(start, end - begin);
  }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
  bool locked_ = false;                   // lock_resident locked the whole mapping
  std::optional<MappedFileGuard> guard_;  // names the file if it shrinks under the mapping
};

// Bounds-checked sequential reader over the mapping; every failure names the file, what was
// being read and where.
class GgufFile::Parser {
 public:
  Parser(const GgufFile& file) : file_(file), base_(file.base_), size_(file.size_) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw GgufError(file_.path_.string() + ": " + what);
  }

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  const std::byte* take(size_t n, std::string_view what) {
    if (n > remaining())
      fail("file truncated while reading " + std::string(what) + " at offset " +
           std::to_string(pos_) + " (needs " + std::to_string(n) + " bytes, " +
           std::to_string(remaining()) + " left)");
    const std::byte* p = base_ + pos_;
    pos_ += n;
    return p;
  }

  template <typename T>
  T read(std::string_view what) {
    return load<T>(take(sizeof(T), what));
  }

  std::string_view read_string(std::string_view what) {
    uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      fail("corrupt length " + std::to_string(len) + " of " + std::string(what) + " at offset " +
           std::to_string(pos_ - 8) + " (only " + std::to_string(remaining()) +
           " bytes left in the file)");
    const std::byte* p = take(static_cast<size_t>(len), what);
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(len)};
  }

  GgufValueType read_type(std::string_view what) {
    size_t at = pos_;
    uint32_t t = read<uint32_t>(what);
    if (t > static_cast<uint32_t>(GgufValueType::F64))
      fail("unknown value type id " + std::to_string(t) + " of " + std::string(what) +
           " at offset " + std::to_string(at));
    return static_cast<GgufValueType>(t);
  }

  // Skips over one value of type `t`, checking bounds (arrays recursively).
  void skip_value(GgufValueType t, std::string_view what, int depth) {
    if (t == GgufValueType::STRING) {
      read_string(what);
    } else if (t == GgufValueType::ARRAY) {
      if (depth >= kMaxArrayNesting)
        fail("arrays nested more than " + std::to_string(kMaxArrayNesting) + " deep in " +
             std::string(what));
      GgufValueType et = read_type(what);
      uint64_t n = read<uint64_t>(what);
      skip_array(et, n, what, depth + 1);
    } else {
      take(scalar_size(t), what);
    }
  }

  void skip_array(GgufValueType et, uint64_t n, std::string_view what, int depth) {
    // Smallest encoding of one element; rejects absurd counts before looping over them.
    size_t min_size = et == GgufValueType::STRING  ? 8
                      : et == GgufValueType::ARRAY ? 12
                                                   : scalar_size(et);
    if (n > remaining() / min_size)
      fail("corrupt array length " + std::to_string(n) + " of " + std::string(what) + " (" +
           std::to_string(n) + " " + std::string(gguf_value_type_name(et)) +
           " elements cannot fit in the " + std::to_string(remaining()) + " bytes left)");
    if (scalar_size(et) != 0) {
      take(static_cast<size_t>(n) * min_size, what);
      return;
    }
    for (uint64_t i = 0; i < n; ++i) skip_value(et, what, depth);
  }

 private:
  const GgufFile& file_;
  const std::byte* base_;
  size_t size_;
  size_t pos_ = 0;
};

GgufFile::~GgufFile() = default;

std::unique_ptr<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->mapping_ = std::make_unique<Mapping>(path);
  f->base_ = f->mapping_->data();
  f->size_ = f->mapping_->size();

  Parser in(*f);

  // Header.
  if (f->size_ < 4) in.fail("not a GGUF file (shorter than the 4-byte magic)");
  uint32_t magic = in.read<uint32_t>("magic");
  if (magic != kMagic) {
    if (magic == __builtin_bswap32(kMagic)) in.fail("big-endian GGUF files are not supported");
    in.fail("not a GGUF file (bad magic; expected \"GGUF\")");
  }
  uint32_t version = in.read<uint32_t>("version");
  if (version == 1)
    in.fail(
        "GGUF version 1 is not supported (obsolete since 2023); convert the model again "
        "with a current llama.cpp");
  if (version != 2 && version != 3) {
    if (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3)
      in.fail("big-endian GGUF files are not supported");
    in.fail("unsupported GGUF version " + std::to_string(version) + " (versions 2 and 3 are read)");
  }
  f->version_ = version;
  uint64_t n_tensors = in.read<uint64_t>("tensor count");
  uint64_t n_kv = in.read<uint64_t>("metadata count");
  // Each key/value takes at least 13 bytes (key length, type, one-byte value) and each tensor
  // description at least 24, so larger counts are corrupt: refuse them before reserving.
  if (n_kv > in.remaining() / 13)
    in.fail("metadata count " + std::to_string(n_kv) + " cannot fit in the " +
            std::to_string(in.remaining()) + " bytes left: the file is truncated or corrupt");
  if (n_tensors > in.remaining() / 24)
    in.fail("tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
            std::to_string(in.remaining()) + " bytes left: the file is truncated or corrupt");

  // Metadata.
  f->values_.reserve(static_cast<size_t>(n_kv));
  f->metadata_.reserve(static_cast<size_t>(n_kv));
  f->key_index_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string what = "key of metadata entry " + std::to_string(i);
    std::string_view key = in.read_string(what);
    what = "metadata value \"" + std::string(key) + "\"";
    RawValue v{};
    v.type = in.read_type(what);
    v.array_type = v.type;
    if (v.type == GgufValueType::ARRAY) {
      v.array_type = in.read_type(what);
      v.count = in.read<uint64_t>(what);
      v.offset = in.pos();
      in.skip_array(v.array_type, v.count, what, 1);
    } else {
      v.offset = in.pos();
      in.skip_value(v.type, what, 0);
    }
    if (!f->key_index_.emplace(key, f->values_.size()).second)
      in.fail("duplicate metadata key \"" + std::string(key) + "\"");
    f->values_.push_back(v);

    MetadataEntry e{std::string(key), v.type, v.array_type, v.count, {}};
    const std::byte* p = f->base_ + v.offset;
    if (v.type == GgufValueType::STRING) {
      uint64_t len = load<uint64_t>(p);
      render_string(e.rendered, {reinterpret_cast<const char*>(p + 8), static_cast<size_t>(len)});
    } else if (v.type == GgufValueType::ARRAY) {
      e.rendered += '[';
      e.rendered += gguf_value_type_name(v.array_type);
      e.rendered += " x ";
      e.rendered += std::to_string(v.count);
      e.rendered += ']';
      if (v.array_type != GgufValueType::ARRAY && v.count > 0) {
        e.rendered += " [";
        uint64_t shown = std::min<uint64_t>(v.count, kRenderedArrayValues);
        for (uint64_t k = 0; k < shown; ++k) {
          if (k) e.rendered += ", ";
          if (v.array_type == GgufValueType::STRING) {
            uint64_t len = load<uint64_t>(p);
            render_string(e.rendered,
                          {reinterpret_cast<const char*>(p + 8), static_cast<size_t>(len)});
            p += 8 + len;
          } else {
            render_scalar(e.rendered, p, v.array_type);
            p += scalar_size(v.array_type);
          }
        }
        e.rendered += v.count > shown ? ", ...]" : "]";
      }
    } else {
      render_scalar(e.rendered, p, v.type);
    }
    f->metadata_.push_back(std::move(e));
  }

  if (const RawValue* a = f->find("general.alignment")) {
    int64_t align = 0;
    if (!is_integer(a->type) || a->type == GgufValueType::BOOL ||
        !load_int(f->base_ + a->offset, a->type, align) || align <= 0 ||
        !std::has_single_bit(static_cast<uint64_t>(align)) || align > (1 << 20))
      in.fail("general.alignment must be a power of two integer (at most 1 MiB)");
    f->alignment_ = static_cast<size_t>(align);
  }

  // Tensor descriptions.
  struct Info {
    uint64_t offset;
  };
  std::vector<Info> infos;
  infos.reserve(static_cast<size_t>(n_tensors));
  f->tensors_.reserve(static_cast<size_t>(n_tensors));
  f->tensor_index_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    std::string_view name = in.read_string("name of tensor " + std::to_string(i));
    const std::string what = "tensor \"" + std::string(name) + "\"";
    uint32_t n_dims = in.read<uint32_t>(what);
    if (n_dims == 0 || n_dims > kMaxDims)
      in.fail(what + " has " + std::to_string(n_dims) + " dimensions (1 to 4 supported)");
    GgufTensor t;
    t.name = std::string(name);
    t.shape.resize(n_dims);
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = in.read<uint64_t>(what);
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (dim != 0 && static_cast<uint64_t>(elements) >
                           static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim))
        in.fail(what + " has an absurd shape (element count overflows)");
      t.shape[d] = static_cast<int64_t>(dim);
      elements *= static_cast<int64_t>(dim);
    }
    uint32_t type_id = in.read<uint32_t>(what);
    auto traits = ggml_type_traits(type_id);
    if (!traits)
      in.fail(what + " has unknown tensor type id " + std::to_string(type_id) +
              " (a newer format than this build reads)");
    t.type = static_cast<GgmlType>(type_id);
    if (t.shape[0] % traits->block_elems != 0)
      in.fail(what + " of type " + std::string(traits->name) + " has a row of " +
              std::to_string(t.shape[0]) + " elements, not a multiple of the block size " +
              std::to_string(traits->block_elems));
    uint64_t blocks = static_cast<uint64_t>(elements / traits->block_elems);
    if (blocks > std::numeric_limits<uint64_t>::max() / traits->block_bytes)
      in.fail(what + " has an absurd size");
    t.bytes = static_cast<size_t>(blocks * traits->block_bytes);
    uint64_t offset = in.read<uint64_t>(what);
    if (offset % f->alignment_ != 0)
      in.fail(what + " has data offset " + std::to_string(offset) +
              " that is not a multiple of the alignment " + std::to_string(f->alignment_));
    if (!f->tensor_index_.emplace(name, f->tensors_.size()).second)
      in.fail("duplicate tensor name \"" + std::string(name) + "\"");
    f->tensors_.push_back(std::move(t));
    infos.push_back({offset});
  }

  // Tensor data starts at the next multiple of the alignment.
  size_t data = in.pos();
  data += (f->alignment_ - data % f->alignment_) % f->alignment_;
  f->data_offset_ = data;
  if (n_tensors > 0 && data > f->size_)
    in.fail("file truncated before the tensor data (data section would start at offset " +
            std::to_string(data) + ", file is " + std::to_string(f->size_) + " bytes)");
  const size_t data_size = f->size_ - std::min(data, f->size_);
  for (size_t i = 0; i < f->tensors_.size(); ++i) {
    GgufTensor& t = f->tensors_[i];
    uint64_t off = infos[i].offset;
    if (off > data_size || t.bytes > data_size - off)
      in.fail("tensor \"" + t.name + "\" data (" + std::to_string(t.bytes) + " bytes at offset " +
              std::to_string(data + off) + ") lies beyond the end of the file (" +
              std::to_string(f->size_) + " bytes): the file is truncated or corrupt");
    t.data = f->base_ + data + off;
  }
  return f;
}

const GgufFile::RawValue* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &values_[it->second];
}

void GgufFile::type_error(std::string_view key, const RawValue& v, std::string_view want) const {
  std::string has(gguf_value_type_name(v.type));
  if (v.type == GgufValueType::ARRAY)
    has += " of " + std::string(gguf_value_type_name(v.array_type));
  throw GgufError(path_.string() + ": metadata \"" + std::string(key) + "\" is " + has +
                  ", expected " + std::string(want));
}

bool GgufFile::has(std::string_view key) const {
  return find(key) != nullptr;
}

std::optional<GgufValueType> GgufFile::value_type(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return std::nullopt;
  return v->type;
}

std::optional<std::pair<GgufValueType, uint64_t>> GgufFile::array_info(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v || v->type != GgufValueType::ARRAY) return std::nullopt;
  return std::pair{v->array_type, v->count};
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::STRING) type_error(key, *v, "string");
  const std::byte* p = base_ + v->offset;
  return std::string_view(reinterpret_cast<const char*>(p + 8),
                          static_cast<size_t>(load<uint64_t>(p)));
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return std::nullopt;
  int64_t out = 0;
  if (!is_integer(v->type)) type_error(key, *v, "an integer");
  if (!load_int(base_ + v->offset, v->type, out))
    throw GgufError(path_.string() + ": metadata \"" + std::string(key) +
                    "\" is too large for a signed 64-bit integer");
  return out;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return std::nullopt;
  if (!is_float(v->type) && !is_integer(v->type)) type_error(key, *v, "a number");
  return load_number(base_ + v->offset, v->type);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::BOOL) type_error(key, *v, "bool");
  return load<uint8_t>(base_ + v->offset) != 0;
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY || v->array_type != GgufValueType::STRING)
    type_error(key, *v, "array of string");
  std::vector<std::string_view> out;
  out.reserve(static_cast<size_t>(v->count));
  const std::byte* p = base_ + v->offset;
  for (uint64_t i = 0; i < v->count; ++i) {
    auto len = static_cast<size_t>(load<uint64_t>(p));
    out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
    p += 8 + len;
  }
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY || !is_integer(v->array_type))
    type_error(key, *v, "array of integers");
  std::vector<int64_t> out(static_cast<size_t>(v->count));
  const size_t step = scalar_size(v->array_type);
  const std::byte* p = base_ + v->offset;
  for (size_t i = 0; i < out.size(); ++i, p += step)
    if (!load_int(p, v->array_type, out[i]))
      throw GgufError(path_.string() + ": metadata \"" + std::string(key) + "\" element " +
                      std::to_string(i) + " is too large for a signed 64-bit integer");
  return out;
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
  const RawValue* v = find(key);
  if (!v) return {};
  if (v->type != GgufValueType::ARRAY || !(is_float(v->array_type) || is_integer(v->array_type)))
    type_error(key, *v, "array of numbers");
  std::vector<float> out(static_cast<size_t>(v->count));
  const std::byte* p = base_ + v->offset;
  if (v->array_type == GgufValueType::F32) {
    if (!out.empty()) std::memcpy(out.data(), p, out.size() * sizeof(float));
    return out;
  }
  const size_t step = scalar_size(v->array_type);
  for (size_t i = 0; i < out.size(); ++i, p += step)
    out[i] = static_cast<float>(load_number(p, v->array_type));
  return out;
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::string GgufFile::lock_resident() {
  return mapping_->lock_resident();
}

bool GgufFile::locked() const {
  return mapping_->locked();
}

void GgufFile::release(const std::byte* p, size_t n) const {
  mapping_->release(p, n);
}

}  // namespace ghostline::engine
