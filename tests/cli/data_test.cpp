// The data readers of the qforge tool (tools/qforge/data): .npy round trips of every element
// type on random shapes and values, IDX (plain and gzip'd), .npz (stored and deflated), and
// directories; the conversions to samples and labels; and each malformed case with its error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "data/byte_stream.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/npy.h"
#include "qforge/error.h"
#include "test_files.h"
#include "test_support.h"

namespace qforge::cli {
namespace {

using model::ElementType;
using model::Tensor;
using test::TempDir;

Tensor random_typed(std::mt19937_64& g, ElementType type, Shape shape) {
  Tensor t(type, std::move(shape));
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t i = 0; i < t.byte_size(); ++i) t.data()[i] = std::byte(byte(g));
  if (type == ElementType::boolean)
    for (std::size_t i = 0; i < t.byte_size(); ++i) t.data()[i] &= std::byte{1};
  return t;
}

Shape random_shape(std::mt19937_64& g) {
  std::uniform_int_distribution<int> rank(0, 4), extent(0, 7);
  Shape s(static_cast<std::size_t>(rank(g)));
  for (auto& d : s) d = extent(g);
  return s;
}

Tensor parse(const std::string& bytes, const DataLimits& limits = {}) {
  auto in = memory_stream(std::as_bytes(std::span<const char>(bytes)), "test.npy");
  return read_npy(*in, limits);
}

// The error's code and that its message holds `part`.
template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

std::string npy_with_header(const std::string& dict, const std::string& data = "", char major = 1) {
  std::string s = "\x93NUMPY";
  s += major;
  s += '\0';
  const std::string h = dict + "\n";
  if (major == 1) {
    s += static_cast<char>(h.size() & 0xff);
    s += static_cast<char>(h.size() >> 8);
  } else {
    test::put(s, h.size(), 4);
  }
  return s + h + data;
}

TEST(Npy, RoundTripsEveryTypeOnRandomShapes) {
  auto g = model::test::rng(1);
  const ElementType types[] = {ElementType::float32, ElementType::float64, ElementType::int64,
                               ElementType::int32,   ElementType::int16,   ElementType::int8,
                               ElementType::uint8,   ElementType::uint16,  ElementType::boolean};
  for (int i = 0; i < 40; ++i) {
    const ElementType type = types[i % std::size(types)];
    const Tensor t = random_typed(g, type, random_shape(g));
    const Tensor back = parse(npy_bytes(t));
    ASSERT_EQ(back.tensor_type(), t.tensor_type()) << model::test::seed_text();
    if (t.byte_size() > 0) {
      ASSERT_EQ(0, std::memcmp(back.data(), t.data(), t.byte_size())) << model::test::seed_text();
    }
  }
}

TEST(Npy, HeaderIsPaddedAndSavedAtomically) {
  TempDir dir;
  auto g = model::test::rng(2);
  const Tensor t = random_typed(g, ElementType::float32, {3, 5});
  const std::string bytes = npy_bytes(t);
  EXPECT_EQ((bytes.size() - t.byte_size()) % 64, 0u);
  save_npy(dir / "a.npy", t);
  const Tensor back = load_npy(dir / "a.npy");
  EXPECT_EQ(0, std::memcmp(back.data(), t.data(), t.byte_size()));
}

TEST(Npy, AcceptsVersion2AndOtherKeyOrder) {
  const std::string data(12, '\x01');
  const Tensor t =
      parse(npy_with_header("{'shape': (3,), \"fortran_order\": False, 'descr': '<i4'}", data, 2));
  EXPECT_EQ(t.shape(), (Shape{3}));
  EXPECT_EQ(t.values<std::int32_t>()[0], 0x01010101);
}

TEST(Npy, RefusesEachMalformedHeader) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  expect_error([] { parse("NUMPY\x01\x00garbage"); }, ErrorCode::corrupt_data, "magic");
  expect_error([] { parse("\x93NUM"); }, ErrorCode::corrupt_data, "truncated");
  expect_error([&] { parse(npy_with_header(f4, std::string(8, '\0'), 7)); }, ErrorCode::unsupported,
               "version 7.0");
  expect_error([] { parse(std::string("\x93NUMPY\x01\x00\xff\xff", 10)); }, ErrorCode::corrupt_data,
               "65535 bytes");
  std::string no_newline = npy_with_header(f4, std::string(8, '\0'));
  no_newline[10 + f4.size()] = ' ';
  expect_error([&] { parse(no_newline); }, ErrorCode::corrupt_data, "newline");
  expect_error([] { parse(npy_with_header("{'descr': '<f4', 'shape': (2,)}", std::string(8, 0))); },
               ErrorCode::corrupt_data, "'fortran_order' is missing");
  expect_error(
      [] { parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", "")); },
      ErrorCode::corrupt_data, "not a valid .npy header");
  expect_error(
      [] { parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}")); },
      ErrorCode::corrupt_data, "non-negative");
  expect_error(
      [] {
        parse(npy_with_header(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"));
      },
      ErrorCode::corrupt_data, "overflows");
  expect_error(
      [] { parse(npy_with_header("{'descr': '<U8', 'fortran_order': False, 'shape': (1,)}")); },
      ErrorCode::unsupported, "'<U8'");
  expect_error(
      [] { parse(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}")); },
      ErrorCode::unsupported, "big-endian");
  expect_error(
      [] {
        parse(npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}"));
      },
      ErrorCode::corrupt_data, "structured");
  expect_error(
      [] {
        parse(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}",
                              std::string(16, 0)));
      },
      ErrorCode::unsupported, "Fortran");
  expect_error(
      [] {
        parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"));
      },
      ErrorCode::corrupt_data, "unexpected key 'x'");
}

TEST(Npy, RefusesDataThatDisagreesWithTheHeader) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  expect_error([&] { parse(npy_with_header(f4, std::string(20, '\0'))); }, ErrorCode::corrupt_data,
               "holds 20 bytes");
  expect_error([&] { parse(npy_with_header(f4, std::string(28, '\0'))); }, ErrorCode::corrupt_data,
               "holds 28 bytes");
  // A header declaring more than the limits is refused before anything is allocated.
  expect_error(
      [] {
        parse(npy_with_header(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1048576)}"));
      },
      ErrorCode::invalid_argument, "the limit is");
  expect_error(
      [] {
        parse(npy_with_header(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1)}"));
      },
      ErrorCode::corrupt_data, "rank 9");
  DataLimits small;
  small.max_sample_bytes = 16;
  expect_error(
      [&] {
        parse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 5)}",
                              std::string(20, 0)),
              small);
      },
      ErrorCode::invalid_argument, "one sample");
}

TEST(Idx, ReadsPlainAndGzipImagesAndLabels) {
  TempDir dir;
  auto g = model::test::rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string pixels(5 * 4 * 3, '\0');
  for (char& c : pixels) c = static_cast<char>(byte(g));
  test::write_gzip(dir / "images-idx3-ubyte.gz", test::idx_bytes({5, 4, 3}, pixels));
  test::write_bytes(dir / "labels-idx1-ubyte",
                    test::idx_bytes({5}, std::string("\x00\x01\x09\x03\x02", 5)));
  const Tensor x = read_all((dir / "images-idx3-ubyte.gz").string(), DataRole::samples);
  ASSERT_EQ(x.shape(), (Shape{5, 1, 4, 3}));
  for (std::size_t i = 0; i < pixels.size(); ++i)
    ASSERT_FLOAT_EQ(x.values<float>()[i], static_cast<std::uint8_t>(pixels[i]) / 255.0f)
        << model::test::seed_text();
  const Tensor y = read_all((dir / "labels-idx1-ubyte").string(), DataRole::labels);
  ASSERT_EQ(y.shape(), (Shape{5}));
  EXPECT_EQ(y.values<std::int64_t>()[2], 9);
}

TEST(Idx, RefusesEachMalformedFile) {
  auto parse_idx = [](const std::string& bytes) {
    auto in = memory_stream(std::as_bytes(std::span<const char>(bytes)), "t.idx");
    return read_idx(*in);
  };
  expect_error([&] { parse_idx(std::string("\x01\x00\x08\x01", 4)); }, ErrorCode::corrupt_data,
               "first two bytes");
  expect_error([&] { parse_idx(test::idx_bytes({2}, "ab", 0x0D)); }, ErrorCode::unsupported,
               "0x0d");
  expect_error([&] { parse_idx(test::idx_bytes({2}, "ab", 0x42)); }, ErrorCode::corrupt_data,
               "not an IDX type");
  expect_error([&] { parse_idx(test::idx_bytes({}, "")); }, ErrorCode::corrupt_data,
               "0 dimensions");
  expect_error(
      [&] {
        parse_idx(test::idx_bytes({2, 2}, "abc"));
      },
      ErrorCode::corrupt_data, "3 bytes follow");
  expect_error(
      [&] {
        parse_idx(test::idx_bytes({2, 2}, "abcde"));
      },
      ErrorCode::corrupt_data, "5 bytes follow");
  expect_error(
      [&] {
        parse_idx(test::idx_bytes({0xffffffff, 0xffffffff, 0xffffffff}, ""));
      },
      ErrorCode::invalid_argument, "the limit is");
  expect_error([&] { parse_idx(std::string("\0\0\x08\x02\0\0", 6)); }, ErrorCode::corrupt_data,
               "truncated");

  // A gzip'd file cannot tell its length before the end: short and long data show while reading.
  TempDir dir;
  test::write_gzip(dir / "short-idx1-ubyte.gz", test::idx_bytes({4}, "abc"));
  expect_error([&] { read_all((dir / "short-idx1-ubyte.gz").string(), DataRole::labels); },
               ErrorCode::corrupt_data, "truncated");
  test::write_gzip(dir / "long-idx1-ubyte.gz", test::idx_bytes({2}, "abc"));
  expect_error([&] { read_all((dir / "long-idx1-ubyte.gz").string(), DataRole::labels); },
               ErrorCode::corrupt_data, "continues past");
  // A gzip stream cut in the middle.
  test::write_gzip(dir / "cut-idx1-ubyte.gz", test::idx_bytes({4000}, std::string(4000, 'x')));
  std::string gz;
  {
    std::ifstream in(dir / "cut-idx1-ubyte.gz", std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  test::write_bytes(dir / "cut-idx1-ubyte.gz", gz.substr(0, gz.size() / 2));
  expect_error([&] { read_all((dir / "cut-idx1-ubyte.gz").string(), DataRole::labels); },
               ErrorCode::corrupt_data, "truncated");
}

TEST(Npz, ReadsStoredAndDeflatedArraysByName) {
  TempDir dir;
  auto g = model::test::rng(4);
  const Tensor x = random_typed(g, ElementType::float32, {6, 2, 3});
  const Tensor y = Tensor::from_values<std::int64_t>({6}, {0, 1, 2, 3, 4, 5});
  for (bool deflate : {false, true}) {
    const auto path = dir / (deflate ? "c.npz" : "s.npz");
    test::write_bytes(path,
                      test::zip_bytes({{"x.npy", npy_bytes(x)}, {"y.npy", npy_bytes(y)}}, deflate));
    const Tensor xb = read_all(path.string() + ":x", DataRole::samples);
    ASSERT_EQ(xb.shape(), x.shape());
    EXPECT_EQ(0, std::memcmp(xb.data(), x.data(), x.byte_size())) << model::test::seed_text();
    EXPECT_EQ(read_all(path.string() + ":y", DataRole::labels).values<std::int64_t>()[5], 5);
    expect_error([&] { read_all(path.string(), DataRole::samples); }, ErrorCode::invalid_argument,
                 "holds 2 arrays (x, y)");
    expect_error([&] { read_all(path.string() + ":z", DataRole::samples); },
                 ErrorCode::invalid_argument, "no array 'z'");
  }
  test::write_bytes(dir / "one.npz", test::zip_bytes({{"arr_0.npy", npy_bytes(x)}}, false));
  EXPECT_EQ(read_all((dir / "one.npz").string(), DataRole::samples).shape(), x.shape());
}

TEST(Npz, RefusesBrokenArchives) {
  TempDir dir;
  test::write_bytes(dir / "junk.npz", std::string(100, 'j'));
  expect_error([&] { read_all((dir / "junk.npz").string(), DataRole::samples); },
               ErrorCode::corrupt_data, "not a valid zip archive");
  std::string zip =
      test::zip_bytes({{"x.npy", npy_bytes(Tensor(ElementType::float32, {2}))}}, false);
  // Central directory offset pointing past the end of the file.
  std::string bad = zip;
  bad[bad.size() - 3] = '\x7f';  // the central directory offset's high byte
  test::write_bytes(dir / "bad.npz", bad);
  expect_error([&] { read_all((dir / "bad.npz").string(), DataRole::samples); },
               ErrorCode::corrupt_data, "not a valid zip archive");
  // The deflated entry cut short.
  std::string c = test::zip_bytes({{"x.npy", npy_bytes(Tensor(ElementType::float32, {64}))}}, true);
  c[30 + 5 + 3] ^= 0x55;  // damage the deflate stream
  test::write_bytes(dir / "damaged.npz", c);
  EXPECT_THROW(read_all((dir / "damaged.npz").string(), DataRole::samples), Error);
  // A stored entry whose array bytes changed after the archive was written: the CRC tells.
  std::string s =
      test::zip_bytes({{"x.npy", npy_bytes(Tensor(ElementType::float32, {64}))}}, false);
  s[30 + 5 + 128 + 10] ^= 0x01;  // past the local header, the name and the .npy header
  test::write_bytes(dir / "crc.npz", s);
  expect_error([&] { read_all((dir / "crc.npz").string(), DataRole::samples); },
               ErrorCode::corrupt_data, "CRC");
}

TEST(Directory, ConcatenatesSortedFilesInBatches) {
  TempDir dir;
  auto g = model::test::rng(5);
  std::vector<Tensor> parts;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(model::test::random_tensor(g, {2 + i, 4}));
    save_npy(dir / ("part" + std::to_string(i) + ".npy"), parts.back());
  }
  auto reader = DataReader::open(dir.path().string(), DataRole::samples);
  EXPECT_EQ(reader->count(), 9);
  std::vector<float> all;
  for (const auto& p : parts)
    all.insert(all.end(), p.values<float>().begin(), p.values<float>().end());
  std::vector<float> got;
  while (auto b = reader->next(4)) {
    EXPECT_LE(b->shape()[0], 4);
    got.insert(got.end(), b->values<float>().begin(), b->values<float>().end());
  }
  EXPECT_EQ(got, all) << model::test::seed_text();

  save_npy(dir / "part9.npy", random_typed(g, ElementType::float32, {1, 5}));
  expect_error([&] { DataReader::open(dir.path().string(), DataRole::samples); },
               ErrorCode::invalid_argument, "concatenated along axis 0");
}

TEST(Conversion, SamplesAndLabels) {
  TempDir dir;
  save_npy(dir / "u8.npy", Tensor::from_values<std::uint8_t>({2, 2}, {0, 51, 255, 102}));
  const Tensor x = read_all((dir / "u8.npy").string(), DataRole::samples);
  EXPECT_FLOAT_EQ(x.values<float>()[1], 0.2f);
  EXPECT_FLOAT_EQ(x.values<float>()[2], 1.0f);
  save_npy(dir / "l.npy", Tensor::from_values<std::uint8_t>({3, 1}, {7, 0, 9}));
  EXPECT_EQ(read_all((dir / "l.npy").string(), DataRole::labels).values<std::int64_t>()[2], 9);
  expect_error([&] { read_all((dir / "u8.npy").string(), DataRole::labels); },
               ErrorCode::invalid_argument, "expected [N] or [N, 1]");
  save_npy(dir / "f.npy", Tensor::from_values<float>({2}, {1, 2}));
  expect_error([&] { read_all((dir / "f.npy").string(), DataRole::labels); },
               ErrorCode::invalid_argument, "cannot be labels");
  save_npy(dir / "i64.npy", Tensor::from_values<std::int64_t>({2, 2}, {1, 2, 3, 4}));
  expect_error([&] { read_all((dir / "i64.npy").string(), DataRole::samples); },
               ErrorCode::invalid_argument, "cannot be model inputs");
  save_npy(dir / "scalar.npy", Tensor::scalar<float>(1));
  expect_error([&] { read_all((dir / "scalar.npy").string(), DataRole::samples); },
               ErrorCode::invalid_argument, "0-d");
  expect_error([&] { read_all((dir / "missing.npy").string(), DataRole::samples); }, ErrorCode::io,
               "no such file");
  expect_error([&] { read_all("/dev/null", DataRole::samples); }, ErrorCode::io,
               "expected a regular file");
}

}  // namespace
}  // namespace qforge::cli

namespace qforge::cli {
namespace {

// The seeds of the npz fuzz harness were written by Python's zipfile, as numpy.savez does
// (stored, deflated, and an entry with a zip64 extra field, which savez forces).
TEST(Npz, ReadsArchivesPythonsZipfileWrote) {
  const std::string dir = std::string(QFORGE_SOURCE_DIR) + "/fuzz/corpus/npz/";
  for (const char* name : {"stored.npz", "deflated.npz", "zip64.npz"}) {
    const Tensor x = read_all(dir + name + ":x", DataRole::samples);
    ASSERT_EQ(x.shape(), (Shape{2, 3})) << name;
    EXPECT_EQ(x.values<float>()[5], 6.0f) << name;
  }
  EXPECT_EQ(read_all(dir + "deflated.npz:y", DataRole::labels).values<std::int64_t>()[1], 1);
  EXPECT_THROW(read_all(dir + "cut.npz:x", DataRole::samples), Error);
}

// Debian's dataset-fashion-mnist, where installed: the test set as the tool reads it.
TEST(Idx, ReadsFashionMnistWhereInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto x = DataReader::open(dir + "t10k-images-idx3-ubyte.gz", DataRole::samples);
  auto y = DataReader::open(dir + "t10k-labels-idx1-ubyte.gz", DataRole::labels);
  EXPECT_EQ(x->count(), 10000);
  EXPECT_EQ(x->sample_shape(), (Shape{1, 28, 28}));
  std::int64_t seen = 0;
  while (auto b = y->next(4096)) {
    for (std::int64_t v : b->values<std::int64_t>()) ASSERT_TRUE(v >= 0 && v <= 9);
    seen += b->shape()[0];
  }
  EXPECT_EQ(seen, 10000);
  const Tensor first = *x->next(2);
  EXPECT_EQ(first.shape(), (Shape{2, 1, 28, 28}));
}

}  // namespace
}  // namespace qforge::cli
