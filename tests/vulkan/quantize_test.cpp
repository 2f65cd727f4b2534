// quantize / dequantize against qforge::reference, bit for bit, for int8 and uint8, every
// linear mapping and granularity, at odd byte offsets inside buffers.
#include <bit>
#include <cstring>

#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using QuantizeTest = VulkanTest;

struct Case {
  Shape shape;
  DType dtype;
  Mapping mapping;
  Granularity gran;
  int axis = 0;
  std::int64_t block = 32;
};

QuantizationParams make_params(const Case& c, Rng& rng) {
  const auto& tr = traits(c.dtype);
  std::size_t count = 1;
  if (c.gran == Granularity::per_channel) {
    const int rank = static_cast<int>(c.shape.size());
    count = static_cast<std::size_t>(
        c.shape[static_cast<std::size_t>(c.axis < 0 ? c.axis + rank : c.axis)]);
  } else if (c.gran == Granularity::block) {
    const std::int64_t last = c.shape.back();
    count =
        static_cast<std::size_t>(element_count(c.shape) / last * ((last + c.block - 1) / c.block));
  }
  std::vector<float> scales(count);
  std::vector<std::int32_t> zps;
  std::uniform_int_distribution<std::int32_t> z(tr.qmin, tr.qmax);
  for (auto& s : scales) s = random_scale(rng);
  if (c.mapping == Mapping::affine) {
    zps.resize(count);
    for (auto& v : zps) v = z(rng);
  }
  Scheme scheme{c.mapping, c.gran, c.axis, c.block};
  return QuantizationParams(c.dtype, scheme, scales, zps);
}

std::string label(const Case& c, const QuantizationParams& p) {
  return "shape " + to_string(c.shape) + " " + p.to_string();
}

void run_case(QuantizationOps& ops, Rng& rng, const Case& c) {
  const QuantizationParams p = make_params(c, rng);
  SCOPED_TRACE(label(c, p));
  const QuantizeDesc desc{c.shape, p};
  const auto n = static_cast<std::size_t>(element_count(c.shape));
  // Scales per element, to aim the tricky values at each element's own scale.
  std::vector<float> per_element(n);
  for (std::size_t i = 0; i < n; ++i)
    per_element[i] = p.scale(p.param_index(c.shape, static_cast<std::int64_t>(i)));
  const std::vector<float> x = tricky_values(rng, n, per_element, 256.0f);

  std::vector<std::uint8_t> expected(n);
  reference::quantize(desc, x.data(), expected.data());
  std::uniform_int_distribution<int> pad(0, 7);
  DeviceArray dx(ops, x, 4 * static_cast<std::size_t>(pad(rng)));
  DeviceArray dq(ops, n, static_cast<std::size_t>(pad(rng)) * 3 + 1);  // odd byte offsets
  dq.fill(0xCD);
  ops.quantize(desc, dx.ptr(), dq.ptr());
  const auto raw = dq.raw();
  for (std::size_t i = 0; i < dq.pad(); ++i)
    ASSERT_EQ(raw[i], 0xCD) << "canary before q overwritten";
  const std::vector<std::uint8_t> got(raw.begin() + static_cast<std::ptrdiff_t>(dq.pad()),
                                      raw.end());
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], expected[i])
        << "q[" << i << "] for x = " << x[i] << " (bits 0x" << std::hex
        << std::bit_cast<std::uint32_t>(x[i]) << std::dec << "), scale " << per_element[i];

  // Dequantize the reference's codes back.
  std::vector<float> back(n);
  reference::dequantize(desc, expected.data(), back.data());
  DeviceArray dcodes(ops, expected, static_cast<std::size_t>(pad(rng)));
  DeviceArray dback(ops, n * 4, 4);
  ops.dequantize(desc, dcodes.ptr(), static_cast<float*>(dback.ptr()));
  const auto got_back = dback.read<float>();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got_back[i]), std::bit_cast<std::uint32_t>(back[i]))
        << "x[" << i << "] = " << got_back[i] << ", reference " << back[i];
}

TEST_F(QuantizeTest, MatchesTheReferenceBitForBit) {
  const std::vector<Shape> shapes = {{1}, {7, 13}, {3, 5, 33}, {257}, {2, 1000}};
  for (DType dtype : {DType::int8, DType::uint8})
    for (Mapping mapping : {Mapping::affine, Mapping::symmetric})
      for (const Shape& shape : shapes) {
        run_case(ops(), rng(), {shape, dtype, mapping, Granularity::per_tensor});
        run_case(ops(), rng(), {shape, dtype, mapping, Granularity::per_channel, 0});
        run_case(ops(), rng(), {shape, dtype, mapping, Granularity::per_channel, -1});
        run_case(ops(), rng(), {shape, dtype, mapping, Granularity::block, 0, 32});
        run_case(ops(), rng(), {shape, dtype, mapping, Granularity::block, 0, 7});
        if (HasFatalFailure()) return;
      }
}

// Half a MiB of block-wise params: large enough that GPUs read them from device-local memory
// (copied there in the op's submission) rather than from the upload buffer.
TEST_F(QuantizeTest, LargeBlockwiseParams) {
  run_case(ops(), rng(), {{64, 4096}, DType::uint8, Mapping::affine, Granularity::block, 0, 4});
  run_case(ops(), rng(), {{4096, 64}, DType::int8, Mapping::affine, Granularity::per_channel, 0});
}

// Large params stay in device memory between ops that repeat them; different params of the
// same size must replace them (params A, then B, then A again).
TEST_F(QuantizeTest, RepeatedAndChangedLargeParams) {
  const Shape shape{32, 8192};
  const std::size_t n = 32 * 8192, pairs = n / 8;
  auto params = [&](float scale) {
    std::vector<float> s(pairs);
    for (std::size_t i = 0; i < pairs; ++i) s[i] = scale * static_cast<float>(1 + i % 7);
    return QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 8, s);
  };
  const QuantizeDesc a{shape, params(0.01f)}, b{shape, params(0.003f)};
  std::vector<float> per_element(n, 0.01f);
  DeviceArray dq(ops(), n);
  for (const QuantizeDesc* d : {&a, &b, &a, &a}) {
    const auto x = tricky_values(rng(), n, per_element, 300.0f);
    std::vector<std::int8_t> expected(n);
    reference::quantize(*d, x.data(), expected.data());
    DeviceArray dx(ops(), x);
    ops().quantize(*d, dx.ptr(), dq.ptr());
    ASSERT_EQ(dq.read<std::int8_t>(), expected) << "params " << (d == &a ? "A" : "B");
  }
}

TEST_F(QuantizeTest, EmptyTensorsWriteNothing) {
  const QuantizeDesc desc{{0, 5}, QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 3)};
  DeviceArray dx(ops(), 16), dq(ops(), 16);
  dq.fill(0xAB);
  ops().quantize(desc, dx.ptr(), dq.ptr());
  for (auto b : dq.raw()) EXPECT_EQ(b, 0xAB);
}

}  // namespace
}  // namespace qforge::vktest
