// Builds GGUF files in memory for tests: metadata of every type (nested arrays included) and
// tensors with their data, laid out as the format prescribes. It also records the offsets of
// the section boundaries, so that tests can cut a file exactly where one section ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/gguf_file.h"

namespace ghostline::engine::testing {

// One encoded metadata value (type id followed by payload, or only the payload for array
// elements). Build with the static helpers below.
class GgufValue {
 public:
  static GgufValue u8(uint8_t v) { return scalar(GgufValueType::U8, v); }
  static GgufValue i8(int8_t v) { return scalar(GgufValueType::I8, v); }
  static GgufValue u16(uint16_t v) { return scalar(GgufValueType::U16, v); }
  static GgufValue i16(int16_t v) { return scalar(GgufValueType::I16, v); }
  static GgufValue u32(uint32_t v) { return scalar(GgufValueType::U32, v); }
  static GgufValue i32(int32_t v) { return scalar(GgufValueType::I32, v); }
  static GgufValue u64(uint64_t v) { return scalar(GgufValueType::U64, v); }
  static GgufValue i64(int64_t v) { return scalar(GgufValueType::I64, v); }
  static GgufValue f32(float v) { return scalar(GgufValueType::F32, v); }
  static GgufValue f64(double v) { return scalar(GgufValueType::F64, v); }
  static GgufValue boolean(bool v) { return scalar(GgufValueType::BOOL, uint8_t{v}); }
  static GgufValue string(std::string_view s) {
    GgufValue v{GgufValueType::STRING, {}};
    put_string(v.payload_, s);
    return v;
  }
  // All elements must have the same type.
  static GgufValue array(GgufValueType element_type, const std::vector<GgufValue>& elements) {
    GgufValue v{GgufValueType::ARRAY, {}};
    put(v.payload_, static_cast<uint32_t>(element_type));
    put(v.payload_, static_cast<uint64_t>(elements.size()));
    for (const auto& e : elements) v.payload_ += e.payload_;
    return v;
  }
  static GgufValue strings(const std::vector<std::string>& items) {
    std::vector<GgufValue> e;
    for (const auto& s : items) e.push_back(string(s));
    return array(GgufValueType::STRING, e);
  }
  static GgufValue i32s(const std::vector<int32_t>& items) {
    std::vector<GgufValue> e;
    for (int32_t x : items) e.push_back(i32(x));
    return array(GgufValueType::I32, e);
  }
  static GgufValue f32s(const std::vector<float>& items) {
    std::vector<GgufValue> e;
    for (float x : items) e.push_back(f32(x));
    return array(GgufValueType::F32, e);
  }

  GgufValueType type() const { return type_; }
  const std::string& payload() const { return payload_; }

  template <typename T>
  static void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    out.append(b, sizeof b);
  }
  static void put_string(std::string& out, std::string_view s) {
    put(out, static_cast<uint64_t>(s.size()));
    out += s;
  }

 private:
  GgufValue(GgufValueType t, std::string p) : type_(t), payload_(std::move(p)) {}
  template <typename T>
  static GgufValue scalar(GgufValueType t, T v) {
    GgufValue out{t, {}};
    put(out.payload_, v);
    return out;
  }

  GgufValueType type_;
  std::string payload_;
};

class GgufWriter {
 public:
  // Section boundaries of the last build(), as byte offsets.
  struct Layout {
    size_t header_end = 0;
    std::vector<size_t> kv_ends;
    std::vector<size_t> tensor_info_ends;
    size_t data_start = 0;
    size_t file_size = 0;
  };

  void set_version(uint32_t v) { version_ = v; }
  void set_alignment(size_t a) { alignment_ = a; }  // for padding; add general.alignment too

  void add(std::string key, GgufValue value) { kvs_.push_back({std::move(key), std::move(value)}); }

  // `data` must hold exactly the bytes the type and shape take (or pass {} to fill zeros).
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> shape,
                  std::string data = {}) {
    if (data.empty()) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      data.assign(ggml_row_bytes(type, n), '\0');
    }
    tensors_.push_back({std::move(name), type, std::move(shape), std::move(data)});
  }

  std::string build() {
    layout_ = {};
    std::string out;
    GgufValue::put(out, uint32_t{0x46554747});
    GgufValue::put(out, version_);
    GgufValue::put(out, static_cast<uint64_t>(tensors_.size()));
    GgufValue::put(out, static_cast<uint64_t>(kvs_.size()));
    layout_.header_end = out.size();
    for (const auto& kv : kvs_) {
      GgufValue::put_string(out, kv.key);
      GgufValue::put(out, static_cast<uint32_t>(kv.value.type()));
      out += kv.value.payload();
      layout_.kv_ends.push_back(out.size());
    }
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors_) {
      GgufValue::put_string(out, t.name);
      GgufValue::put(out, static_cast<uint32_t>(t.shape.size()));
      for (int64_t d : t.shape) GgufValue::put(out, static_cast<uint64_t>(d));
      GgufValue::put(out, static_cast<uint32_t>(t.type));
      GgufValue::put(out, offset);
      offsets.push_back(offset);
      offset += t.data.size();
      offset = (offset + alignment_ - 1) / alignment_ * alignment_;
      layout_.tensor_info_ends.push_back(out.size());
    }
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, '\0');
    layout_.data_start = out.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(layout_.data_start + offsets[i], '\0');
      out += tensors_[i].data;
    }
    layout_.file_size = out.size();
    return out;
  }

  const Layout& layout() const { return layout_; }

  static void write_file(const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  struct Kv {
    std::string key;
    GgufValue value;
  };
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> shape;
    std::string data;
  };
  uint32_t version_ = 3;
  size_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  Layout layout_;
};

}  // namespace ghostline::engine::testing
