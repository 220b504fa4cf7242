// Test-only: finds the bytes of named tensors in a GGUF file by walking its header, so that the
// kernel tests stand on their own without the engine's GGUF reader.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ghostline::engine::testing {

struct LocatedTensor {
  uint32_t type = 0;
  std::vector<uint64_t> dims;  // ne[0] (contiguous) first
  uint64_t offset = 0;         // from the start of the file
};

class GgufTensorLocator {
 public:
  explicit GgufTensorLocator(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (bytes_.size() < 24 || std::memcmp(bytes_.data(), "GGUF", 4) != 0)
      throw std::runtime_error(path + " is not a GGUF file");
    pos_ = 4;
    const auto version = read<uint32_t>();
    if (version < 2) throw std::runtime_error("GGUF version 1 is not handled");
    const auto n_tensors = read<uint64_t>();
    const auto n_kv = read<uint64_t>();
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = read_string();
      const auto type = read<uint32_t>();
      if (key == "general.alignment" && type == 4) {
        alignment = read<uint32_t>();
      } else {
        skip_value(type);
      }
    }
    std::vector<std::pair<std::string, LocatedTensor>> infos;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      std::string name = read_string();
      LocatedTensor t;
      const auto n_dims = read<uint32_t>();
      for (uint32_t d = 0; d < n_dims; ++d) t.dims.push_back(read<uint64_t>());
      t.type = read<uint32_t>();
      t.offset = read<uint64_t>();
      infos.emplace_back(std::move(name), t);
    }
    const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    for (auto& [name, t] : infos) {
      t.offset += data_start;
      tensors_[name] = t;
    }
  }

  const LocatedTensor& tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::runtime_error("no tensor " + name);
    return it->second;
  }
  const std::byte* data(const LocatedTensor& t) const {
    return reinterpret_cast<const std::byte*>(bytes_.data() + t.offset);
  }
  size_t file_size() const { return bytes_.size(); }

 private:
  template <typename T>
  T read() {
    if (pos_ + sizeof(T) > bytes_.size()) throw std::runtime_error("truncated GGUF header");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string read_string() {
    const auto n = read<uint64_t>();
    if (pos_ + n > bytes_.size()) throw std::runtime_error("truncated GGUF string");
    std::string s(bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }
  void skip_value(uint32_t type) {
    static constexpr size_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      read_string();
    } else if (type == 9) {
      const auto elem = read<uint32_t>();
      const auto n = read<uint64_t>();
      for (uint64_t i = 0; i < n; ++i) skip_value(elem);
    } else if (type < 13) {
      pos_ += kSizes[type];
    } else {
      throw std::runtime_error("unknown GGUF value type " + std::to_string(type));
    }
  }

  std::vector<char> bytes_;
  size_t pos_ = 0;
  std::map<std::string, LocatedTensor> tensors_;
};

}  // namespace ghostline::engine::testing
