#include "harness/guarded_buffer.h"

#include <cstring>
#include <sstream>

#include "qforge/error.h"

namespace qforge::conformance {
namespace {

// Position-dependent, so a block copied one byte off does not look intact; the two guards differ
// so one cannot stand in for the other.
std::byte guard_byte(bool after, std::size_t i) {
  return static_cast<std::byte>((after ? 0x5Bu : 0xA7u) ^ static_cast<unsigned>(i * 29u));
}

}  // namespace

GuardedBuffer::GuardedBuffer(QuantizationOps& ops, std::size_t payload_bytes, std::string what,
                             bool host_resident)
    : ops_(ops),
      host_(host_resident || ops.host_memory()),
      payload_bytes_(payload_bytes),
      what_(std::move(what)) {
  const std::size_t total = payload_bytes + 2 * kGuardBytes;
  buffer_ = host_ ? make_host_buffer(total) : ops.allocate(total);
  if (!buffer_ || buffer_->size() < total)
    throw Error(
        ErrorCode::internal,
        ops.name() + ": allocate(" + std::to_string(total) + ") returned " +
            (buffer_ ? std::to_string(buffer_->size()) + " bytes" : std::string("no buffer")) +
            " for " + what_);
}

void* GuardedBuffer::payload() noexcept {
  return static_cast<std::byte*>(buffer_->data()) + kGuardBytes;
}

void GuardedBuffer::write_image(const std::vector<std::byte>& image) {
  if (host_) std::memcpy(buffer_->data(), image.data(), image.size());
  else ops_.copy_to_device(*buffer_, 0, image.data(), image.size());
}

std::vector<std::byte> GuardedBuffer::read_image() const {
  std::vector<std::byte> image(payload_bytes_ + 2 * kGuardBytes);
  if (host_) {
    std::memcpy(image.data(), buffer_->data(), image.size());
  } else {
    ops_.synchronize();
    ops_.copy_to_host(image.data(), *buffer_, 0, image.size());
  }
  return image;
}

void GuardedBuffer::write(std::span<const std::byte> payload) {
  if (payload.size() != payload_bytes_)
    throw Error(ErrorCode::internal, what_ + ": writing " + std::to_string(payload.size()) +
                                         " bytes into a payload of " +
                                         std::to_string(payload_bytes_));
  std::vector<std::byte> image(payload_bytes_ + 2 * kGuardBytes);
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    image[i] = guard_byte(false, i);
    image[kGuardBytes + payload_bytes_ + i] = guard_byte(true, i);
  }
  if (!payload.empty()) std::memcpy(image.data() + kGuardBytes, payload.data(), payload.size());
  write_image(image);
}

void GuardedBuffer::poison(std::span<const std::byte> element) {
  std::vector<std::byte> payload(payload_bytes_);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = element[i % element.size()];
  write(payload);
}

std::vector<std::byte> GuardedBuffer::read() const {
  auto image = read_image();
  return {image.begin() + kGuardBytes, image.begin() + kGuardBytes + payload_bytes_};
}

::testing::AssertionResult GuardedBuffer::guards_intact() const {
  const auto image = read_image();
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    const bool before_ok = image[i] == guard_byte(false, i);
    const bool after_ok = image[kGuardBytes + payload_bytes_ + i] == guard_byte(true, i);
    if (!before_ok || !after_ok) {
      std::ostringstream msg;
      msg << what_ << ": canary " << (before_ok ? "after" : "before") << " the " << payload_bytes_
          << "-byte buffer was overwritten at byte "
          << (before_ok ? "+" + std::to_string(i) + " past the end"
                        : std::to_string(static_cast<long>(i) - static_cast<long>(kGuardBytes)))
          << " (the op wrote outside its output)";
      return ::testing::AssertionFailure() << msg.str();
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace qforge::conformance
