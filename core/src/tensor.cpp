#include "qforge/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "qforge/checked_size.h"
#include "qforge/error.h"

namespace qforge {
namespace {

// Host memory, 64-byte aligned so SIMD kernels may use aligned loads on fresh buffers.
class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(std::size_t bytes) : size_(bytes) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded == 0 ? 64 : rounded);
  }
  ~HostBuffer() override { std::free(data_); }
  void* data() noexcept override { return data_; }
  std::size_t size() const noexcept override { return size_; }
  DeviceRef device() const override { return {}; }
  bool host_accessible() const noexcept override { return true; }

 private:
  void* data_ = nullptr;
  std::size_t size_;
};

}  // namespace

Buffer::~Buffer() = default;

std::shared_ptr<Buffer> make_host_buffer(std::size_t bytes) {
  // The limit keeps the rounding up to 64 bytes exact (checked_size.h).
  if (bytes > static_cast<std::size_t>(kMaxSize))
    throw Error(ErrorCode::invalid_argument,
                "make_host_buffer: " + std::to_string(bytes) + " bytes; expected at most 2^48 = " +
                    std::to_string(kMaxSize) + " (qforge's size limit, docs/ARCHITECTURE.md)");
  return std::make_shared<HostBuffer>(bytes);
}

QuantizedTensor::QuantizedTensor(Shape shape, QuantizationParams params)
    : QuantizedTensor(shape, params,
                      make_host_buffer(checked_storage_bytes(
                          "QuantizedTensor: shape", params.dtype(), element_count(shape)))) {}

QuantizedTensor::QuantizedTensor(Shape shape, QuantizationParams params,
                                 std::shared_ptr<Buffer> storage)
    : shape_(std::move(shape)),
      params_(std::move(params)),
      numel_(element_count(shape_)),
      storage_(std::move(storage)) {
  params_.validate_for(shape_);
  if (!storage_) throw Error(ErrorCode::invalid_argument, "QuantizedTensor: null storage buffer");
  if (storage_->size() < storage_bytes())
    throw Error(ErrorCode::invalid_argument,
                "QuantizedTensor: storage of " + std::to_string(storage_->size()) + " bytes for " +
                    std::to_string(numel_) + " " + std::string(name(dtype())) +
                    " elements; expected at least " + std::to_string(storage_bytes()));
}

std::span<std::byte> QuantizedTensor::bytes() {
  if (!storage_->host_accessible())
    throw Error(ErrorCode::invalid_argument,
                "QuantizedTensor: storage lives on " + storage_->device().backend + " device " +
                    std::to_string(storage_->device().index) + "; copy it to the host first");
  return {static_cast<std::byte*>(storage_->data()), storage_bytes()};
}

std::span<const std::byte> QuantizedTensor::bytes() const {
  return const_cast<QuantizedTensor*>(this)->bytes();
}

std::int32_t QuantizedTensor::at(std::int64_t i) const {
  if (i < 0 || i >= numel_)
    throw Error(ErrorCode::invalid_argument, "QuantizedTensor::at(" + std::to_string(i) +
                                                 "); expected an index in [0, " +
                                                 std::to_string(numel_) + ")");
  return load_element(dtype(), bytes().data(), static_cast<std::size_t>(i));
}

void QuantizedTensor::set(std::int64_t i, std::int32_t v) {
  if (i < 0 || i >= numel_)
    throw Error(ErrorCode::invalid_argument, "QuantizedTensor::set(" + std::to_string(i) +
                                                 "); expected an index in [0, " +
                                                 std::to_string(numel_) + ")");
  const auto& tr = traits(dtype());
  if (v < tr.qmin || v > tr.qmax || (dtype() == DType::binary && v == 0))
    throw Error(ErrorCode::invalid_argument,
                "QuantizedTensor::set: value " + std::to_string(v) + " for " +
                    std::string(tr.name) + "; expected a value in [" + std::to_string(tr.qmin) +
                    ", " + std::to_string(tr.qmax) + "]" +
                    (dtype() == DType::binary ? " other than 0" : ""));
  store_element(dtype(), bytes().data(), static_cast<std::size_t>(i), v);
}

}  // namespace qforge
