// conformance_mutant: a plugin that computes with qforge::reference and then commits one
// deliberate bug, chosen by QFORGE_MUTANT. It exists to show that the conformance suite fails
// when it should (tests/conformance/CMakeLists.txt runs the suite against each bug and expects
// the matching failure message) and passes a correct non-cpu_scalar plugin, in host memory
// (QFORGE_MUTANT=none) and in simulated device memory (QFORGE_MUTANT=device: buffers that are
// not host-accessible, reached only through allocate / copy_to_device / copy_to_host).
//
// It is built outside the build's plugin directory, so ordinary runs never load it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "qforge/error.h"
#include "qforge/half.h"
#include "qforge/ops.h"
#include "qforge/plugin/sdk.h"
#include "qforge/reference.h"

namespace qforge::conformance_mutant {
namespace {

enum class Bug {
  none,
  device,                // correct, but in simulated device memory
  round_half_away,       // quantize rounds ties away from zero
  skip_last,             // quantize leaves the last output byte unwritten
  write_past_end,        // matmul_integer writes one int32 past C
  write_before,          // dequantize writes one float before X
  modify_input,          // quantize flips a bit of its input
  int32_wrap,            // matmul_integer wraps on int32 overflow instead of throwing
  wrong_overflow_code,   // matmul_integer reports overflow as invalid_argument
  drop_bias,             // matmul_dequant ignores the bias
  nan_output,            // matmul_dequant writes NaN into element 0
  fixed_point_as_float,  // requantize ignores RequantMode::fixed_point
  dql_scale_ulp,         // dynamic_quantize_linear returns a scale one ulp too large
  no_db,                 // linear_backward never writes db
  packed_off_by_one,     // matmul_integer_packed adds 1 to C[0, 0]
  reject_all,            // supports() says no to everything
  unavailable,           // availability() says it cannot run here
};

const std::map<std::string, Bug>& bug_names() {
  static const std::map<std::string, Bug> names = {
      {"none", Bug::none},
      {"device", Bug::device},
      {"round_half_away", Bug::round_half_away},
      {"skip_last", Bug::skip_last},
      {"write_past_end", Bug::write_past_end},
      {"write_before", Bug::write_before},
      {"modify_input", Bug::modify_input},
      {"int32_wrap", Bug::int32_wrap},
      {"wrong_overflow_code", Bug::wrong_overflow_code},
      {"drop_bias", Bug::drop_bias},
      {"nan_output", Bug::nan_output},
      {"fixed_point_as_float", Bug::fixed_point_as_float},
      {"dql_scale_ulp", Bug::dql_scale_ulp},
      {"no_db", Bug::no_db},
      {"packed_off_by_one", Bug::packed_off_by_one},
      {"reject_all", Bug::reject_all},
      {"unavailable", Bug::unavailable},
  };
  return names;
}

Bug bug_from_environment() {
  const char* env = std::getenv("QFORGE_MUTANT");
  const std::string name = env == nullptr ? "none" : env;
  const auto it = bug_names().find(name);
  if (it == bug_names().end()) {
    std::string known;
    for (const auto& [n, b] : bug_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::invalid_argument,
                "QFORGE_MUTANT = '" + name + "'; expected one of " + known);
  }
  return it->second;
}

// Memory that host code must not touch directly: what a GPU buffer looks like to the suite.
class SimulatedDeviceBuffer final : public Buffer {
 public:
  explicit SimulatedDeviceBuffer(std::size_t bytes) : storage_(bytes + 64), bytes_(bytes) {}
  void* data() noexcept override {
    // 64-byte aligned inside the vector, as device allocations are.
    auto p = reinterpret_cast<std::uintptr_t>(storage_.data());
    return reinterpret_cast<void*>((p + 63) & ~std::uintptr_t{63});
  }
  std::size_t size() const noexcept override { return bytes_; }
  DeviceRef device() const override { return {"conformance_mutant", 0}; }
  bool host_accessible() const noexcept override { return false; }

 private:
  std::vector<std::byte> storage_;
  std::size_t bytes_;
};

// One kernel: its plans are the default plan over the per-call ops (where the bugs are), which
// runs the per-call ops' one kernel.
const std::vector<std::string> kKernels = {"mutant_generic"};

class MutantOps final : public QuantizationOps {
 public:
  MutantOps() : bug_(bug_from_environment()) {}

  std::string name() const override { return "conformance_mutant"; }
  std::string version() const override { return "0.1.0"; }
  Availability availability() const override {
    if (bug_ == Bug::unavailable) return {false, 0, "conformance_mutant: simulated missing device"};
    return {true, 1, {}};
  }
  std::vector<DeviceInfo> devices() const override {
    return {DeviceInfo{"mutant device", bug_ == Bug::device ? "gpu" : "cpu", 0, {}}};
  }
  bool host_memory() const override { return bug_ != Bug::device; }

  std::shared_ptr<Buffer> allocate(std::size_t bytes) override {
    if (bug_ != Bug::device) return QuantizationOps::allocate(bytes);
    return std::make_shared<SimulatedDeviceBuffer>(bytes);
  }
  void copy_to_device(Buffer& dst, std::size_t offset, const void* src,
                      std::size_t bytes) override {
    if (bug_ != Bug::device) return QuantizationOps::copy_to_device(dst, offset, src, bytes);
    check(dst, offset, bytes);
    if (bytes) std::memcpy(static_cast<std::byte*>(dst.data()) + offset, src, bytes);
  }
  void copy_to_host(void* dst, const Buffer& src, std::size_t offset, std::size_t bytes) override {
    if (bug_ != Bug::device) return QuantizationOps::copy_to_host(dst, src, offset, bytes);
    check(src, offset, bytes);
    auto& s = const_cast<Buffer&>(src);
    if (bytes) std::memcpy(dst, static_cast<const std::byte*>(s.data()) + offset, bytes);
  }

  using QuantizationOps::supports;
  Support supports(const OpDesc&, int device) const override {
    if (device != 0) return Support::no("conformance_mutant: one device");
    if (bug_ == Bug::reject_all) return Support::no("conformance_mutant rejects everything");
    // Claims everything; the reference throws for what it does not define.
    return Support::yes(kKernels);
  }

  void quantize(const QuantizeDesc& desc, const void* x, void* q) override {
    const auto n = static_cast<std::size_t>(element_count(desc.shape));
    const std::size_t bytes = storage_bytes(desc.params.dtype(), n);
    if (bug_ == Bug::skip_last) {
      std::vector<std::byte> scratch(bytes);
      reference::quantize(desc, x, scratch.data());
      if (bytes > 1) std::memcpy(q, scratch.data(), bytes - 1);
      return;
    }
    reference::quantize(desc, x, q);
    if (bug_ == Bug::round_half_away && desc.params.scheme().mapping != Mapping::logarithmic)
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t p = desc.params.param_index(desc.shape, static_cast<std::int64_t>(i));
        const float v = load_float(desc.float_type, x, i) / desc.params.scale(p);
        if (std::isfinite(v) && std::fabs(v - std::trunc(v)) == 0.5f) {
          const double r = std::round(static_cast<double>(v)) + desc.params.zero_point(p);
          const double clamped = std::clamp<double>(r, desc.params.qmin(), desc.params.qmax());
          store_element(desc.params.dtype(), q, i, static_cast<std::int32_t>(clamped));
        }
      }
    if (bug_ == Bug::modify_input && n > 0)
      static_cast<std::byte*>(const_cast<void*>(x))[0] ^= std::byte{1};
  }

  void dequantize(const QuantizeDesc& desc, const void* q, float* x) override {
    reference::dequantize(desc, q, x);
    if (bug_ == Bug::write_before) x[-1] = 1.0f;
  }

  void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) override {
    RequantizeDesc d = desc;
    if (bug_ == Bug::fixed_point_as_float) d.mode = RequantMode::float_multiplier;
    reference::requantize(d, c, y);
  }

  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override {
    reference::conv(op, desc, x, w, bias, y);
  }

  void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b, const float* bias,
                          float* y) override {
    reference::matmul_weight_only(desc, a, b, bias, y);
  }

  void matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                      std::int32_t* c) override {
    try {
      reference::matmul_integer(desc, a, b, c);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::overflow) throw;
      if (bug_ == Bug::wrong_overflow_code) throw Error(ErrorCode::invalid_argument, e.what());
      if (bug_ != Bug::int32_wrap) throw;
      wrapping_matmul(desc, a, b, c);
    }
    if (bug_ == Bug::write_past_end) c[desc.m * desc.n] = 12345;
  }

  void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b, const float* bias,
                      void* y) override {
    MatmulDesc d = desc;
    if (bug_ == Bug::drop_bias) d.has_bias = false;
    reference::matmul_dequant(d, a, b, d.has_bias ? bias : nullptr, y);
    if (bug_ == Bug::nan_output && desc.m * desc.n > 0)
      store_float(desc.out_type, y, 0, std::numeric_limits<float>::quiet_NaN());
  }

  void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) override {
    reference::qlinear_matmul(desc, a, b, y);
  }
  void qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                           const std::int32_t* bias, void* y) override {
    reference::qlinear_matmul(desc, a, b, bias, y);
  }

  void matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             std::int32_t* c) override {
    QuantizationOps::matmul_integer_packed(desc, a, b, c);
    if (bug_ == Bug::packed_off_by_one && desc.m * desc.n > 0) c[0] += 1;
  }

  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y) override {
    QuantizationParams p = reference::dynamic_quantize_linear(desc, x, y);
    if (bug_ != Bug::dql_scale_ulp) return p;
    return QuantizationParams::per_tensor_affine(
        DType::uint8, std::nextafter(p.scale(), std::numeric_limits<float>::infinity()),
        p.zero_point());
  }

  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override {
    return reference::linear_forward(desc, x, wq, bias, xq, y);
  }

  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override {
    std::vector<float> scratch(static_cast<std::size_t>(desc.n));
    reference::linear_backward(desc, dy, xq, xq_params, wq, dx, dw,
                               bug_ == Bug::no_db && db != nullptr ? scratch.data() : db);
  }

 private:
  static void check(const Buffer& b, std::size_t offset, std::size_t bytes) {
    if (offset > b.size() || bytes > b.size() - offset)
      throw Error(ErrorCode::invalid_argument, "conformance_mutant: copy of " +
                                                   std::to_string(bytes) + " bytes at " +
                                                   std::to_string(offset) + " outside a " +
                                                   std::to_string(b.size()) + "-byte buffer");
  }

  // C with int64 sums cast to int32: the wrap-around a careless int32 kernel produces.
  static void wrapping_matmul(const MatmulDesc& d, const void* a, const void* b, std::int32_t* c) {
    const Shape as = d.a_shape(), bs = d.b_shape();
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n) {
        std::int64_t acc = 0;
        for (std::int64_t k = 0; k < d.k; ++k) {
          const std::int64_t ai = m * d.k + k;
          const std::int64_t bi = d.b_layout == MatrixLayout::kn ? k * d.n + n : n * d.k + k;
          const std::int64_t av = load_element(d.a.dtype(), a, static_cast<std::size_t>(ai)) -
                                  d.a.zero_point(d.a.param_index(as, ai));
          const std::int64_t bv = load_element(d.b.dtype(), b, static_cast<std::size_t>(bi)) -
                                  d.b.zero_point(d.b.param_index(bs, bi));
          acc += av * bv;
        }
        c[m * d.n + n] = static_cast<std::int32_t>(static_cast<std::uint32_t>(acc));
      }
  }

  Bug bug_;
};

}  // namespace
}  // namespace qforge::conformance_mutant

QFORGE_DEFINE_PLUGIN(qforge::conformance_mutant::MutantOps, "conformance_mutant", "0.1.0")
