// Convolution through the accelerator: candidates are verified on shrunken probes of the
// convolution (a plugin that lies is excluded), timed, and the winner's plan, weights and bias
// fixed, gives the reference's results.
#include <gtest/gtest.h>

#include <random>

#include "qforge/op_table.h"
#include "qforge/reference.h"
#include "support.h"

namespace {

using namespace qforge;

ConvDesc depthwise_conv(OpKind op) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = 2;
  d.c = 6;
  d.h = 9;
  d.w = 7;
  d.out_channels = 12;
  d.groups = 6;
  d.kernel_h = d.kernel_w = 3;
  d.stride_w = 2;
  apply_auto_pad(d, AutoPad::same_upper);
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 121);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0,
                                               std::vector<float>(12, 0.01f));
  if (op != OpKind::conv_integer) d.bias = ConvBias::int32;
  if (op == OpKind::qlinear_conv) {
    d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.05f, 7);
    d.activation = ConvActivation::relu6;
  }
  return d;
}

TEST(PrepareConv, VerifiedWinnerPlansMatchTheReference) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_liar", "acc_device"}),
                  acc_test::options(acc_test::scratch_dir("conv") / "t.json"));
  for (OpKind op : {OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
    SCOPED_TRACE(std::string(to_string(op)));
    const Workload w{{op, depthwise_conv(op)}};
    const TuneReport report = acc.tune(w);
    bool liar_excluded = false;
    for (const auto& c : report.candidates)
      if (c.id.plugin == "acc_liar") liar_excluded = c.status == CandidateStatus::wrong_result;
    EXPECT_TRUE(liar_excluded) << "acc_liar was not caught on " << describe(w.op);
    EXPECT_NE(report.winner.plugin, "acc_liar");

    const OpOperands operands = op_operands(w.op);
    std::vector<std::vector<std::byte>> in, got, want;
    for (const auto& o : operands.inputs) {
      std::vector<std::byte> bytes(o.bytes);
      if (o.name == "bias") {  // small int32 values
        std::uniform_int_distribution<std::int32_t> v(-5000, 5000);
        for (std::size_t i = 0; i < o.count; ++i)
          reinterpret_cast<std::int32_t*>(bytes.data())[i] = v(rng);
      } else {  // any byte is a valid 8-bit code
        std::uniform_int_distribution<int> v(0, 255);
        for (auto& b : bytes) b = static_cast<std::byte>(v(rng));
      }
      in.push_back(std::move(bytes));
    }
    for (const auto& o : operands.outputs) {
      got.emplace_back(o.bytes, std::byte{0xCD});
      want.emplace_back(o.bytes, std::byte{0xCD});
    }
    std::vector<const void*> weights(in.size(), nullptr), run_in(in.size(), nullptr);
    run_in[0] = in[0].data();
    for (std::size_t i = 1; i < in.size(); ++i) weights[i] = in[i].data();
    const auto plan = acc.prepare(w, weights);
    EXPECT_FALSE(plan->reads_input(1));
    std::vector<void*> got_out, want_out;
    for (auto& g : got) got_out.push_back(g.data());
    for (auto& g : want) want_out.push_back(g.data());
    plan->run(run_in, got_out);
    std::vector<const void*> all_in;
    for (const auto& a : in) all_in.push_back(a.data());
    run_reference(w.op, all_in.data(), want_out.data());
    EXPECT_EQ(got, want) << plan->backend() << " " << plan->kernel();

    // The per-call op through the same decision.
    std::vector<std::byte> y(operands.outputs[0].bytes, std::byte{0xCD});
    acc.conv(op, std::get<ConvDesc>(w.op.desc), in[0].data(), in[1].data(),
             in.size() > 2 ? in[2].data() : nullptr, y.data());
    EXPECT_EQ(y, want[0]);
  }
}

TEST(PrepareConv, WorkloadKeysSeparateTheGeometry) {
  const Workload a{{OpKind::conv_integer, depthwise_conv(OpKind::conv_integer)}};
  Workload b = a;
  std::get<ConvDesc>(b.op.desc).stride_w = 1;
  Workload c = a;
  std::get<ConvDesc>(c.op.desc).layout = ConvLayout::nchw;
  EXPECT_NE(workload_cache_key(a), workload_cache_key(b));
  EXPECT_NE(workload_cache_key(a), workload_cache_key(c));
  EXPECT_NE(workload_bucket(a).find("depthwise"), std::string::npos) << workload_bucket(a);
}

}  // namespace
