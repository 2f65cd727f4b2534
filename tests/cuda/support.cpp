#include "support.h"

#include <charconv>
#include <cstdlib>

#include "qforge/error.h"
#include "qforge/registry.h"

namespace qforge::cuda_test {
namespace {

PluginRegistry& registry() {
  // Never destroyed: ops objects and buffers may outlive static destruction order.
  static PluginRegistry* r = [] {
    auto* reg = new PluginRegistry();
    reg->load_default();
    return reg;
  }();
  return *r;
}

std::uint64_t draw_seed() {
  if (const char* env = std::getenv("QFORGE_TEST_SEED"); env != nullptr && *env != '\0') {
    std::uint64_t v = 0;
    const std::string_view text(env);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size())
      throw Error(ErrorCode::invalid_argument, "QFORGE_TEST_SEED = '" + std::string(text) +
                                                   "'; expected a decimal 64-bit integer");
    return v;
  }
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::uint8_t guard_byte(std::size_t i) { return static_cast<std::uint8_t>(0xA5 ^ (i * 29)); }

}  // namespace

QuantizationOps* plugin() { return registry().find("cuda"); }

const PluginRegistry& plugin_registry() { return registry(); }

std::string plugin_path() {
  for (const auto& p : registry().plugins())
    if (p.name == "cuda") return p.path.string();
  return {};
}

std::string registry_report() {
  std::string out = "plugins loaded:";
  for (const auto& p : registry().plugins()) out += " " + p.name + " (" + p.path.string() + ")";
  out += "\nfailures:";
  for (const auto& f : registry().failures())
    out += "\n  " + f.path.string() + ": " + std::string(to_string(f.kind)) + ": " + f.message;
  return out;
}

std::uint64_t run_seed() {
  static const std::uint64_t seed = draw_seed();
  return seed;
}

std::string seed_text() { return "QFORGE_TEST_SEED=" + std::to_string(run_seed()); }

std::string run_plan(QuantizationOps& ops, const OpDesc& op, const std::string& kernel,
                     const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                     const std::vector<const void*>& weights) {
  const auto plan = ops.plan(op, PlanRequest{ops.default_device(), kernel, weights});
  std::vector<const void*> in = inputs;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!plan->reads_input(i)) in[i] = nullptr;
  plan->run(in, outputs);
  return plan->kernel();
}

void CudaTest::SetUp() {
  ops_ = plugin();
  ASSERT_NE(ops_, nullptr) << "the cuda plugin did not load\n" << registry_report();
  const Availability a = ops_->availability();
  if (!a.usable) GTEST_SKIP() << "cuda cannot run here: " << a.reason;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::seed_seq seq{run_seed(), static_cast<std::uint64_t>(std::hash<std::string>{}(
                                    std::string(info->test_suite_name()) + "." + info->name()))};
  rng_.seed(seq);
}

DeviceArray::DeviceArray(QuantizationOps& ops, std::size_t bytes)
    : ops_(ops), bytes_(bytes), buffer_(ops.allocate(bytes + 2 * kGuard)) {
  poison(0xCD);
}

void DeviceArray::write(const void* src, std::size_t bytes) {
  std::vector<std::byte> image(bytes_ + 2 * kGuard);
  for (std::size_t i = 0; i < kGuard; ++i) {
    image[i] = std::byte{guard_byte(i)};
    image[kGuard + bytes_ + i] = std::byte{guard_byte(kGuard + i)};
  }
  if (bytes) std::memcpy(image.data() + kGuard, src, bytes);
  ops_.copy_to_device(*buffer_, 0, image.data(), image.size());
}

void DeviceArray::poison(std::uint8_t byte) {
  std::vector<std::uint8_t> fill(bytes_, byte);
  write(fill.data(), bytes_);
}

std::vector<std::byte> DeviceArray::read() const {
  std::vector<std::byte> out(bytes_);
  if (bytes_) ops_.copy_to_host(out.data(), *buffer_, kGuard, bytes_);
  return out;
}

::testing::AssertionResult DeviceArray::guards_intact() const {
  std::vector<std::uint8_t> image(bytes_ + 2 * kGuard);
  ops_.copy_to_host(image.data(), *buffer_, 0, image.size());
  for (std::size_t i = 0; i < kGuard; ++i) {
    if (image[i] != guard_byte(i))
      return ::testing::AssertionFailure() << "guard before the array changed at byte " << i;
    if (image[kGuard + bytes_ + i] != guard_byte(kGuard + i))
      return ::testing::AssertionFailure() << "guard after the array changed at byte " << i;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace qforge::cuda_test
