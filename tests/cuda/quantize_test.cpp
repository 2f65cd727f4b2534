// quantize, dequantize, requantize and dynamic_quantize_linear against qforge::reference, byte
// for byte, on random shapes, params and values that include the hard cases: exact halves
// (round half to even), NaN (-> zero point), +/-inf and huge values (saturate), -0.0.
#include <cmath>
#include <limits>

#include "qforge/error.h"
#include "qforge/half.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

class CudaQuantize : public CudaTest {
 protected:
  Shape random_shape() {
    static const std::vector<Shape> shapes = {{1},       {17},     {3, 33},   {2, 5, 7},
                                              {64, 129}, {4, 256}, {1, 1000}, {31, 8}};
    return shapes[std::uniform_int_distribution<std::size_t>(0, shapes.size() - 1)(rng_)];
  }
  float random_scale() {
    return std::exp2(std::uniform_real_distribution<float>(-12.0f, 4.0f)(rng_));
  }
  QuantizationParams random_params(DType t, Mapping map, Granularity g, const Shape& shape) {
    const auto& tr = traits(t);
    std::size_t count = 1;
    Scheme scheme{map, g};
    if (g == Granularity::per_channel) {
      scheme.axis = std::uniform_int_distribution<int>(0, static_cast<int>(shape.size()) - 1)(rng_);
      count = static_cast<std::size_t>(shape[static_cast<std::size_t>(scheme.axis)]);
    } else if (g == Granularity::block) {
      scheme.block_size = std::uniform_int_distribution<int>(0, 1)(rng_) ? 32 : 5;
      const std::int64_t last = shape.back();
      count = static_cast<std::size_t>(element_count(shape) / std::max<std::int64_t>(last, 1) *
                                       ((last + scheme.block_size - 1) / scheme.block_size));
      if (last == 0) count = 0;
    }
    count = std::max<std::size_t>(count, 1);
    std::vector<float> scales(count);
    std::vector<std::int32_t> zps;
    for (auto& s : scales) s = random_scale();
    if (map == Mapping::affine) {
      std::uniform_int_distribution<std::int32_t> z(tr.qmin, tr.qmax);
      zps.resize(count);
      for (auto& v : zps) v = z(rng_);
    }
    return QuantizationParams(t, scheme, scales, zps);
  }
  // Values around the quantization grid, with exact ties and special values mixed in.
  std::vector<float> random_values(std::size_t n, float scale) {
    std::vector<float> v(n);
    std::normal_distribution<float> normal(0.0f, 60.0f * scale);
    std::uniform_int_distribution<int> pick(0, 19);
    for (auto& x : v) {
      switch (pick(rng_)) {
        case 0: x = std::numeric_limits<float>::quiet_NaN(); break;
        case 1: x = std::numeric_limits<float>::infinity(); break;
        case 2: x = -std::numeric_limits<float>::infinity(); break;
        case 3: x = (std::uniform_int_distribution<int>(-300, 300)(rng_) + 0.5f) * scale; break;
        case 4: x = -0.0f; break;
        case 5: x = 3.0e38f; break;
        default: x = normal(rng_);
      }
    }
    return v;
  }
};

std::vector<std::byte> as_float_type(const std::vector<float>& v, FloatType t) {
  std::vector<std::byte> out(v.size() * static_cast<std::size_t>(size_of(t)));
  for (std::size_t i = 0; i < v.size(); ++i) store_float(t, out.data(), i, v[i]);
  return out;
}

TEST_F(CudaQuantize, QuantizeAndDequantizeMatchTheReferenceExactly) {
  const DType dtypes[] = {DType::int8,   DType::uint8, DType::int16,
                          DType::uint16, DType::int4,  DType::uint4};
  const Granularity grans[] = {Granularity::per_tensor, Granularity::per_channel,
                               Granularity::block};
  const FloatType floats[] = {FloatType::f32, FloatType::f16, FloatType::bf16};
  int cases = 0;
  for (const DType t : dtypes)
    for (const Mapping map : {Mapping::affine, Mapping::symmetric})
      for (const Granularity g : grans)
        for (const FloatType ft : floats) {
          const Shape shape = random_shape();
          const QuantizationParams p = random_params(t, map, g, shape);
          const QuantizeDesc desc{shape, p, ft};
          const auto n = static_cast<std::size_t>(element_count(shape));
          const auto x = as_float_type(random_values(n, p.scale(0)), ft);
          SCOPED_TRACE(describe({OpKind::quantize, desc}));
          const std::size_t qbytes = storage_bytes(t, n);
          std::vector<std::byte> expected(qbytes);
          reference::quantize(desc, x.data(), expected.data());

          DeviceArray dx(ops(), x.size()), dq(ops(), qbytes);
          dx.write(x.data(), x.size());
          ops().quantize(desc, dx.data(), dq.data());
          const auto got = dq.read();
          ASSERT_EQ(got, expected);
          EXPECT_TRUE(dq.guards_intact());

          // Dequantize the reference codes back (float32 out).
          std::vector<float> deq(n);
          reference::dequantize(desc, expected.data(), deq.data());
          DeviceArray dy(ops(), n * sizeof(float));
          ops().dequantize(desc, dq.data(), static_cast<float*>(dy.data()));
          const auto back = dy.read_as<float>();
          ASSERT_EQ(0, std::memcmp(back.data(), deq.data(), n * sizeof(float)));
          EXPECT_TRUE(dy.guards_intact());
          ++cases;
        }
  EXPECT_EQ(cases, 108);
}

TEST_F(CudaQuantize, RequantizeMatchesTheReferenceInBothModes) {
  for (const RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
    for (const DType out : {DType::int8, DType::uint8})
      for (const bool per_axis : {false, true}) {
        const Shape shape = {7, 33};
        RequantizeDesc d;
        d.shape = shape;
        d.out_dtype = out;
        d.mode = mode;
        d.out_zero_point =
            std::uniform_int_distribution<int>(traits(out).qmin, traits(out).qmax)(rng_);
        d.axis = per_axis ? 1 : -1;
        d.multipliers.resize(per_axis ? 33 : 1);
        for (auto& m : d.multipliers)
          m = std::exp2(std::uniform_real_distribution<float>(-40.0f, 8.0f)(rng_));
        d.multipliers[0] = per_axis ? 0.0f : d.multipliers[0];
        std::vector<std::int32_t> c(7 * 33);
        std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                        std::numeric_limits<std::int32_t>::max());
        std::uniform_int_distribution<std::int32_t> small(-5000, 5000);
        for (std::size_t i = 0; i < c.size(); ++i) c[i] = i % 3 ? small(rng_) : any(rng_);
        c[0] = std::numeric_limits<std::int32_t>::min();
        c[1] = std::numeric_limits<std::int32_t>::max();
        SCOPED_TRACE(describe({OpKind::requantize, d}));
        std::vector<std::uint8_t> expected(c.size());
        reference::requantize(d, c.data(), expected.data());
        DeviceArray dc(ops(), c.size() * 4), dy(ops(), c.size());
        dc.write(c);
        ops().requantize(d, static_cast<const std::int32_t*>(dc.data()), dy.data());
        EXPECT_EQ(dy.read_as<std::uint8_t>(), expected);
        EXPECT_TRUE(dy.guards_intact());
      }
}

TEST_F(CudaQuantize, DynamicQuantizeLinearMatchesTheReference) {
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{6}, std::size_t{1000}, std::size_t{65537}}) {
    std::normal_distribution<float> normal(0.3f, 2.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng_);
    if (n > 10) x[n / 2] = std::numeric_limits<float>::quiet_NaN();
    const DynamicQuantizeDesc d{{static_cast<std::int64_t>(n)}};
    std::vector<std::uint8_t> expected(n);
    const QuantizationParams pe = reference::dynamic_quantize_linear(d, x.data(), expected.data());
    DeviceArray dx(ops(), n * 4), dy(ops(), n);
    dx.write(x);
    const QuantizationParams pg = ops().dynamic_quantize_linear(
        d, static_cast<const float*>(dx.data()), static_cast<std::uint8_t*>(dy.data()));
    EXPECT_EQ(pg, pe) << pg.to_string() << " vs " << pe.to_string();
    EXPECT_EQ(dy.read_as<std::uint8_t>(), expected) << "n = " << n;
    EXPECT_TRUE(dy.guards_intact());
  }
  // The ONNX example from DESIGN.md.
  const std::vector<float> x = {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f};
  DeviceArray dx(ops(), 24), dy(ops(), 6);
  dx.write(x);
  const auto p = ops().dynamic_quantize_linear({{6}}, static_cast<const float*>(dx.data()),
                                               static_cast<std::uint8_t*>(dy.data()));
  EXPECT_EQ(p.zero_point(), 153);
  EXPECT_EQ(dy.read_as<std::uint8_t>(), (std::vector<std::uint8_t>{153, 255, 0, 26, 221, 179}));
  // An infinite input has no scale: refused like the reference does, naming the element.
  std::vector<float> bad(100, 1.0f);
  bad[42] = -std::numeric_limits<float>::infinity();
  DeviceArray db(ops(), 400), dq(ops(), 100);
  db.write(bad);
  try {
    ops().dynamic_quantize_linear({{100}}, static_cast<const float*>(db.data()),
                                  static_cast<std::uint8_t*>(dq.data()));
    ADD_FAILURE() << "an infinite input was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("x[42]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::cuda_test
