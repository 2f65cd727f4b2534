#include "qforge/ops.h"

#include <cstring>

#include "qforge/checked_size.h"
#include "qforge/error.h"

namespace qforge {
namespace {

void check_range(const Buffer& buffer, std::size_t offset, std::size_t bytes, const char* what) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " of a " + std::to_string(buffer.size()) +
                    "-byte buffer; expected the range to lie inside the buffer");
}

// The default packed form: a plain copy of B in host memory.
class CopiedWeights final : public PackedWeights {
 public:
  CopiedWeights(MatmulDesc desc, std::string backend, std::shared_ptr<Buffer> data)
      : desc_(std::move(desc)), backend_(std::move(backend)), data_(std::move(data)) {}
  const MatmulDesc& desc() const noexcept override { return desc_; }
  std::string backend() const override { return backend_; }
  std::size_t bytes() const noexcept override { return data_->size(); }
  const void* data() const noexcept { return data_->data(); }

 private:
  MatmulDesc desc_;
  std::string backend_;
  std::shared_ptr<Buffer> data_;
};

// The packed weights must come from this backend's default packing and fit the call.
const CopiedWeights& copied(const QuantizationOps& ops, const MatmulDesc& desc,
                            const PackedWeights& b) {
  const auto* w = dynamic_cast<const CopiedWeights*>(&b);
  if (!w || b.backend() != ops.name())
    throw Error(ErrorCode::invalid_argument, "packed weights made by " + b.backend() +
                                                 " passed to " + ops.name() +
                                                 "; expected weights packed by the same backend");
  const MatmulDesc& p = w->desc();
  if (p.n != desc.n || p.k != desc.k || p.b_layout != desc.b_layout || !(p.b == desc.b))
    throw Error(ErrorCode::shape_mismatch,
                "packed weights for n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                    " used with n=" + std::to_string(desc.n) + " k=" + std::to_string(desc.k) +
                    "; expected the same B shape, layout and params it was packed for");
  return *w;
}

}  // namespace

PackedWeights::~PackedWeights() = default;
QuantizationOps::~QuantizationOps() = default;

bool QuantizationOps::set_option(std::string_view, std::string_view) { return false; }

std::shared_ptr<PackedWeights> QuantizationOps::pack_weights(const MatmulDesc& desc,
                                                             const void* b) {
  if (!host_memory())
    throw Error(ErrorCode::unsupported,
                name() +
                    ": pack_weights has no default for device memory; the backend must "
                    "implement it");
  const std::string operand = name() + ": pack_weights: B";
  const std::size_t bytes = checked_storage_bytes(operand, desc.b.dtype(),
                                                  checked_element_count(operand, desc.b_shape()));
  if (bytes && !b)
    throw Error(ErrorCode::invalid_argument, operand + " is null for " + std::to_string(bytes) +
                                                 " bytes; expected a valid host pointer");
  auto buffer = make_host_buffer(bytes);
  if (bytes) std::memcpy(buffer->data(), b, bytes);
  return std::make_shared<CopiedWeights>(desc, name(), std::move(buffer));
}

void QuantizationOps::matmul_integer_packed(const MatmulDesc& desc, const void* a,
                                            const PackedWeights& b, std::int32_t* c) {
  matmul_integer(desc, a, copied(*this, desc, b).data(), c);
}

void QuantizationOps::matmul_dequant_packed(const MatmulDesc& desc, const void* a,
                                            const PackedWeights& b, const float* bias, void* y) {
  matmul_dequant(desc, a, copied(*this, desc, b).data(), bias, y);
}

void QuantizationOps::qlinear_matmul_packed(const MatmulDesc& desc, const void* a,
                                            const PackedWeights& b, void* y) {
  qlinear_matmul(desc, a, copied(*this, desc, b).data(), y);
}

void QuantizationOps::qlinear_matmul_bias(const MatmulDesc&, const void*, const void*,
                                          const std::int32_t*, void*) {
  throw Error(ErrorCode::unsupported, name() +
                                          ": qlinear_matmul with an int32 bias is not implemented "
                                          "by this backend; expected a backend whose supports() "
                                          "claims it");
}

void QuantizationOps::conv(OpKind op, const ConvDesc&, const void*, const void*, const void*,
                           void*) {
  throw Error(ErrorCode::unsupported, name() + ": " + std::string(to_string(op)) +
                                          " is not implemented by this backend; expected a "
                                          "backend whose supports() claims it");
}

void QuantizationOps::matmul_weight_only(const MatmulDesc&, const float*, const void*, const float*,
                                         float*) {
  throw Error(ErrorCode::unsupported, name() +
                                          ": matmul_weight_only is not implemented by this "
                                          "backend; expected a backend whose supports() claims it");
}

// Defaults for backends whose device is the host: buffers are host memory, copies are memcpy.
std::shared_ptr<Buffer> QuantizationOps::allocate(std::size_t bytes) {
  return make_host_buffer(bytes);
}

void QuantizationOps::copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                                     std::size_t bytes) {
  check_range(dst, dst_offset, bytes, "copy_to_device");
  if (!dst.host_accessible())
    throw Error(ErrorCode::invalid_argument, "copy_to_device: destination buffer lives on " +
                                                 dst.device().backend +
                                                 "; expected a buffer allocated by " + name());
  if (bytes) std::memcpy(static_cast<std::byte*>(dst.data()) + dst_offset, src, bytes);
}

void QuantizationOps::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                                   std::size_t bytes) {
  check_range(src, src_offset, bytes, "copy_to_host");
  auto& s = const_cast<Buffer&>(src);
  if (!s.host_accessible())
    throw Error(ErrorCode::invalid_argument, "copy_to_host: source buffer lives on " +
                                                 src.device().backend +
                                                 "; expected a buffer allocated by " + name());
  if (bytes) std::memcpy(dst, static_cast<const std::byte*>(s.data()) + src_offset, bytes);
}

}  // namespace qforge
