// The C++ SDK's side of the boundary (c_sdk.h), called through the C table as a host written in
// C would: descriptors it cannot read are refused with a status naming what was wrong, and an
// exception of the backend becomes a status with the qforge::Error's code and message.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "qforge/plugin/c_api.h"

namespace {

class CSdkTable : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = ::dlopen(QFORGE_C_SDK_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    auto entry =
        reinterpret_cast<qforge_plugin_c_entry_fn>(::dlsym(handle_, QFORGE_C_ENTRY_SYMBOL));
    ASSERT_NE(entry, nullptr) << QFORGE_C_SDK_PLUGIN << " exports no " << QFORGE_C_ENTRY_SYMBOL;
    EXPECT_EQ(entry(0), nullptr) << "no host has version 0";
    t_ = entry(QFORGE_C_API_VERSION);
    ASSERT_NE(t_, nullptr);
    EXPECT_EQ(t_->version, QFORGE_C_API_VERSION);
    EXPECT_EQ(t_->struct_size, sizeof(qforge_c_plugin));
    EXPECT_STREQ(t_->name, "cpu_scalar");
    ASSERT_EQ(t_->create_backend(&backend_), nullptr);
    ASSERT_NE(backend_, nullptr);
  }
  void TearDown() override {
    if (backend_ != nullptr) t_->destroy_backend(backend_);
    // The library stays loaded: the SDK's static objects live in it.
  }

  // supports() on `op`: the status's code and message, or {0, ""} when it accepted.
  std::pair<std::uint32_t, std::string> supports(const qforge_c_op& op) {
    qforge_c_status* s = t_->supports(
        backend_, &op, [](void*, const char*) {}, nullptr);
    if (s == nullptr) return {0, ""};
    std::pair<std::uint32_t, std::string> out{t_->status_code(s), t_->status_message(s)};
    t_->status_release(s);
    return out;
  }

  void* handle_ = nullptr;
  const qforge_c_plugin* t_ = nullptr;
  qforge_c_backend* backend_ = nullptr;
  const std::int64_t shape_[2] = {2, 3};
  const float scale_ = 0.5f;
  const std::int32_t zero_point_ = 3;

  qforge_c_params params() const {
    qforge_c_params p{};
    p.version = QFORGE_C_API_VERSION;
    p.struct_size = sizeof p;
    p.dtype = QFORGE_C_DTYPE_UINT8;
    p.mapping = QFORGE_C_MAPPING_AFFINE;
    p.granularity = QFORGE_C_GRANULARITY_PER_TENSOR;
    p.scales = &scale_;
    p.zero_points = &zero_point_;
    p.count = 1;
    return p;
  }
  qforge_c_quantize_desc quantize(const qforge_c_params* p) const {
    qforge_c_quantize_desc d{};
    d.version = QFORGE_C_API_VERSION;
    d.struct_size = sizeof d;
    d.shape = shape_;
    d.rank = 2;
    d.params = p;
    d.float_type = QFORGE_C_FLOAT_F32;
    return d;
  }
  static qforge_c_op op(std::uint32_t kind, const void* desc) {
    return {QFORGE_C_API_VERSION, sizeof(qforge_c_op), kind, desc};
  }
};

TEST_F(CSdkTable, AcceptsAWellFormedOp) {
  const qforge_c_params p = params();
  const qforge_c_quantize_desc d = quantize(&p);
  EXPECT_EQ(supports(op(QFORGE_C_OP_QUANTIZE, &d)).first, 0u);
}

TEST_F(CSdkTable, UnknownOpKindIsUnsupported) {
  const qforge_c_params p = params();
  const qforge_c_quantize_desc d = quantize(&p);
  const auto [code, message] = supports(op(99, &d));
  EXPECT_EQ(code, QFORGE_C_ERROR_UNSUPPORTED);
  EXPECT_NE(message.find("op kind 99 is newer than this plugin"), std::string::npos) << message;
}

TEST_F(CSdkTable, UnknownEnumValueIsUnsupported) {
  qforge_c_params p = params();
  p.dtype = 42;
  const qforge_c_quantize_desc d = quantize(&p);
  const auto [code, message] = supports(op(QFORGE_C_OP_QUANTIZE, &d));
  EXPECT_EQ(code, QFORGE_C_ERROR_UNSUPPORTED);
  EXPECT_NE(message.find("dtype 42"), std::string::npos) << message;
}

TEST_F(CSdkTable, ShortStructIsInvalid) {
  const qforge_c_params p = params();
  qforge_c_quantize_desc d = quantize(&p);
  d.struct_size = 8;
  const auto [code, message] = supports(op(QFORGE_C_OP_QUANTIZE, &d));
  EXPECT_EQ(code, QFORGE_C_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("quantize descriptor has 8 bytes"), std::string::npos) << message;
}

TEST_F(CSdkTable, BackendErrorKeepsCodeAndMessage) {
  qforge_c_params p = params();
  const float negative = -1.0f;
  p.scales = &negative;
  const qforge_c_quantize_desc d = quantize(&p);
  const qforge_c_op o = op(QFORGE_C_OP_QUANTIZE, &d);
  qforge_c_plan_request r{};
  r.version = QFORGE_C_API_VERSION;
  r.struct_size = sizeof r;
  qforge_c_plan* plan = nullptr;
  qforge_c_status* s = t_->make_plan(backend_, &o, &r, &plan);
  ASSERT_NE(s, nullptr) << "a plan with scale -1 was made";
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(t_->status_code(s), QFORGE_C_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(t_->status_message(s)).find("-1"), std::string::npos)
      << t_->status_message(s);
  t_->status_release(s);
}

TEST_F(CSdkTable, PlanRunsThroughTheTable) {
  const qforge_c_params p = params();
  const qforge_c_quantize_desc d = quantize(&p);
  const qforge_c_op o = op(QFORGE_C_OP_QUANTIZE, &d);
  qforge_c_plan_request r{};
  r.version = QFORGE_C_API_VERSION;
  r.struct_size = sizeof r;
  qforge_c_plan* plan = nullptr;
  ASSERT_EQ(t_->make_plan(backend_, &o, &r, &plan), nullptr);
  qforge_c_plan_info info{};
  info.version = QFORGE_C_API_VERSION;
  info.struct_size = sizeof info;
  t_->plan_info(plan, &info);
  EXPECT_STREQ(info.kernel, "scalar_reference");
  EXPECT_EQ(info.concurrency, QFORGE_C_PLAN_CONCURRENT);
  const float x[6] = {0.0f, 0.25f, 0.75f, -1.0f, 200.0f, 1.0f};
  std::uint8_t q[6] = {};
  const void* in[] = {x};
  void* out[] = {q};
  ASSERT_EQ(t_->plan_run(plan, in, 1, out, 1), nullptr);
  // rne(x / 0.5) + 3, clamped to [0, 255]: 0.25 / 0.5 = 0.5 and 0.75 / 0.5 = 1.5 round to even.
  const std::uint8_t want[6] = {3, 3, 5, 1, 255, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(q[i], want[i]) << "element " << i;
  t_->plan_destroy(plan);
}

}  // namespace
