// Memory for one op argument, on whatever device the plugin computes on, with canaries.
//
// A plugin with host_memory() gets host memory (make_host_buffer); any other plugin's memory
// comes from ops.allocate() and moves with copy_to_device / copy_to_host. Either way the
// payload sits between two 64-byte guards of a known, position-dependent pattern, so a kernel
// that writes before or after its output (or shifts it) is caught. The pointer handed to the op
// is the allocation's data() plus 64 bytes: a device backend must accept pointers inside one of
// its allocations, as CUDA does (docs/TESTING.md).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qforge/ops.h"

namespace qforge::conformance {

class GuardedBuffer {
 public:
  static constexpr std::size_t kGuardBytes = 64;

  // `what` names the argument in messages ("output c"). `host_resident`: an operand the op table
  // keeps in host memory on every device (OperandSpec::host_resident), host memory here too.
  GuardedBuffer(QuantizationOps& ops, std::size_t payload_bytes, std::string what,
                bool host_resident = false);

  // The pointer to pass to the op: device memory when the plugin is not host_memory().
  void* payload() noexcept;
  std::size_t size() const noexcept { return payload_bytes_; }

  // Writes the guards and `payload` (exactly size() bytes).
  void write(std::span<const std::byte> payload);
  // Writes the guards and fills the payload by repeating `element` (a poison value).
  void poison(std::span<const std::byte> element);
  // Reads the payload back to the host.
  std::vector<std::byte> read() const;

  // Both guards still hold their pattern; on failure names the first changed byte.
  ::testing::AssertionResult guards_intact() const;

 private:
  std::vector<std::byte> read_image() const;
  void write_image(const std::vector<std::byte>& image);

  QuantizationOps& ops_;
  bool host_;
  std::size_t payload_bytes_;
  std::string what_;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace qforge::conformance
