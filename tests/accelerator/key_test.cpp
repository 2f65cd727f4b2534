// Workload buckets and cache keys: what shares a decision and what does not.
#include <gtest/gtest.h>

#include <set>

#include "qforge/bench/suites.h"
#include "support.h"

namespace {

using namespace qforge;

Workload quantize(Shape shape, DType t = DType::int8, float scale = 0.1f) {
  return {
      {OpKind::quantize, QuantizeDesc{shape, QuantizationParams::per_tensor_symmetric(t, scale)}}};
}

TEST(WorkloadKey, ShapesRoundUpToPowersOfTwo) {
  EXPECT_EQ(workload_cache_key(quantize({3, 100})), workload_cache_key(quantize({4, 128})));
  EXPECT_EQ(workload_cache_key(quantize({3, 65})), workload_cache_key(quantize({4, 128})));
  EXPECT_NE(workload_cache_key(quantize({4, 129})), workload_cache_key(quantize({4, 128})));
  EXPECT_NE(workload_cache_key(quantize({5, 128})), workload_cache_key(quantize({4, 128})));
  EXPECT_EQ(workload_bucket(quantize({3, 100})),
            "quantize host int8/per_tensor_symmetric float=float32 rows<=4 cols<=128");
}

TEST(WorkloadKey, GemvIsItsOwnBucket) {
  const auto m1 = acc_test::small_matmul(1), m2 = acc_test::small_matmul(2);
  EXPECT_NE(workload_cache_key(m1), workload_cache_key(m2));
  EXPECT_NE(workload_bucket(m1).find("m<=1 "), std::string::npos) << workload_bucket(m1);
  EXPECT_EQ(workload_cache_key(acc_test::small_matmul(3)),
            workload_cache_key(acc_test::small_matmul(4)));
}

TEST(WorkloadKey, ValuesDoNotSplitBuckets) {
  EXPECT_EQ(workload_cache_key(quantize({8, 8}, DType::int8, 0.1f)),
            workload_cache_key(quantize({8, 8}, DType::int8, 7.0f)));
}

TEST(WorkloadKey, TypesSchemesResidencyAndPolicySplitBuckets) {
  EXPECT_NE(workload_cache_key(quantize({8, 8}, DType::int8)),
            workload_cache_key(quantize({8, 8}, DType::int4)));
  Workload rows = quantize({8, 8});
  std::get<QuantizeDesc>(rows.op.desc).params = QuantizationParams::per_channel(
      DType::int8, Mapping::symmetric, 0, std::vector<float>(8, 1.0f));
  Workload cols = rows;
  std::get<QuantizeDesc>(cols.op.desc).params = QuantizationParams::per_channel(
      DType::int8, Mapping::symmetric, 1, std::vector<float>(8, 1.0f));
  EXPECT_NE(workload_cache_key(rows), workload_cache_key(cols));
  // A negative axis names the same axis as its positive form.
  Workload last = cols;
  std::get<QuantizeDesc>(last.op.desc).params = QuantizationParams::per_channel(
      DType::int8, Mapping::symmetric, -1, std::vector<float>(8, 1.0f));
  EXPECT_EQ(workload_cache_key(cols), workload_cache_key(last));

  Workload device = quantize({8, 8});
  device.residency = Residency::device;
  EXPECT_NE(workload_cache_key(device), workload_cache_key(quantize({8, 8})));

  Policy p;
  p.plugins = {"b", "a"};
  Policy q;
  q.plugins = {"a", "b"};
  EXPECT_EQ(workload_cache_key(quantize({8, 8}), p), workload_cache_key(quantize({8, 8}), q));
  q.include_transfers = false;
  EXPECT_NE(workload_cache_key(quantize({8, 8}), p), workload_cache_key(quantize({8, 8}), q));
  EXPECT_EQ(p.tag(), "plugins=a,b;device=*;transfers=1");
}

TEST(WorkloadKey, MatmulOutputsOnlyCountWhereTheOpUsesThem) {
  auto a = acc_test::small_matmul(4);
  auto b = a;
  std::get<MatmulDesc>(b.op.desc).has_bias = true;  // matmul_integer has no bias
  EXPECT_EQ(workload_cache_key(a), workload_cache_key(b));
  auto c = acc_test::small_matmul(4, OpKind::matmul_dequant);
  auto d = c;
  std::get<MatmulDesc>(d.op.desc).has_bias = false;
  EXPECT_NE(workload_cache_key(c), workload_cache_key(d));
}

TEST(Suites, QuickSuiteCoversEveryOpFamilyAndIsValid) {
  const auto suite = quick_suite();
  ASSERT_GE(suite.size(), 10u);
  std::set<OpKind> ops;
  std::set<std::string> names, keys;
  for (const auto& w : suite) {
    ops.insert(w.workload.op.op);
    EXPECT_TRUE(names.insert(w.name).second) << "duplicate name " << w.name;
    keys.insert(workload_cache_key(w.workload));
  }
  EXPECT_EQ(ops.size(), static_cast<std::size_t>(kOpKindCount));
  EXPECT_EQ(keys.size(), suite.size()) << "two quick-suite workloads share a bucket";
  EXPECT_GT(full_suite().size(), suite.size());
}

}  // namespace
