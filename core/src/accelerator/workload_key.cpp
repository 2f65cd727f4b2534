#include "accelerator/workload_key.h"

#include <bit>
#include <cstdio>
#include <variant>

#include "qforge/checked_size.h"

namespace qforge::accel {
namespace {

// Appends fixed-width fields to the 128 bits of a key.
class KeyBuilder {
 public:
  explicit KeyBuilder(std::uint64_t tag_bits_op, Residency r) {
    put(tag_bits_op, 4);
    put(static_cast<std::uint64_t>(r), 1);
  }
  void put(std::uint64_t value, int bits) noexcept {
    value &= bits == 64 ? ~0ull : ((1ull << bits) - 1);
    if (pos_ < 64) {
      words_[0] |= value << pos_;
      if (pos_ + bits > 64) words_[1] |= value >> (64 - pos_);
    } else {
      words_[1] |= value << (pos_ - 64);
    }
    pos_ += bits;  // never past 128: the widest key (a matmul) uses 95 bits
  }
  void dim(std::int64_t extent) noexcept {
    put(static_cast<std::uint64_t>(bucket_code(extent)), 7);
  }
  WorkloadKey key() const noexcept { return {words_[0], words_[1]}; }

 private:
  std::uint64_t words_[2] = {0, 0};
  int pos_ = 0;
};

// Where a per-channel axis sits in a tensor of `rank`: 1 first, 2 last (contiguous), 3 middle,
// 0 out of range (the op will reject the params; the key need not be meaningful).
std::uint64_t axis_class(int axis, std::size_t rank) noexcept {
  const int r = static_cast<int>(rank);
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) return 0;
  if (a == r - 1) return 2;
  return a == 0 ? 1 : 3;
}

// dtype 3 + mapping 2 + granularity 2 + axis class 2 + block size 20 = 29 bits.
void put_params(KeyBuilder& b, const QuantizationParams& p, std::size_t rank) noexcept {
  const Scheme& s = p.scheme();
  b.put(static_cast<std::uint64_t>(p.dtype()), 3);
  b.put(static_cast<std::uint64_t>(s.mapping), 2);
  b.put(static_cast<std::uint64_t>(s.granularity), 2);
  b.put(s.granularity == Granularity::per_channel ? axis_class(s.axis, rank) : 0, 2);
  const std::int64_t block = s.granularity == Granularity::block ? s.block_size : 0;
  b.put(static_cast<std::uint64_t>(block < 0 ? 0 : block > 0xFFFFF ? 0xFFFFF : block), 20);
}

// Elementwise shapes bucket as [outer, last]: kernels care how long the contiguous rows are
// and how many there are, not how the outer extent is split.
void put_shape(KeyBuilder& b, const Shape& shape) noexcept {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i)
    outer = saturating_mul(outer, shape[i] < 0 ? 0 : shape[i]);
  b.dim(outer);
  b.dim(shape.empty() ? 1 : shape.back());
}

struct FromOpDesc {
  OpKind op;
  Residency r;
  WorkloadKey operator()(const QuantizeDesc& d) const noexcept { return make_key(op, d, r); }
  WorkloadKey operator()(const RequantizeDesc& d) const noexcept { return make_key(d, r); }
  WorkloadKey operator()(const MatmulDesc& d) const noexcept { return make_key(op, d, r); }
  WorkloadKey operator()(const DynamicQuantizeDesc& d) const noexcept { return make_key(d, r); }
  WorkloadKey operator()(const LinearDesc& d) const noexcept { return make_key(op, d, r); }
  WorkloadKey operator()(const ConvDesc& d) const noexcept { return make_key(op, d, r); }
};

// Small geometry (kernel extents, strides, dilations): the exact value up to 14, 15 beyond.
std::uint64_t small_code(std::int64_t v) noexcept {
  return static_cast<std::uint64_t>(v < 0 ? 0 : v > 15 ? 15 : v);
}

}  // namespace

std::string WorkloadKey::hex() const {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return text;
}

int bucket_code(std::int64_t extent) noexcept {
  if (extent <= 0) return 0;
  return 1 + static_cast<int>(std::bit_width(static_cast<std::uint64_t>(extent - 1)));
}

std::int64_t bucket_extent(std::int64_t extent) noexcept {
  const int code = bucket_code(extent);
  return code == 0 ? 0 : std::int64_t{1} << (code - 1);
}

WorkloadKey make_key(OpKind op, const QuantizeDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  put_params(b, d.params, d.shape.size());
  // dequantize always writes float32: its float_type does not split buckets.
  b.put(op == OpKind::quantize ? static_cast<std::uint64_t>(d.float_type) : 0, 2);
  put_shape(b, d.shape);
  return b.key();
}

WorkloadKey make_key(const RequantizeDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(OpKind::requantize), r);
  b.put(static_cast<std::uint64_t>(d.out_dtype), 3);
  b.put(static_cast<std::uint64_t>(d.mode), 1);
  const bool per_axis = d.multipliers.size() != 1;
  b.put(per_axis ? 1 : 0, 1);
  b.put(per_axis ? axis_class(d.axis, d.shape.size()) : 0, 2);
  put_shape(b, d.shape);
  return b.key();
}

WorkloadKey make_key(OpKind op, const MatmulDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  // matmul_weight_only's A is float32 whatever d.a says: its params do not split buckets.
  const bool weight_only = op == OpKind::matmul_weight_only;
  if (weight_only) b.put(0, 29);
  else put_params(b, d.a, 2);
  put_params(b, d.b, 2);
  b.put(static_cast<std::uint64_t>(d.b_layout), 1);
  const bool dequant = op == OpKind::matmul_dequant;
  const bool qlinear = op == OpKind::qlinear_matmul;
  b.put((dequant || weight_only) && d.has_bias ? 1 : 0, 1);
  b.put(dequant ? static_cast<std::uint64_t>(d.out_type) : 0, 2);
  b.put(qlinear ? static_cast<std::uint64_t>(d.requant_mode) : 0, 1);
  const bool has_y = qlinear && d.y.has_value();
  b.put(has_y ? 1 : 0, 1);
  b.put(has_y ? static_cast<std::uint64_t>(d.y->dtype()) : 0, 3);
  b.put(has_y ? static_cast<std::uint64_t>(d.y->scheme().mapping) : 0, 2);
  b.dim(d.m);
  b.dim(d.n);
  b.dim(d.k);
  return b.key();
}

WorkloadKey make_key(const DynamicQuantizeDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(OpKind::dynamic_quantize_linear), r);
  put_shape(b, d.shape);
  return b.key();
}

WorkloadKey make_key(OpKind op, const LinearDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  put_params(b, d.w, 2);
  b.put(d.has_bias ? 1 : 0, 1);
  b.dim(d.m);
  b.dim(d.n);
  b.dim(d.k);
  return b.key();
}

// op 4 + residency 1 + layout 1 + x 7 + w 7 + bias 2 + mode 1 + y 5 + activation 2
// + geometry 6 x 4 + depthwise 1 + pads 1 + extents 6 x 7 = 98 bits.
WorkloadKey make_key(OpKind op, const ConvDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  b.put(static_cast<std::uint64_t>(d.layout), 1);
  for (const auto* p : {&d.x_params, &d.w_params}) {
    b.put(static_cast<std::uint64_t>(p->dtype()), 3);
    b.put(static_cast<std::uint64_t>(p->scheme().mapping), 2);
    b.put(static_cast<std::uint64_t>(p->scheme().granularity), 2);
  }
  b.put(op == OpKind::conv_integer ? 0 : static_cast<std::uint64_t>(d.bias), 2);
  const bool qlinear = op == OpKind::qlinear_conv;
  b.put(qlinear ? static_cast<std::uint64_t>(d.requant_mode) : 0, 1);
  const bool has_y = qlinear && d.y_params.has_value();
  b.put(has_y ? static_cast<std::uint64_t>(d.y_params->dtype()) : 0, 3);
  b.put(has_y ? static_cast<std::uint64_t>(d.y_params->scheme().mapping) : 0, 2);
  b.put(op == OpKind::conv_integer ? 0 : static_cast<std::uint64_t>(d.activation), 2);
  for (const std::int64_t v :
       {d.kernel_h, d.kernel_w, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w})
    b.put(small_code(v), 4);
  b.put(d.groups > 1 && d.groups == d.c ? 1 : 0, 1);  // depthwise
  b.put(d.pad_top || d.pad_left || d.pad_bottom || d.pad_right ? 1 : 0, 1);
  b.dim(d.n);
  b.dim(d.c);
  b.dim(d.h);
  b.dim(d.w);
  b.dim(d.out_channels);
  b.dim(d.groups);
  return b.key();
}

WorkloadKey make_key(const Workload& w) noexcept {
  return std::visit(FromOpDesc{w.op.op, w.residency}, w.op.desc);
}

}  // namespace qforge::accel
