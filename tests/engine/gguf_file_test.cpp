#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "gguf_test_writer.h"

namespace ghostline::engine {
namespace {

using testing::GgufValue;
using testing::GgufWriter;
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("ghostline-gguf-" + std::to_string(::getpid()) + "-" + info->name());
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path file(const std::string& name, std::string_view bytes) const {
    fs::path p = path_ / name;
    GgufWriter::write_file(p, bytes);
    return p;
  }

 private:
  fs::path path_;
};

std::string bytes_of(float f) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &f, 4);
  return s;
}

// A small file with every metadata type, nested arrays and three tensors.
GgufWriter sample_writer() {
  GgufWriter w;
  w.add("general.architecture", GgufValue::string("llama"));
  w.add("test.u8", GgufValue::u8(200));
  w.add("test.i8", GgufValue::i8(-100));
  w.add("test.u16", GgufValue::u16(60000));
  w.add("test.i16", GgufValue::i16(-30000));
  w.add("test.u32", GgufValue::u32(4000000000u));
  w.add("test.i32", GgufValue::i32(-2000000000));
  w.add("test.u64", GgufValue::u64(1ull << 40));
  w.add("test.i64", GgufValue::i64(-(1ll << 40)));
  w.add("test.f32", GgufValue::f32(0.25f));
  w.add("test.f64", GgufValue::f64(-1.5));
  w.add("test.bool", GgufValue::boolean(true));
  w.add("test.strings", GgufValue::strings({"a", "", "hello world", "\xe2\x96\x81x"}));
  w.add("test.ints", GgufValue::i32s({1, -2, 3}));
  w.add("test.floats", GgufValue::f32s({0.5f, -1.0f}));
  w.add("test.nested",
        GgufValue::array(GgufValueType::ARRAY,
                         {GgufValue::i32s({1, 2}), GgufValue::strings({"x", "y", "z"})}));
  std::string row;
  for (int i = 0; i < 8; ++i) row += bytes_of(static_cast<float>(i));
  w.add_tensor("a.weight", GgmlType::F32, {8}, row);
  w.add_tensor("b.weight", GgmlType::Q8_0, {32, 2});
  w.add_tensor("c.weight", GgmlType::F16, {3, 5});
  return w;
}

TEST(GgufFile, ReadsEveryMetadataType) {
  TempDir dir;
  auto w = sample_writer();
  auto f = GgufFile::open(dir.file("sample.gguf", w.build()));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("test.u8"), 200);
  EXPECT_EQ(f->get_int("test.i8"), -100);
  EXPECT_EQ(f->get_int("test.u16"), 60000);
  EXPECT_EQ(f->get_int("test.i16"), -30000);
  EXPECT_EQ(f->get_int("test.u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("test.i32"), -2000000000);
  EXPECT_EQ(f->get_int("test.u64"), 1ll << 40);
  EXPECT_EQ(f->get_int("test.i64"), -(1ll << 40));
  EXPECT_EQ(f->get_int("test.bool"), 1);
  EXPECT_EQ(f->get_float("test.f32"), 0.25);
  EXPECT_EQ(f->get_float("test.f64"), -1.5);
  EXPECT_EQ(f->get_float("test.i16"), -30000.0);
  EXPECT_EQ(f->get_bool("test.bool"), true);
  EXPECT_EQ(f->get_string_array("test.strings"),
            (std::vector<std::string_view>{"a", "", "hello world", "\xe2\x96\x81x"}));
  EXPECT_EQ(f->get_int_array("test.ints"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f->get_float_array("test.floats"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(f->get_float_array("test.ints"), (std::vector<float>{1.0f, -2.0f, 3.0f}));
  auto nested = f->array_info("test.nested");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->first, GgufValueType::ARRAY);
  EXPECT_EQ(nested->second, 2u);
  EXPECT_EQ(f->value_type("test.nested"), GgufValueType::ARRAY);
}

TEST(GgufFile, AbsentKeysAndWrongTypes) {
  TempDir dir;
  auto w = sample_writer();
  auto f = GgufFile::open(dir.file("sample.gguf", w.build()));
  EXPECT_FALSE(f->has("missing"));
  EXPECT_FALSE(f->get_string("missing"));
  EXPECT_FALSE(f->get_int("missing"));
  EXPECT_FALSE(f->get_float("missing"));
  EXPECT_FALSE(f->get_bool("missing"));
  EXPECT_TRUE(f->get_string_array("missing").empty());
  EXPECT_TRUE(f->has("test.u8"));
  EXPECT_THROW(f->get_string("test.u8"), GgufError);
  EXPECT_THROW(f->get_int("test.f32"), GgufError);
  EXPECT_THROW(f->get_float("test.strings"), GgufError);
  EXPECT_THROW(f->get_bool("test.u8"), GgufError);
  EXPECT_THROW(f->get_string_array("test.ints"), GgufError);
  EXPECT_THROW(f->get_int_array("test.strings"), GgufError);
  EXPECT_THROW(f->get_float_array("test.nested"), GgufError);
  try {
    f->get_string("test.u8");
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("test.u8"), std::string::npos) << e.what();
  }
  GgufWriter big;
  big.add("big", GgufValue::u64(~0ull));
  auto g = GgufFile::open(dir.file("big.gguf", big.build()));
  EXPECT_THROW(g->get_int("big"), GgufError);
  EXPECT_EQ(g->get_float("big"), 18446744073709551615.0);
}

TEST(GgufFile, MetadataInFileOrderWithShortRendering) {
  TempDir dir;
  auto w = sample_writer();
  auto f = GgufFile::open(dir.file("sample.gguf", w.build()));
  const auto& md = f->metadata();
  ASSERT_EQ(md.size(), 16u);
  EXPECT_EQ(md[0].key, "general.architecture");
  EXPECT_EQ(md[0].rendered, "\"llama\"");
  EXPECT_EQ(md[1].rendered, "200");
  EXPECT_EQ(md[9].rendered, "0.25");
  EXPECT_EQ(md[11].rendered, "true");
  EXPECT_EQ(md[12].type, GgufValueType::ARRAY);
  EXPECT_EQ(md[12].array_type, GgufValueType::STRING);
  EXPECT_EQ(md[12].array_length, 4u);
  EXPECT_EQ(md[12].rendered, "[string x 4] [\"a\", \"\", \"hello world\", \"\xe2\x96\x81x\"]");
  EXPECT_EQ(md[13].rendered, "[i32 x 3] [1, -2, 3]");
  EXPECT_EQ(md[15].rendered, "[array x 2]");
}

TEST(GgufFile, TensorsPointIntoAlignedData) {
  TempDir dir;
  auto w = sample_writer();
  std::string bytes = w.build();
  auto f = GgufFile::open(dir.file("sample.gguf", bytes));
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->file_bytes(), bytes.size());
  EXPECT_EQ(f->data_offset(), w.layout().data_start);
  const GgufTensor* a = f->tensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, GgmlType::F32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(a->bytes, 32u);
  EXPECT_EQ(a->elements(), 8);
  float v[8];
  std::memcpy(v, a->data, sizeof v);
  EXPECT_EQ(v[7], 7.0f);
  const GgufTensor* b = f->tensor("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->bytes, 2u * 34u);
  EXPECT_EQ(b->elements(), 64);
  const GgufTensor* c = f->tensor("c.weight");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->bytes, 30u);
  for (const auto& t : f->tensors()) EXPECT_EQ((t.data - f->tensors()[0].data) % 32, 0) << t.name;
  EXPECT_EQ(f->tensor("nope"), nullptr);
}

TEST(GgufFile, HonoursGeneralAlignment) {
  TempDir dir;
  GgufWriter w;
  w.set_alignment(64);
  w.add("general.alignment", GgufValue::u32(64));
  w.add_tensor("x", GgmlType::F32, {3});
  w.add_tensor("y", GgmlType::F32, {5});
  std::string bytes = w.build();
  auto f = GgufFile::open(dir.file("a64.gguf", bytes));
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->tensor("y")->data - f->tensor("x")->data, 64);

  GgufWriter bad;
  bad.add("general.alignment", GgufValue::u32(48));
  EXPECT_THROW(GgufFile::open(dir.file("a48.gguf", bad.build())), GgufError);
}

TEST(GgufFile, ReadsVersion2AndRefusesVersion1) {
  TempDir dir;
  auto w = sample_writer();
  w.set_version(2);
  EXPECT_EQ(GgufFile::open(dir.file("v2.gguf", w.build()))->version(), 2u);
  w.set_version(1);
  try {
    GgufFile::open(dir.file("v1.gguf", w.build()));
    FAIL() << "version 1 accepted";
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("version 1"), std::string::npos) << e.what();
  }
  w.set_version(7);
  EXPECT_THROW(GgufFile::open(dir.file("v7.gguf", w.build())), GgufError);
}

// Opens `bytes` and returns the error message ("" when the file opened).
std::string open_error(const TempDir& dir, std::string_view bytes) {
  try {
    GgufFile::open(dir.file("case.gguf", bytes));
    return "";
  } catch (const GgufError& e) {
    return e.what();
  }
}

void expect_error(const TempDir& dir, std::string_view bytes, std::string_view needle) {
  std::string msg = open_error(dir, bytes);
  EXPECT_NE(msg, "") << "expected an error mentioning " << needle;
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  EXPECT_NE(msg.find("case.gguf"), std::string::npos) << msg;
}

TEST(GgufFile, ClearErrorsForBrokenFiles) {
  TempDir dir;
  try {
    GgufFile::open("../no/such/file.gguf");
    FAIL();
  } catch (const GgufError& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/file.gguf"), std::string::npos);
  }
  expect_error(dir, "", "not a GGUF file");
  expect_error(dir, std::string("GGML\x03\0\0\0", 8), "magic");

  auto w = sample_writer();
  const std::string good = w.build();
  const auto& layout = w.layout();

  std::string truncated = good.substr(0, good.size() - 1);
  expect_error(dir, truncated, "c.weight");
  expect_error(dir, truncated, "end of the file");
  expect_error(dir, good.substr(0, layout.header_end - 3), "truncated");
  expect_error(dir, good.substr(0, layout.kv_ends.back() - 1), "test.nested");
  expect_error(dir, good.substr(0, layout.tensor_info_ends[1] - 2), "b.weight");
}

// Overwrites a little-endian u64 or u32 at `offset`.
template <typename T>
std::string patched(std::string bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
  return bytes;
}

TEST(GgufFile, RejectsAbsurdCountsAndLengths) {
  TempDir dir;
  auto w = sample_writer();
  const std::string good = w.build();
  // Header: magic, version, tensor count at 8, metadata count at 16.
  expect_error(dir, patched<uint64_t>(good, 8, 1ull << 60), "tensor count");
  expect_error(dir, patched<uint64_t>(good, 16, 1ull << 60), "metadata count");
  // The first key's length comes right after the header.
  expect_error(dir, patched<uint64_t>(good, 24, ~0ull), "corrupt length");
  // The "test.strings" array: key, type (u32), element type (u32), count (u64).
  size_t kv = w.layout().kv_ends[11];
  size_t count_at = kv + 8 + std::string("test.strings").size() + 4 + 4;
  expect_error(dir, patched<uint64_t>(good, count_at, 1ull << 62), "array length");
  expect_error(dir, patched<uint32_t>(good, count_at - 4, 99), "unknown value type");
}

TEST(GgufFile, ValidatesTensorDescriptions) {
  TempDir dir;
  {
    GgufWriter w;
    w.add_tensor("t", GgmlType::F32, {4});
    std::string bytes = w.build();
    // Tensor info: name (8 + 1), n_dims (4), dims (8), type (4), offset (8).
    size_t type_at = w.layout().header_end + 9 + 4 + 8;
    expect_error(dir, patched<uint32_t>(bytes, type_at, 4), "unknown tensor type id 4");
    expect_error(dir, patched<uint32_t>(bytes, type_at, 1000), "unknown tensor type id 1000");
    expect_error(dir, patched<uint64_t>(bytes, type_at + 4, 64), "beyond the end of the file");
    expect_error(dir, patched<uint64_t>(bytes, type_at + 4, 3), "alignment");
    expect_error(dir, patched<uint32_t>(bytes, w.layout().header_end + 9, 9), "dimensions");
    expect_error(dir, patched<uint64_t>(bytes, type_at - 8, ~0ull >> 1), "absurd size");
    expect_error(dir, patched<uint64_t>(bytes, type_at - 8, 1ull << 40), "beyond");
  }
  {
    GgufWriter w;
    w.add_tensor("same", GgmlType::F32, {4});
    w.add_tensor("same", GgmlType::F32, {4});
    expect_error(dir, w.build(), "duplicate tensor name \"same\"");
  }
  {
    GgufWriter w;
    w.add_tensor("q", GgmlType::Q4_0, {64, 2});
    std::string bytes = w.build();
    size_t dim0_at = w.layout().header_end + 9 + 4;
    expect_error(dir, patched<uint64_t>(bytes, dim0_at, 48), "multiple of the block size 32");
  }
  {
    GgufWriter w;
    w.add("k", GgufValue::u8(1));
    w.add("k", GgufValue::u8(2));
    expect_error(dir, w.build(), "duplicate metadata key");
  }
}

// Corrupted variants of a valid file must open or throw GgufError; a crash or a sanitizer
// report fails the test binary.
TEST(GgufFile, CorruptedFilesNeverCrash) {
  TempDir dir;
  auto w = sample_writer();
  const std::string good = w.build();
  const auto& layout = w.layout();
  int opened = 0, refused = 0;
  auto attempt = [&](std::string_view bytes) {
    try {
      auto f = GgufFile::open(dir.file("fuzz.gguf", bytes));
      // Everything reachable from a file that opened must be readable.
      for (const auto& m : f->metadata()) {
        (void)f->has(m.key);
        if (m.type == GgufValueType::ARRAY && m.array_type == GgufValueType::STRING)
          for (auto s : f->get_string_array(m.key)) (void)s.size();
      }
      unsigned sum = 0;
      for (const auto& t : f->tensors())
        for (size_t i = 0; i < t.bytes; ++i) sum += static_cast<unsigned>(t.data[i]);
      (void)sum;
      ++opened;
    } catch (const GgufError&) {
      ++refused;
    }
  };

  std::vector<size_t> cuts = {
      0, 3, 4, 7, 8, 15, 16, 23, layout.header_end, layout.data_start, layout.file_size - 1};
  for (size_t e : layout.kv_ends) cuts.insert(cuts.end(), {e - 1, e, e + 1});
  for (size_t e : layout.tensor_info_ends) cuts.insert(cuts.end(), {e - 1, e, e + 1});
  std::mt19937 rng(1234);
  for (int i = 0; i < 200; ++i) cuts.push_back(rng() % good.size());
  for (size_t c : cuts) attempt(std::string_view(good).substr(0, std::min(c, good.size())));

  for (int i = 0; i < 600; ++i) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % std::min(bytes.size(), layout.data_start);
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
          break;
        case 1:
          bytes[at] = static_cast<char>(rng());
          break;
        default:  // a huge little-endian length or count
          if (at + 8 <= bytes.size()) {
            uint64_t v = (rng() % 2) ? ~0ull - (rng() % 16) : (1ull << (32 + rng() % 31));
            std::memcpy(bytes.data() + at, &v, 8);
          }
      }
    }
    attempt(bytes);
  }
  EXPECT_GT(opened, 0);
  EXPECT_GT(refused, 0);
}

TEST(GgufFile, LockResidentKeepsDataIntact) {
  TempDir dir;
  auto w = sample_writer();
  auto f = GgufFile::open(dir.file("lock.gguf", w.build()));
  const GgufTensor* a = f->tensor("a.weight");
  std::string before(reinterpret_cast<const char*>(a->data), a->bytes);
  std::string warning = f->lock_resident();
  if (!warning.empty()) {
    EXPECT_NE(warning.find("lock"), std::string::npos) << warning;
  }
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a->data), a->bytes), before);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
}

// Released pages are dropped, not lost: the data reads the same afterwards, locked or not.
TEST(GgufFile, ReleasedDataReadsTheSameAgain) {
  TempDir dir;
  GgufWriter w;
  w.add("general.architecture", GgufValue::string("llama"));
  std::string data;
  for (int i = 0; i < 16384; ++i) data += bytes_of(static_cast<float>(i));  // 64 KiB
  w.add_tensor("big.weight", GgmlType::F32, {16384}, data);
  for (bool lock : {false, true}) {
    SCOPED_TRACE(lock ? "locked" : "mapped");
    auto f = GgufFile::open(dir.file(lock ? "locked.gguf" : "mapped.gguf", w.build()));
    if (lock) f->lock_resident();
    const GgufTensor* t = f->tensor("big.weight");
    ASSERT_NE(t, nullptr);
    f->release(t->data, t->bytes);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t->data), t->bytes), data);
    f->release(t->data + 100, 5);  // less than a page: nothing to drop
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t->data), t->bytes), data);
  }
}

// The shared reference files, written by llama.cpp.
TEST(GgufFile, ReadsSharedTokenizerVocabularies) {
  struct Case {
    const char* name;
    const char* model;
    const char* pre;
    uint64_t n_tokens;
    bool merges;
  };
  for (const Case& c : {Case{"deepseek-coder", "gpt2", "deepseek-coder", 32256, true},
                        Case{"starcoder", "gpt2", "starcoder", 49152, true},
                        Case{"gpt-2", "gpt2", "gpt-2", 50257, true},
                        Case{"llama-spm", "llama", "default", 32000, false}}) {
    SCOPED_TRACE(c.name);
    auto f = GgufFile::open(std::string("../shared/data/tokenizer/") + c.name + ".gguf");
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->get_string("general.name"), c.name);
    EXPECT_EQ(f->get_string("tokenizer.ggml.model"), c.model);
    EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), c.pre);
    auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    EXPECT_EQ(tokens.size(), c.n_tokens);
    EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type").size(), c.n_tokens);
    EXPECT_EQ(f->has("tokenizer.ggml.merges"), c.merges);
    EXPECT_TRUE(f->tensors().empty());
  }
  auto spm = GgufFile::open("../shared/data/tokenizer/llama-spm.gguf");
  auto tokens = spm->get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(spm->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(spm->get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(spm->get_float_array("tokenizer.ggml.scores").size(), 32000u);
  auto ds = GgufFile::open("../shared/data/tokenizer/deepseek-coder.gguf");
  EXPECT_EQ(ds->get_int("tokenizer.ggml.bos_token_id"), 32013);
  EXPECT_EQ(ds->get_string_array("tokenizer.ggml.merges")[0], "\xc4\xa0 \xc4\xa0");
  EXPECT_EQ(ds->get_float("llama.rope.freq_base"), 100000.0);
}

TEST(GgufFile, ReadsSharedModels) {
  for (const char* name : {"ref-llama-spm-f16", "ref-llama-spm-q4_k_m", "ref-qwen2-dscoder-q8_0",
                           "ref-qwen2-dscoder-q4_0", "ref-qwen2-dscoder-q6_k"}) {
    SCOPED_TRACE(name);
    auto f = GgufFile::open(std::string("../shared/data/models/") + name + ".gguf");
    auto arch = f->get_string("general.architecture");
    ASSERT_TRUE(arch);
    const std::string a(*arch);
    EXPECT_EQ(f->get_int(a + ".embedding_length"), 256);
    EXPECT_EQ(f->get_int(a + ".block_count"), 2);
    EXPECT_EQ(f->get_int(a + ".attention.head_count"), 4);
    EXPECT_EQ(f->get_int(a + ".attention.head_count_kv"), 2);
    EXPECT_EQ(f->get_int(a + ".feed_forward_length"), 512);
    const GgufTensor* emb = f->tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->shape[0], 256);
    EXPECT_EQ(emb->shape[1], a == "llama" ? 32000 : 32256);
    const GgufTensor* norm = f->tensor("blk.1.attn_norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->type, GgmlType::F32);
    size_t total = 0;
    for (const auto& t : f->tensors()) {
      EXPECT_EQ(t.bytes, ggml_row_bytes(t.type, t.elements())) << t.name;
      total += t.bytes;
    }
    EXPECT_LE(f->data_offset() + total, f->file_bytes());
  }
  auto q4 = GgufFile::open("../shared/data/models/ref-llama-spm-q4_k_m.gguf");
  EXPECT_EQ(q4->tensor("output.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(q4->tensor("token_embd.weight")->type, GgmlType::Q4_K);
  auto q8 = GgufFile::open("../shared/data/models/ref-qwen2-dscoder-q8_0.gguf");
  EXPECT_EQ(q8->tensor("token_embd.weight")->type, GgmlType::Q8_0);
  EXPECT_EQ(q8->tensor("output.weight"), nullptr);  // tied embeddings
  EXPECT_NE(q8->tensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_EQ(q8->get_float("qwen2.rope.freq_base"), 1000000.0);
}

}  // namespace
}  // namespace ghostline::engine
