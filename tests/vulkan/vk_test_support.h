// Shared pieces of the vulkan plugin tests: the plugin (loaded through the registry), the run's
// seed, device arrays and the fixture that skips without a Vulkan device.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "qforge/ops.h"
#include "qforge/registry.h"

namespace qforge::vktest {

using Rng = std::mt19937_64;

// QFORGE_TEST_SEED when set, else from std::random_device; fixed for the run.
std::uint64_t run_seed();
// A generator for the running test, derived from the seed and the test's name.
Rng rng_for_current_test();

// The registry holding the plugins of the build's bin dir (and QFORGE_PLUGIN_PATH).
PluginRegistry& registry();
// The vulkan plugin, or nullptr when it did not load.
QuantizationOps* vulkan_plugin();
// Why the vulkan plugin cannot run here (empty when it can).
std::string unavailable_reason();

// Plugin memory holding a copy of host data; `pad` bytes in front so that the data starts at
// an offset inside the buffer (as device pointers may).
class DeviceArray {
 public:
  DeviceArray(QuantizationOps& ops, std::size_t bytes, std::size_t pad = 0);
  template <class T>
  DeviceArray(QuantizationOps& ops, const std::vector<T>& host, std::size_t pad = 0)
      : DeviceArray(ops, host.size() * sizeof(T), pad) {
    write(host.data(), host.size() * sizeof(T));
  }
  void* ptr() noexcept;
  void write(const void* src, std::size_t bytes);
  void fill(std::uint8_t byte);
  template <class T>
  std::vector<T> read() const {
    std::vector<T> out(bytes_ / sizeof(T));
    read_into(out.data(), out.size() * sizeof(T));
    return out;
  }
  // The whole buffer, pad included.
  std::vector<std::uint8_t> raw() const;
  std::size_t pad() const noexcept { return pad_; }

 private:
  void read_into(void* dst, std::size_t bytes) const;
  QuantizationOps& ops_;
  std::size_t bytes_, pad_;
  std::shared_ptr<Buffer> buffer_;
};

// A property of the selected device ("" when absent).
std::string device_property(QuantizationOps& ops, const std::string& key);

// Skips (with the reason) when the vulkan plugin cannot run; traces the seed.
class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  QuantizationOps& ops() { return *ops_; }
  Rng& rng() { return rng_; }

 private:
  QuantizationOps* ops_ = nullptr;
  Rng rng_;
  std::unique_ptr<::testing::ScopedTrace> trace_;
};

}  // namespace qforge::vktest
