#include "registry/c_descriptor.h"

#include <cstring>
#include <type_traits>
#include <variant>

namespace qforge::detail {
namespace {

// The header's numbers are the enumerators' values, so a cast converts.
static_assert(QFORGE_C_OP_QUANTIZE == static_cast<unsigned>(OpKind::quantize));
static_assert(QFORGE_C_OP_MATMUL_INTEGER == static_cast<unsigned>(OpKind::matmul_integer));
static_assert(QFORGE_C_OP_DYNAMIC_QUANTIZE_LINEAR ==
              static_cast<unsigned>(OpKind::dynamic_quantize_linear));
static_assert(QFORGE_C_OP_CONV_INTEGER == static_cast<unsigned>(OpKind::conv_integer));
static_assert(QFORGE_C_OP_MATMUL_WEIGHT_ONLY == static_cast<unsigned>(OpKind::matmul_weight_only));
static_assert(QFORGE_C_OP_MATMUL_WEIGHT_ONLY + 1 == kOpKindCount,
              "a new OpKind needs its QFORGE_C_OP_ number in c_api.h");
static_assert(QFORGE_C_DTYPE_BINARY == static_cast<unsigned>(DType::binary));
static_assert(QFORGE_C_DTYPE_BINARY + 1 == kDTypeCount);
static_assert(QFORGE_C_MAPPING_LOGARITHMIC == static_cast<unsigned>(Mapping::logarithmic));
static_assert(QFORGE_C_GRANULARITY_BLOCK == static_cast<unsigned>(Granularity::block));
static_assert(QFORGE_C_FLOAT_BF16 == static_cast<unsigned>(FloatType::bf16));
static_assert(QFORGE_C_LAYOUT_NK == static_cast<unsigned>(MatrixLayout::nk));
static_assert(QFORGE_C_REQUANT_FIXED_POINT == static_cast<unsigned>(RequantMode::fixed_point));
static_assert(QFORGE_C_CONV_NHWC == static_cast<unsigned>(ConvLayout::nhwc));
static_assert(QFORGE_C_CONV_BIAS_INT32 == static_cast<unsigned>(ConvBias::int32));
static_assert(QFORGE_C_ACTIVATION_CLAMP == static_cast<unsigned>(ConvActivation::clamp));

template <class E>
std::uint32_t u32(E e) {
  return static_cast<std::uint32_t>(e);
}

template <class T>
void begin(T& s) {
  s.version = QFORGE_C_API_VERSION;
  s.struct_size = static_cast<std::uint32_t>(sizeof(T));
}

// Appends the bytes of trivially copyable values to a key.
class KeyWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    key_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T>
  void put_span(const T* data, std::size_t n) {
    put(n);
    key_.append(reinterpret_cast<const char*>(data), n * sizeof(T));
  }
  void put(const Shape& s) { put_span(s.data(), s.size()); }
  void put(const QuantizationParams& p) {
    put(p.dtype());
    put(p.scheme().mapping);
    put(p.scheme().granularity);
    put(p.scheme().axis);
    put(p.scheme().block_size);
    put_span(p.scales().data(), p.scales().size());
    put_span(p.zero_points().data(), p.zero_points().size());
  }
  void put(const std::optional<QuantizationParams>& p) {
    put(p.has_value());
    if (p) put(*p);
  }
  std::string take() { return std::move(key_); }

 private:
  std::string key_;
};

}  // namespace

const qforge_c_params* CDescriptor::params(std::size_t slot, const QuantizationParams& p) {
  qforge_c_params& c = params_[slot];
  begin(c);
  c.dtype = u32(p.dtype());
  c.mapping = u32(p.scheme().mapping);
  c.granularity = u32(p.scheme().granularity);
  c.axis = p.scheme().axis;
  c.block_size = p.scheme().block_size;
  c.scales = p.scales().data();
  c.zero_points = p.zero_points().data();
  c.count = p.count();
  return &c;
}

CDescriptor::CDescriptor(const OpDesc& op) {
  begin(op_);
  op_.kind = u32(op.op);
  std::visit(
      [&](const auto& d) {
        using D = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<D, QuantizeDesc>) {
          begin(quantize_);
          quantize_.shape = d.shape.data();
          quantize_.rank = d.shape.size();
          quantize_.params = params(0, d.params);
          quantize_.float_type = u32(d.float_type);
          op_.desc = &quantize_;
        } else if constexpr (std::is_same_v<D, RequantizeDesc>) {
          begin(requantize_);
          requantize_.shape = d.shape.data();
          requantize_.rank = d.shape.size();
          requantize_.multipliers = d.multipliers.data();
          requantize_.multiplier_count = d.multipliers.size();
          requantize_.axis = d.axis;
          requantize_.out_dtype = u32(d.out_dtype);
          requantize_.out_zero_point = d.out_zero_point;
          requantize_.mode = u32(d.mode);
          op_.desc = &requantize_;
        } else if constexpr (std::is_same_v<D, MatmulDesc>) {
          begin(matmul_);
          matmul_.m = d.m;
          matmul_.n = d.n;
          matmul_.k = d.k;
          matmul_.a = params(0, d.a);
          matmul_.b = params(1, d.b);
          matmul_.b_layout = u32(d.b_layout);
          matmul_.has_bias = d.has_bias ? 1 : 0;
          matmul_.out_type = u32(d.out_type);
          matmul_.requant_mode = u32(d.requant_mode);
          matmul_.y = d.y ? params(2, *d.y) : nullptr;
          matmul_.activation = u32(d.activation);
          matmul_.clamp_min = d.clamp_min;
          matmul_.clamp_max = d.clamp_max;
          matmul_.a_params_at_run = d.a_params_at_run ? 1 : 0;
          op_.desc = &matmul_;
        } else if constexpr (std::is_same_v<D, DynamicQuantizeDesc>) {
          begin(dynamic_);
          dynamic_.shape = d.shape.data();
          dynamic_.rank = d.shape.size();
          op_.desc = &dynamic_;
        } else if constexpr (std::is_same_v<D, LinearDesc>) {
          begin(linear_);
          linear_.m = d.m;
          linear_.n = d.n;
          linear_.k = d.k;
          linear_.w = params(0, d.w);
          linear_.has_bias = d.has_bias ? 1 : 0;
          op_.desc = &linear_;
        } else {
          static_assert(std::is_same_v<D, ConvDesc>);
          begin(conv_);
          conv_.layout = u32(d.layout);
          conv_.bias = u32(d.bias);
          conv_.n = d.n;
          conv_.c = d.c;
          conv_.h = d.h;
          conv_.w = d.w;
          conv_.out_channels = d.out_channels;
          conv_.kernel_h = d.kernel_h;
          conv_.kernel_w = d.kernel_w;
          conv_.stride_h = d.stride_h;
          conv_.stride_w = d.stride_w;
          conv_.dilation_h = d.dilation_h;
          conv_.dilation_w = d.dilation_w;
          conv_.pad_top = d.pad_top;
          conv_.pad_left = d.pad_left;
          conv_.pad_bottom = d.pad_bottom;
          conv_.pad_right = d.pad_right;
          conv_.groups = d.groups;
          conv_.x_params = params(0, d.x_params);
          conv_.w_params = params(1, d.w_params);
          conv_.y_params = d.y_params ? params(2, *d.y_params) : nullptr;
          conv_.requant_mode = u32(d.requant_mode);
          conv_.activation = u32(d.activation);
          conv_.clamp_min = d.clamp_min;
          conv_.clamp_max = d.clamp_max;
          op_.desc = &conv_;
        }
      },
      op.desc);
}

ErrorCode error_code_from_c(std::uint32_t code) noexcept {
  switch (code) {
    case QFORGE_C_ERROR_INVALID_ARGUMENT: return ErrorCode::invalid_argument;
    case QFORGE_C_ERROR_SHAPE_MISMATCH: return ErrorCode::shape_mismatch;
    case QFORGE_C_ERROR_OVERFLOW: return ErrorCode::overflow;
    case QFORGE_C_ERROR_UNSUPPORTED: return ErrorCode::unsupported;
    case QFORGE_C_ERROR_UNAVAILABLE: return ErrorCode::unavailable;
    case QFORGE_C_ERROR_PLUGIN_LOAD: return ErrorCode::plugin_load;
    case QFORGE_C_ERROR_IO: return ErrorCode::io;
    case QFORGE_C_ERROR_CORRUPT_DATA: return ErrorCode::corrupt_data;
    case QFORGE_C_ERROR_BACKEND: return ErrorCode::backend;
    default: return ErrorCode::internal;
  }
}

std::string descriptor_key(const OpDesc& op) {
  KeyWriter w;
  w.put(op.op);
  w.put(op.desc.index());
  std::visit(
      [&](const auto& d) {
        using D = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<D, QuantizeDesc>) {
          w.put(d.shape);
          w.put(d.params);
          w.put(d.float_type);
        } else if constexpr (std::is_same_v<D, RequantizeDesc>) {
          w.put(d.shape);
          w.put_span(d.multipliers.data(), d.multipliers.size());
          w.put(d.axis);
          w.put(d.out_dtype);
          w.put(d.out_zero_point);
          w.put(d.mode);
        } else if constexpr (std::is_same_v<D, MatmulDesc>) {
          w.put(d.m);
          w.put(d.n);
          w.put(d.k);
          w.put(d.a);
          w.put(d.b);
          w.put(d.b_layout);
          w.put(d.has_bias);
          w.put(d.out_type);
          w.put(d.y);
          w.put(d.requant_mode);
          w.put(d.activation);
          w.put(d.clamp_min);
          w.put(d.clamp_max);
          w.put(d.a_params_at_run);
        } else if constexpr (std::is_same_v<D, DynamicQuantizeDesc>) {
          w.put(d.shape);
        } else if constexpr (std::is_same_v<D, LinearDesc>) {
          w.put(d.m);
          w.put(d.n);
          w.put(d.k);
          w.put(d.w);
          w.put(d.has_bias);
        } else {
          w.put(d.layout);
          for (const std::int64_t v : {d.n, d.c, d.h, d.w, d.out_channels, d.kernel_h, d.kernel_w,
                                       d.stride_h, d.stride_w, d.dilation_h, d.dilation_w,
                                       d.pad_top, d.pad_left, d.pad_bottom, d.pad_right, d.groups})
            w.put(v);
          w.put(d.x_params);
          w.put(d.w_params);
          w.put(d.bias);
          w.put(d.y_params);
          w.put(d.requant_mode);
          w.put(d.activation);
          w.put(d.clamp_min);
          w.put(d.clamp_max);
        }
      },
      op.desc);
  return w.take();
}

}  // namespace qforge::detail
