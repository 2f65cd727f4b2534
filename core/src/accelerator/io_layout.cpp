// The arrays each op reads and writes, with sizes and how outputs are compared
// (docs/NUMERICS.md, "Tolerances for backends").
#include <variant>

#include "accelerator/operands.h"
#include "qforge/checked_size.h"
#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/shape.h"

namespace qforge::accel {
namespace {

// Checked against qforge's size limit (checked_size.h), so the byte counts below are exact.
std::size_t count_of(const Shape& s) { return static_cast<std::size_t>(element_count(s)); }
std::size_t count_of(std::int64_t a, std::int64_t b) {
  return static_cast<std::size_t>(a < 0 || b < 0 ? 0 : checked_element_count("operand", {a, b}));
}

ArraySpec exact(const char* name, std::size_t bytes, std::size_t count) {
  return {name, bytes, count, Check::exact, FloatType::f32, 0};
}
ArraySpec floats(const char* name, std::size_t count, FloatType t = FloatType::f32,
                 double tolerance = 0) {
  return {name, count * static_cast<std::size_t>(size_of(t)), count, Check::nmse, t, tolerance};
}
ArraySpec codes(const char* name, DType t, std::size_t count) {
  return exact(name, storage_bytes(t, count), count);
}

double matmul_dequant_tolerance(FloatType t) {
  return t == FloatType::f32 ? 1e-12 : t == FloatType::f16 ? 1e-6 : 1e-4;
}

}  // namespace

std::size_t IoLayout::input_bytes() const {
  std::size_t n = 0;
  for (const auto& a : inputs) n += a.bytes;
  return n;
}

std::size_t IoLayout::output_bytes() const {
  std::size_t n = 0;
  for (const auto& a : outputs) n += a.bytes;
  return n;
}

IoLayout io_layout(const OpDesc& op) {
  IoLayout l;
  switch (op.op) {
    case OpKind::quantize: {
      const auto& d = std::get<QuantizeDesc>(op.desc);
      const std::size_t n = count_of(d.shape);
      l.inputs = {floats("x", n, d.float_type)};
      l.outputs = {codes("q", d.params.dtype(), n)};
      break;
    }
    case OpKind::dequantize: {
      const auto& d = std::get<QuantizeDesc>(op.desc);
      const std::size_t n = count_of(d.shape);
      l.inputs = {codes("q", d.params.dtype(), n)};
      l.outputs = {floats("x", n, FloatType::f32, 0.0)};
      break;
    }
    case OpKind::requantize: {
      const auto& d = std::get<RequantizeDesc>(op.desc);
      const std::size_t n = count_of(d.shape);
      l.inputs = {exact("c", n * 4, n)};
      l.outputs = {codes("y", d.out_dtype, n)};
      break;
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      l.inputs = {codes("a", d.a.dtype(), count_of(d.m, d.k)),
                  codes("b", d.b.dtype(), count_of(d.k, d.n))};
      const std::size_t mn = count_of(d.m, d.n);
      if (op.op == OpKind::matmul_integer) {
        l.outputs = {exact("c", mn * 4, mn)};
      } else if (op.op == OpKind::matmul_dequant) {
        if (d.has_bias) l.inputs.push_back(floats("bias", count_of(d.n, 1)));
        l.outputs = {floats("y", mn, d.out_type, matmul_dequant_tolerance(d.out_type))};
      } else {
        l.outputs = {codes("y", d.y ? d.y->dtype() : DType::int8, mn)};
      }
      break;
    }
    case OpKind::dynamic_quantize_linear: {
      const auto& d = std::get<DynamicQuantizeDesc>(op.desc);
      const std::size_t n = count_of(d.shape);
      l.inputs = {floats("x", n)};
      l.outputs = {codes("y", DType::uint8, n)};
      l.returns_params = true;
      break;
    }
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      l.inputs = {floats("x", count_of(d.m, d.k)), codes("wq", DType::int8, count_of(d.n, d.k))};
      if (d.has_bias) l.inputs.push_back(floats("bias", count_of(d.n, 1)));
      l.outputs = {codes("xq", DType::int8, count_of(d.m, d.k)),
                   floats("y", count_of(d.m, d.n), FloatType::f32, 1e-12)};
      l.returns_params = true;
      break;
    }
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      l.inputs = {floats("dy", count_of(d.m, d.n)), codes("xq", DType::int8, count_of(d.m, d.k)),
                  codes("wq", DType::int8, count_of(d.n, d.k))};
      l.outputs = {floats("dx", count_of(d.m, d.k), FloatType::f32, 1e-10),
                   floats("dw", count_of(d.n, d.k), FloatType::f32, 1e-10)};
      if (d.has_bias) l.outputs.push_back(floats("db", count_of(d.n, 1), FloatType::f32, 1e-10));
      l.needs_xq_params = true;
      break;
    }
  }
  return l;
}

std::vector<const void*> HostArrays::input_pointers() const {
  std::vector<const void*> p;
  for (const auto& a : inputs) p.push_back(a.data());
  return p;
}

std::vector<void*> HostArrays::output_pointers() {
  std::vector<void*> p;
  for (auto& a : outputs) p.push_back(a.data());
  return p;
}

}  // namespace qforge::accel
