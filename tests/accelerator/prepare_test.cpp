// Accelerator::prepare hands out the plan of a bucket's winner: a host plugin's own plan, a
// device winner's plan staged through copies for host data, and a stand-in when the winner
// refuses the exact shape. Every plan gives the reference's results.
#include <gtest/gtest.h>

#include <random>

#include "qforge/op_table.h"
#include "qforge/reference.h"
#include "support.h"

namespace {

using namespace qforge;

struct Arrays {
  std::vector<std::vector<std::byte>> in, out;
};

// Random inputs for a matmul workload (codes in range) and zeroed outputs.
Arrays random_run(std::mt19937_64& rng, const OpDesc& op) {
  const OpOperands operands = op_operands(op);
  const auto& d = std::get<MatmulDesc>(op.desc);
  Arrays r;
  for (const auto& o : operands.inputs) {
    std::vector<std::byte> bytes(o.bytes);
    if (o.name == "a" || o.name == "b") {
      const DType t = o.name == "a" ? d.a.dtype() : d.b.dtype();
      std::uniform_int_distribution<int> v(t == DType::int8 ? -127 : 0,
                                           t == DType::int8 ? 127 : 255);
      for (std::size_t i = 0; i < o.count; ++i) store_element(t, bytes.data(), i, v(rng));
    } else {
      std::normal_distribution<float> v(0.0f, 1.0f);
      for (std::size_t i = 0; i < o.count; ++i) reinterpret_cast<float*>(bytes.data())[i] = v(rng);
    }
    r.in.push_back(std::move(bytes));
  }
  for (const auto& o : operands.outputs) r.out.emplace_back(o.bytes, std::byte{0xCD});
  return r;
}

std::vector<const void*> inputs(const Arrays& r) {
  std::vector<const void*> p;
  for (const auto& a : r.in) p.push_back(a.data());
  return p;
}
std::vector<void*> outputs(Arrays& r) {
  std::vector<void*> p;
  for (auto& a : r.out) p.push_back(a.data());
  return p;
}

// Runs `plan` on fresh data (B and bias passed or fixed) against the reference.
void expect_reference(const Plan& plan, const Arrays& data) {
  Arrays got = data, want = data;
  std::vector<const void*> in = inputs(got);
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!plan.reads_input(i)) in[i] = nullptr;
  plan.run(in, outputs(got));
  run_reference(plan.desc(), inputs(want).data(), outputs(want).data());
  EXPECT_EQ(got.out, want.out) << plan.backend() << " " << plan.kernel();
}

TEST(Prepare, HostWinnerPlansMatchTheReference) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul}) {
    const Workload w = acc_test::small_matmul(5, op);
    const Arrays data = random_run(rng, w.op);
    expect_reference(*acc.prepare(w), data);
    std::vector<const void*> weights(data.in.size(), nullptr);
    for (std::size_t i = 1; i < weights.size(); ++i) weights[i] = data.in[i].data();
    const auto fixed = acc.prepare(w, weights);
    EXPECT_FALSE(fixed->reads_input(1));
    EXPECT_EQ(fixed->backend(), "cpu_scalar");
    EXPECT_EQ(fixed->concurrency(), PlanConcurrency::concurrent);
    expect_reference(*fixed, data);
  }
}

TEST(Prepare, DeviceWinnerPlansAreStagedForHostData) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_device[0]/only", 1e-6}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_device"}), o);
  const Workload w = acc_test::small_matmul(6, OpKind::matmul_dequant);
  const Arrays data = random_run(rng, w.op);
  const auto plan = acc.prepare(w, {nullptr, data.in[1].data(), data.in[2].data()});
  EXPECT_EQ(plan->backend(), "acc_device");
  EXPECT_EQ(plan->concurrency(), PlanConcurrency::serialized);
  for (int run = 0; run < 2; ++run) expect_reference(*plan, data);
}

TEST(Prepare, AWinnerThatRefusesTheShapeIsStandedInFor) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_picky[0]/only", 1e-6}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_picky"}), o);
  EXPECT_EQ(acc.prepare(acc_test::small_matmul(8))->backend(), "acc_picky");
  const Workload odd = acc_test::small_matmul(7);  // same bucket, refused by acc_picky
  const auto plan = acc.prepare(odd);
  EXPECT_EQ(plan->backend(), "cpu_scalar");
  expect_reference(*plan, random_run(rng, odd.op));
}

TEST(Prepare, NoPluginForTheWorkloadIsAClearError) {
  Accelerator acc(acc_test::plugins({"cpu_scalar"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  Workload w = acc_test::small_matmul(4);
  std::get<MatmulDesc>(w.op.desc).k = -3;
  try {
    acc.prepare(w);
    ADD_FAILURE() << "prepare() made a plan of an invalid descriptor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu_scalar"), std::string::npos) << e.what();
  }
}

}  // namespace
