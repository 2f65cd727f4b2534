// Shared pieces of the CUDA backend tests: the plugin (loaded once through the registry, as
// users load it), the run's seed, and device arrays with canaries.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "qforge/ops.h"
#include "qforge/registry.h"

namespace qforge::cuda_test {

// The cuda plugin, or nullptr when it did not load (registry_report() says why).
QuantizationOps* plugin();
std::string registry_report();
// The file the cuda plugin was loaded from (empty when it did not load).
std::string plugin_path();
// The registry that loaded it (every default plugin), for an Accelerator.
const PluginRegistry& plugin_registry();

// QFORGE_TEST_SEED when set, otherwise drawn from std::random_device once per run.
std::uint64_t run_seed();
std::string seed_text();

// Runs `op` through a plan of `kernel` on the plugin's default device, with operands in device
// memory (and weights fixed as `weights` gives them, in host memory, when not empty); returns the
// kernel the plan names.
std::string run_plan(QuantizationOps& ops, const OpDesc& op, const std::string& kernel,
                     const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                     const std::vector<const void*>& weights = {});

// Every test derives its generator from the run seed and its own name and carries the seed in a
// scoped trace, so a failure prints how to replay it.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override;
  QuantizationOps& ops() { return *ops_; }
  std::mt19937_64 rng_;

 private:
  QuantizationOps* ops_ = nullptr;
  ::testing::ScopedTrace trace_{__FILE__, __LINE__, "replay with " + seed_text()};
};

// Device memory from the plugin with 64-byte canaries on both sides; data() points inside the
// allocation, as the conformance suite's pointers do.
class DeviceArray {
 public:
  static constexpr std::size_t kGuard = 64;
  DeviceArray(QuantizationOps& ops, std::size_t bytes);
  void* data() { return static_cast<std::byte*>(buffer_->data()) + kGuard; }
  std::size_t size() const { return bytes_; }
  void write(const void* src, std::size_t bytes);
  template <class T>
  void write(const std::vector<T>& v) {
    write(v.data(), v.size() * sizeof(T));
  }
  void poison(std::uint8_t byte);
  std::vector<std::byte> read() const;
  template <class T>
  std::vector<T> read_as() const {
    const auto raw = read();
    std::vector<T> out(raw.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), raw.data(), out.size() * sizeof(T));
    return out;
  }
  ::testing::AssertionResult guards_intact() const;

 private:
  QuantizationOps& ops_;
  std::size_t bytes_;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace qforge::cuda_test
