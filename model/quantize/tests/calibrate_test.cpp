// calibrate(): one observer per statically quantized MatMul/Gemm input, memory that does not
// grow with the number of batches, consumers that disagree, and the JSON form.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "fixtures.h"
#include "qforge/calibration/histogram_observer.h"
#include "qforge/error.h"
#include "qforge/reference.h"

// Live heap bytes of this process, for the memory test: every allocation carries its size in
// a header. Only the plain and nothrow forms are replaced; the aligned ones keep their own.
namespace {
std::atomic<std::int64_t> g_live{0}, g_peak{0};
constexpr std::size_t kHeader = alignof(std::max_align_t);

void* counted_alloc(std::size_t n) {
  void* p = std::malloc(n + kHeader);
  if (!p) return nullptr;
  *static_cast<std::size_t*>(p) = n;
  const std::int64_t live = g_live += static_cast<std::int64_t>(n);
  std::int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return static_cast<char*>(p) + kHeader;
}
void counted_free(void* p) noexcept {
  if (!p) return;
  void* base = static_cast<char*>(p) - kHeader;
  g_live -= static_cast<std::int64_t>(*static_cast<std::size_t*>(base));
  std::free(base);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace qforge::model {
namespace {

using namespace qtest;

TEST(Calibrate, ObservesEachStaticMatmulInputOnce) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(20);
  const Graph graph = gemm_mlp(g, {});
  const auto data = batches(g, graph, 3);
  Prepared p = prepare(graph, matmul_recipe(), data);
  ASSERT_EQ(p.calibration.tensors.size(), 2u);
  const TensorCalibration& x = p.calibration.at("x");
  EXPECT_EQ(x.consumers, std::vector<std::string>{"fc1"});
  EXPECT_EQ(x.stats.batches, 3);
  EXPECT_EQ(x.stats.values, 3 * 8 * 32);
  EXPECT_EQ(p.calibration.at("r").consumers, std::vector<std::string>{"fc2"});
  // The params are the observer's on the same data with the rule's method.
  calibration::HistogramObserver obs(ActivationQuantization{}.calibration);
  for (const TensorMap& b : data) obs.observe(b.at("x").values<float>(), b.at("x").shape());
  EXPECT_EQ(x.params, obs.params({DType::int8, Mapping::affine}));
  EXPECT_THROW(p.calibration.at("nope"), Error);
}

TEST(Calibrate, MethodComesFromTheRule) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(21);
  const Graph graph = gemm_mlp(g, {});
  const auto data = batches(g, graph, 2);
  LayerQuantization layer;
  layer.activations =
      ActivationQuantization::static_calibrated(DType::uint8, calibration::Method::minmax);
  Prepared p = prepare(graph, matmul_recipe(layer), data);
  float lo = 0, hi = 0;
  for (const TensorMap& b : data)
    for (float v : b.at("x").values<float>()) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(p.calibration.at("x").params,
            reference::params_from_range(DType::uint8, Mapping::affine, lo, hi));
}

TEST(Calibrate, MemoryDoesNotGrowWithTheNumberOfBatches) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(22);
  const Graph graph = matmul_mlp(g, {});
  const Executor float_model(graph);
  const Recipe recipe = matmul_recipe();
  const auto refs = node_refs(float_model.graph());
  const RecipeResolution res = resolve(recipe, refs);
  // Peak heap above the starting point while calibrating from a generator of `count` batches.
  auto peak_for = [&](std::size_t count) {
    std::size_t made = 0;
    auto rng = test::rng(23);
    const BatchSource next = [&]() -> std::optional<TensorMap> {
      if (made == count) return std::nullopt;
      ++made;
      return batches(rng, graph, 1)[0];
    };
    const std::int64_t before = g_live.load();
    g_peak = before;
    const CalibrationResult r = calibrate(float_model, res, next);
    EXPECT_EQ(r.at("x").stats.batches, static_cast<std::int64_t>(count));
    return g_peak.load() - before;
  };
  const std::int64_t few = peak_for(2), many = peak_for(60);
  RecordProperty("peak_bytes_2_batches", std::to_string(few));
  RecordProperty("peak_bytes_60_batches", std::to_string(many));
  const std::int64_t batch_bytes = 8 * 3 * 32 * 4;
  // 58 more batches kept would be ~90 KB; allow a little slack for allocator-size noise.
  EXPECT_LT(many, few + batch_bytes) << "2 batches: " << few << " B, 60 batches: " << many << " B";
}

// GPTQ's Hessians: one K x K per gptq-rounded MatMul input, summed batch by batch.
TEST(Calibrate, GptqMemoryDoesNotGrowWithTheNumberOfBatches) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(25);
  const Graph graph = matmul_mlp(g, {});
  const Executor float_model(graph);
  LayerQuantization layer;
  layer.activations.reset();
  layer.weights = WeightQuantization{.dtype = DType::int4,
                                     .mapping = Mapping::affine,
                                     .granularity = Granularity::block,
                                     .block_size = 16,
                                     .rounding = WeightRounding::gptq};
  const Recipe recipe = matmul_recipe(layer);
  const RecipeResolution res = resolve(recipe, node_refs(float_model.graph()));
  auto peak_for = [&](std::size_t count) {
    std::size_t made = 0;
    auto rng = test::rng(26);
    const BatchSource next = [&]() -> std::optional<TensorMap> {
      if (made == count) return std::nullopt;
      ++made;
      return batches(rng, graph, 1)[0];
    };
    const std::int64_t before = g_live.load();
    g_peak = before;
    const CalibrationResult r = calibrate(float_model, res, next);
    EXPECT_TRUE(r.tensors.empty());  // weight-only: no activation to calibrate
    EXPECT_EQ(r.gptq.size(), 2u);
    EXPECT_EQ(r.gptq_at("x").rows, static_cast<std::int64_t>(count * 8 * 3));
    EXPECT_EQ(r.gptq_at("x").k, 32);
    EXPECT_EQ(r.gptq_at("r").k, 48);
    return g_peak.load() - before;
  };
  const std::int64_t few = peak_for(2), many = peak_for(60);
  const std::int64_t batch_bytes = 8 * 3 * 32 * 4;
  EXPECT_LT(many, few + batch_bytes) << "2 batches: " << few << " B, 60 batches: " << many << " B";
}

TEST(Calibrate, GptqSumsATensorOnceForAllItsConsumers) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(27);
  OnnxBuilder b(17);
  b.input("x", F, {4, 8}).output("y1", F, {4, 2}).output("y2", F, {4, 2});
  b.initializer("W1", {8, 2}, weights(g, 8, 16));
  b.initializer("W2", {8, 2}, weights(g, 8, 16));
  b.node("MatMul", {"x", "W1"}, {"y1"}, "left");
  b.node("MatMul", {"x", "W2"}, {"y2"}, "right");
  const Executor float_model(import_onnx_bytes(b.bytes(), "shared"));
  LayerQuantization layer;
  layer.weights->rounding = WeightRounding::gptq;  // with static activations
  const Recipe recipe = matmul_recipe(layer);
  const RecipeResolution res = resolve(recipe, node_refs(float_model.graph()));
  const auto data = batches(g, float_model.graph(), 3);
  const CalibrationResult r = calibrate(float_model, res, data);
  ASSERT_EQ(r.gptq.size(), 1u);
  EXPECT_EQ(r.gptq_at("x").rows, 12);  // 3 batches of 4 rows, not twice that
  EXPECT_EQ(r.at("x").consumers.size(), 2u);
  try {
    r.gptq_at("y1");
    ADD_FAILURE() << "found a Hessian for y1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPTQ Hessian for tensor 'y1'"), std::string::npos)
        << e.what();
  }
  // The JSON form carries no Hessian.
  EXPECT_TRUE(CalibrationResult::from_json(r.to_json()).gptq.empty());
}

TEST(Calibrate, ConsumersOfOneTensorMustAgree) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(24);
  OnnxBuilder b(17);
  b.input("x", F, {4, 8}).output("y1", F, {4, 2}).output("y2", F, {4, 2});
  b.initializer("W1", {8, 2}, weights(g, 8, 16));
  b.initializer("W2", {8, 2}, weights(g, 8, 16));
  b.node("MatMul", {"x", "W1"}, {"y1"}, "left");
  b.node("MatMul", {"x", "W2"}, {"y2"}, "right");
  const Graph graph = import_onnx_bytes(b.bytes(), "fork");
  const auto data = batches(g, graph, 1);
  Recipe r;
  r.rules.push_back({.match = {.name_regex = "left"}, .quantize = LayerQuantization{}});
  LayerQuantization u8;
  u8.activations = ActivationQuantization::static_calibrated(DType::uint8);
  r.rules.push_back({.match = {.name_regex = "right"}, .quantize = u8});
  try {
    prepare(graph, r, data);
    FAIL() << "disagreeing consumers were accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'left'"), std::string::npos) << what;
    EXPECT_NE(what.find("'right'"), std::string::npos) << what;
  }
  // Agreeing consumers share one observer that sees each batch once.
  Prepared p = prepare(graph, matmul_recipe(), data);
  EXPECT_EQ(p.calibration.at("x").consumers, (std::vector<std::string>{"left", "right"}));
  EXPECT_EQ(p.calibration.at("x").stats.batches, 1);
}

TEST(Calibrate, NeedsABatch) {
  auto g = test::rng(25);
  const Graph graph = gemm_mlp(g, {});
  EXPECT_THROW(prepare(graph, matmul_recipe(), {}), Error);
  // Nothing static to calibrate: no batch needed.
  EXPECT_TRUE(prepare(graph, matmul_recipe(dynamic_layer()), {}).calibration.tensors.empty());
}

TEST(Calibrate, JsonRoundTrip) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(26);
  const Graph graph = gemm_mlp(g, {});
  LayerQuantization sym;
  sym.activations->mapping = Mapping::symmetric;
  sym.activations->calibration.method = calibration::Method::percentile;
  Recipe r = matmul_recipe(sym);
  Prepared p = prepare(graph, r, batches(g, graph, 2));
  const std::string text = p.calibration.to_json();
  const CalibrationResult back = CalibrationResult::from_json(text);
  ASSERT_EQ(back.tensors.size(), p.calibration.tensors.size());
  for (const auto& [name, t] : p.calibration.tensors) {
    EXPECT_EQ(back.at(name).params, t.params) << name;
    EXPECT_EQ(back.at(name).settings, t.settings) << name;
    EXPECT_EQ(back.at(name).consumers, t.consumers) << name;
  }
  EXPECT_EQ(back.to_json(), text);
  // A model built from the reloaded calibration runs the same.
  auto acc = accelerator("cpu_scalar");
  QuantizedModel a(*p.float_model, r, p.resolution, p.calibration, *acc);
  QuantizedModel b(*p.float_model, r, p.resolution, back, *acc);
  const TensorMap batch = batches(g, graph, 1)[0];
  const TensorMap out_a = a.run(batch), out_b = b.run(batch);
  const auto ya = out_a.at("y").values<float>(), yb = out_b.at("y").values<float>();
  EXPECT_TRUE(std::equal(ya.begin(), ya.end(), yb.begin()));

  EXPECT_THROW(CalibrationResult::from_json("{"), Error);
  EXPECT_THROW(CalibrationResult::from_json(R"({"tensors": {"x": {"dtype": "int3"}}})"), Error);
}

}  // namespace
}  // namespace qforge::model
