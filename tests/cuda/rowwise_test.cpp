// White-box test of the per-row absmax "compute scale and quantize" kernel (kernels/rowwise.h),
// which the op interface does not expose yet: scales and codes against a host evaluation with
// reference::quantize_value, for float32, float16 and bfloat16 rows, aligned or not.
#include "kernels/rowwise.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>

#include "qforge/half.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

class CudaRowwise : public CudaTest {};

TEST_F(CudaRowwise, ScalesAndCodesMatchTheHostEvaluation) {
  struct Dims {
    std::int64_t rows, cols;
  };
  for (const Dims dm :
       {Dims{1, 1}, Dims{3, 17}, Dims{8, 4096}, Dims{5, 1000}, Dims{64, 48}, Dims{2, 20000}})
    for (const FloatType t : {FloatType::f32, FloatType::f16, FloatType::bf16}) {
      SCOPED_TRACE(std::to_string(dm.rows) + "x" + std::to_string(dm.cols) + " " + name(t));
      const auto n = static_cast<std::size_t>(dm.rows * dm.cols);
      std::normal_distribution<float> normal(0.0f, 4.0f);
      std::vector<std::byte> x(n * static_cast<std::size_t>(size_of(t)));
      for (std::size_t i = 0; i < n; ++i) store_float(t, x.data(), i, normal(rng_));
      if (n > 20) store_float(t, x.data(), 7, std::numeric_limits<float>::quiet_NaN());
      if (dm.rows > 1)  // an all-zero row takes the 1e-8 floor
        for (std::int64_t c = 0; c < dm.cols; ++c)
          store_float(t, x.data(), static_cast<std::size_t>(dm.cols + c), 0.0f);

      std::vector<std::int8_t> q_ref(n);
      std::vector<float> s_ref(static_cast<std::size_t>(dm.rows));
      for (std::int64_t r = 0; r < dm.rows; ++r) {
        float amax = 0.0f;
        for (std::int64_t c = 0; c < dm.cols; ++c) {
          const float v = load_float(t, x.data(), static_cast<std::size_t>(r * dm.cols + c));
          if (!std::isnan(v)) amax = std::max(amax, std::fabs(v));
        }
        const float s = std::max(amax / 127.0f, 1e-8f);
        s_ref[static_cast<std::size_t>(r)] = s;
        for (std::int64_t c = 0; c < dm.cols; ++c) {
          const auto i = static_cast<std::size_t>(r * dm.cols + c);
          q_ref[i] = static_cast<std::int8_t>(
              reference::quantize_value(load_float(t, x.data(), i), s, 0, -127, 127));
        }
      }
      DeviceArray dx(ops(), x.size()), dq(ops(), n), ds(ops(), s_ref.size() * 4);
      dx.write(x.data(), x.size());
      cuda::launch_rowwise_absmax_quantize(t, dx.data(), dm.rows, dm.cols,
                                           static_cast<std::int8_t*>(dq.data()),
                                           static_cast<float*>(ds.data()), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ds.read_as<float>(), s_ref);
      EXPECT_EQ(dq.read_as<std::int8_t>(), q_ref);
      EXPECT_TRUE(dq.guards_intact());
    }
}

}  // namespace
}  // namespace qforge::cuda_test
