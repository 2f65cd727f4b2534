#include "vk_test_support.h"

#include <charconv>
#include <cstdlib>
#include <filesystem>

namespace qforge::vktest {
namespace {

std::uint64_t draw_seed() {
  if (const char* env = std::getenv("QFORGE_TEST_SEED"); env != nullptr && *env != '\0') {
    std::string_view text(env);
    int base = 10;
    if (text.starts_with("0x") || text.starts_with("0X")) {
      text.remove_prefix(2);
      base = 16;
    }
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
    if (ec == std::errc() && p == text.data() + text.size()) return v;
    std::fprintf(stderr, "QFORGE_TEST_SEED='%s' is not a 64-bit integer; drawing a fresh seed\n",
                 env);
  }
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

std::uint64_t run_seed() {
  static const std::uint64_t seed = draw_seed();
  return seed;
}

Rng rng_for_current_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::uint64_t h = 0xcbf29ce484222325ULL;
  if (info)
    for (const char* s : {info->test_suite_name(), ".", info->name()})
      for (const char* c = s; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
  return Rng(run_seed() ^ h);
}

PluginRegistry& registry() {
  static PluginRegistry* r = [] {
    auto* reg = new PluginRegistry();  // never destroyed: buffers may outlive static order
    std::vector<std::filesystem::path> dirs;
    if (const char* env = std::getenv("QFORGE_PLUGIN_PATH"); env && *env) {
      std::string_view all(env);
      while (!all.empty()) {
        const auto colon = all.find(':');
        const std::string part(all.substr(0, colon));
        if (!part.empty() && std::filesystem::exists(part)) dirs.emplace_back(part);
        all = colon == std::string_view::npos ? std::string_view{} : all.substr(colon + 1);
      }
    }
    dirs.emplace_back(QFORGE_PLUGIN_DIR);
    reg->load_from(dirs);
    return reg;
  }();
  return *r;
}

QuantizationOps* vulkan_plugin() { return registry().find("vulkan"); }

std::string unavailable_reason() {
  QuantizationOps* ops = vulkan_plugin();
  if (ops == nullptr) {
    std::string why = "the vulkan plugin did not load";
    for (const auto& f : registry().failures())
      if (f.path.filename().string().find("vulkan") != std::string::npos) why += ": " + f.message;
    return why;
  }
  const Availability a = ops->availability();
  return a.usable ? std::string() : a.reason;
}

DeviceArray::DeviceArray(QuantizationOps& ops, std::size_t bytes, std::size_t pad)
    : ops_(ops), bytes_(bytes), pad_(pad), buffer_(ops.allocate(bytes + pad)) {}

void* DeviceArray::ptr() noexcept { return static_cast<std::byte*>(buffer_->data()) + pad_; }

void DeviceArray::write(const void* src, std::size_t bytes) {
  ops_.copy_to_device(*buffer_, pad_, src, bytes);
}

void DeviceArray::fill(std::uint8_t byte) {
  std::vector<std::uint8_t> v(bytes_ + pad_, byte);
  ops_.copy_to_device(*buffer_, 0, v.data(), v.size());
}

void DeviceArray::read_into(void* dst, std::size_t bytes) const {
  ops_.copy_to_host(dst, *buffer_, pad_, bytes);
}

std::vector<std::uint8_t> DeviceArray::raw() const {
  std::vector<std::uint8_t> v(bytes_ + pad_);
  ops_.copy_to_host(v.data(), *buffer_, 0, v.size());
  return v;
}

std::string device_property(QuantizationOps& ops, const std::string& key) {
  const auto devs = ops.devices();
  const int i = ops.default_device();
  if (i < 0 || i >= static_cast<int>(devs.size())) return {};
  const auto it = devs[static_cast<std::size_t>(i)].properties.find(key);
  return it == devs[static_cast<std::size_t>(i)].properties.end() ? std::string() : it->second;
}

void VulkanTest::SetUp() {
  const std::string why = unavailable_reason();
  if (!why.empty()) GTEST_SKIP() << "no usable Vulkan device: " << why;
  ops_ = vulkan_plugin();
  rng_ = rng_for_current_test();
  trace_ = std::make_unique<::testing::ScopedTrace>(
      __FILE__, __LINE__, "QFORGE_TEST_SEED=" + std::to_string(run_seed()));
}

void VulkanTest::TearDown() {
  if (ops_) {
    ops_->set_option("max_storage_buffer_range", "0");
    ops_->set_option("max_workgroup_count", "0");
  }
  trace_.reset();
}

}  // namespace qforge::vktest
