// Hostile sizes through every plugin (the audit of hostile inputs): shapes whose element count
// overflows int64 ([3037000500, 3037000500]) or wraps to 0 ([2^32, 2^32, 2^32]), m = k = 2^32,
// m = 2^62 with k = 4, and INT64_MAX extents. Each lies beyond qforge's size limit
// (checked_size.h), so the reference rejects it. Every plugin must answer without crashing:
// supports() says no (the shipped backends must, with a reason naming the operand), and an op
// called anyway throws qforge::Error without touching the few bytes it was given. Before the
// limit, cpu_scalar crashed on m = 2^62, cpu_x86 claimed it and threw std::length_error, and
// [2^32, 2^32, 2^32] "succeeded" on every plugin.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <memory>
#include <tuple>

#include "harness/fixture.h"
#include "harness/guarded_buffer.h"
#include "qforge/checked_size.h"
#include "qforge/reference.h"

namespace qforge::conformance {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t k2_32 = std::int64_t{1} << 32;
constexpr std::int64_t k2_62 = std::int64_t{1} << 62;
constexpr std::size_t kDummyBytes = 256;

// The backends shipped with qforge answer no in supports(); a test plugin may claim everything
// and refuse in the op instead (the conformance contract, harness/op_case.h).
bool shipped(const std::string& plugin) {
  for (const char* name : {"cpu_scalar", "cpu_x86", "onednn", "cuda", "vulkan"})
    if (plugin == name) return true;
  return false;
}

QuantizationParams i8() { return QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 1); }

MatmulDesc matmul(std::int64_t m, std::int64_t n, std::int64_t k) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = k,
                    .a = i8(),
                    .b = i8(),
                    .b_layout = MatrixLayout::kn,
                    .has_bias = false,
                    .out_type = FloatType::f32,
                    .y = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0),
                    .requant_mode = RequantMode::float_multiplier};
}

struct Hostile {
  std::string label;
  OpDesc op;
  // Runs the op on the plugin with pointers to small buffers in its memory.
  std::function<void(QuantizationOps&, void* in0, void* in1, void* out0, void* out1)> run;
};

std::vector<Hostile> hostile_cases() {
  std::vector<Hostile> out;
  const std::vector<Shape> shapes = {
      {3037000500, 3037000500}, {k2_32, k2_32, k2_32}, {kInt64Max}, {kInt64Max, kInt64Max}};
  for (const Shape& s : shapes) {
    const QuantizeDesc q{s, i8(), FloatType::f32};
    out.push_back(
        {"quantize " + to_string(s),
         {OpKind::quantize, q},
         [q](QuantizationOps& o, void* x, void*, void* y, void*) { o.quantize(q, x, y); }});
    out.push_back({"dequantize " + to_string(s),
                   {OpKind::dequantize, q},
                   [q](QuantizationOps& o, void* x, void*, void* y, void*) {
                     o.dequantize(q, x, static_cast<float*>(y));
                   }});
    const RequantizeDesc r{s, {0.5f}};
    out.push_back({"requantize " + to_string(s),
                   {OpKind::requantize, r},
                   [r](QuantizationOps& o, void* c, void*, void* y, void*) {
                     o.requantize(r, static_cast<const std::int32_t*>(c), y);
                   }});
    const DynamicQuantizeDesc dq{s};
    out.push_back({"dynamic_quantize_linear " + to_string(s),
                   {OpKind::dynamic_quantize_linear, dq},
                   [dq](QuantizationOps& o, void* x, void*, void* y, void*) {
                     o.dynamic_quantize_linear(dq, static_cast<const float*>(x),
                                               static_cast<std::uint8_t*>(y));
                   }});
  }
  struct Mnk {
    std::int64_t m, n, k;
  };
  for (const Mnk& d : {Mnk{k2_32, 1, k2_32}, Mnk{k2_62, 1, 4}, Mnk{kInt64Max, kInt64Max, kInt64Max},
                       Mnk{3037000500, 3037000500, 3037000500}, Mnk{1 << 30, 1 << 30, 1}}) {
    const MatmulDesc md = matmul(d.m, d.n, d.k);
    const std::string mnk =
        " m=" + std::to_string(d.m) + " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k);
    out.push_back({"matmul_integer" + mnk,
                   {OpKind::matmul_integer, md},
                   [md](QuantizationOps& o, void* a, void* b, void* c, void*) {
                     o.matmul_integer(md, a, b, static_cast<std::int32_t*>(c));
                   }});
    out.push_back({"matmul_dequant" + mnk,
                   {OpKind::matmul_dequant, md},
                   [md](QuantizationOps& o, void* a, void* b, void* y, void*) {
                     o.matmul_dequant(md, a, b, nullptr, y);
                   }});
    out.push_back({"qlinear_matmul" + mnk,
                   {OpKind::qlinear_matmul, md},
                   [md](QuantizationOps& o, void* a, void* b, void* y, void*) {
                     o.qlinear_matmul(md, a, b, y);
                   }});
    // Prepacked, where B is beyond the limit itself or fits the dummy buffer (m = 2^62: B is
    // [4, 1], packs, and the call must refuse). A valid large B would be read in full.
    const auto b_count = static_cast<unsigned __int128>(d.k) * static_cast<unsigned __int128>(d.n);
    if (b_count <= kDummyBytes || b_count > static_cast<unsigned __int128>(kMaxSize))
      out.push_back({"pack_weights / matmul_integer_packed" + mnk,
                     {OpKind::matmul_integer, md},
                     [md](QuantizationOps& o, void* a, void* b, void* c, void*) {
                       std::shared_ptr<PackedWeights> w;
                       try {
                         w = o.pack_weights(md, b);
                       } catch (const Error& e) {
                         if (e.code() == ErrorCode::unsupported &&
                             std::string(e.what()).find("no default for device memory") !=
                                 std::string::npos)
                           return;  // a device plugin without a packed form: nothing to call
                         throw;
                       }
                       o.matmul_integer_packed(md, a, *w, static_cast<std::int32_t*>(c));
                     }});
    const LinearDesc ld{d.m, d.n, d.k, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f),
                        false};
    out.push_back({"linear_forward" + mnk,
                   {OpKind::linear_forward, ld},
                   [ld](QuantizationOps& o, void* x, void* w, void* xq, void* y) {
                     o.linear_forward(ld, static_cast<const float*>(x),
                                      static_cast<const std::int8_t*>(w), nullptr,
                                      static_cast<std::int8_t*>(xq), static_cast<float*>(y));
                   }});
  }
  // Convolutions: an X whose extents each pass but whose product does not, and an extent past
  // the limit (the output extents derived from it must not overflow on the way).
  for (const auto& [label, n, c, h] :
       {std::tuple{"conv_integer x=[2^32, 2^32, 1, 1]", k2_32, k2_32, std::int64_t{1}},
        std::tuple{"conv_integer h=INT64_MAX", std::int64_t{1}, std::int64_t{1}, kInt64Max}}) {
    ConvDesc cd;
    cd.n = n;
    cd.c = c;
    cd.h = h;
    cd.w = 1;
    cd.out_channels = 1;
    out.push_back({label,
                   {OpKind::conv_integer, cd},
                   [cd](QuantizationOps& o, void* x, void* w, void* y, void*) {
                     o.conv(OpKind::conv_integer, cd, x, w, nullptr, y);
                   }});
  }
  return out;
}

struct PluginParam {
  std::string plugin;
  std::string name() const { return plugin; }
  friend void PrintTo(const PluginParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<PluginParam> all_plugins() {
  std::vector<PluginParam> out;
  for (const auto& p : plugins_under_test()) out.push_back({p});
  return out;
}

class SizeLimits : public PluginTest<PluginParam> {};

TEST_P(SizeLimits, HostileSizesGiveQforgeErrors) {
  QuantizationOps& ops = *target_.ops;
  for (const Hostile& h : hostile_cases()) {
    SCOPED_TRACE(target_.name + ": " + h.label);
    // The premise: the reference rejects the descriptor, naming the size limit.
    try {
      reference::check_descriptor(h.op);
      ADD_FAILURE() << "the reference accepts " << describe(h.op);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("2^48"), std::string::npos) << e.what();
    }
    Support s;
    try {
      s = ops.supports(h.op);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "supports() threw instead of answering: " << e.what();
      continue;
    }
    if (shipped(target_.name)) {
      EXPECT_FALSE(s.supported) << "supports() claims " << describe(h.op);
      EXPECT_NE(s.reason.find("2^48"), std::string::npos) << s.reason;
    }
    std::vector<std::unique_ptr<GuardedBuffer>> bufs;
    for (const char* what : {"in0", "in1", "out0", "out1"}) {
      bufs.push_back(std::make_unique<GuardedBuffer>(ops, kDummyBytes, what));
      bufs.back()->write(std::vector<std::byte>(kDummyBytes, std::byte{0x11}));
    }
    try {
      h.run(ops, bufs[0]->payload(), bufs[1]->payload(), bufs[2]->payload(), bufs[3]->payload());
      ops.synchronize();
      if (h.label.rfind("pack_weights", 0) != 0 || ops.host_memory())
        ADD_FAILURE() << "the op returned for a descriptor beyond the size limit";
    } catch (const Error&) {
      // the expected outcome
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw a non-qforge exception: " << e.what();
    }
    for (const auto& b : bufs) {
      EXPECT_TRUE(b->guards_intact());
      EXPECT_TRUE(b->read() == std::vector<std::byte>(kDummyBytes, std::byte{0x11}))
          << "the op wrote into its buffers";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, SizeLimits, ::testing::ValuesIn(all_plugins()),
                         param_name<PluginParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SizeLimits);

}  // namespace
}  // namespace qforge::conformance
