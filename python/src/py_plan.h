// qforge.Plan: a prepared op whose run() takes and returns numpy arrays and whose run_dlpack()
// reads and writes DLPack producers (torch tensors, CUDA ones included) in place.
//
// A matmul_dequant plan with A's params given at run (MatmulDesc::a_params_at_run) has two
// more inputs after the others, `a_scale` (float32) and `a_zero_point` (int32), which live in
// host memory whatever the plan's device (op_table.h's host_resident). run() and run_dlpack()
// take them as two one-element arrays in operand order, or as `a_params=`, a per-tensor
// QuantizationParams of the plan's A dtype and mapping (what qforge.quantize was given).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "arrays.h"
#include "dlpack_operand.h"
#include "qforge/op_desc.h"
#include "qforge/op_table.h"
#include "qforge/params.h"
#include "qforge/plan.h"

namespace qforge::python {

namespace py = pybind11;

// One operand of a plan as Python sees it.
struct InputSpec {
  std::string name;
  py::dtype dtype;
  std::size_t bytes = 0;
  bool host_resident = false;  // read on the host whatever the plan's device (op_table.h)
};
struct OutputSpec {
  std::string name;
  DType dtype = DType::int8;  // when !is_float and !is_int32
  bool is_float = false;
  bool is_int32 = false;
  Shape shape;
  bool host_resident = false;  // written on the host whatever the plan's device
};

// A plan with run() on numpy arrays. Everything run() needs that does not depend on its
// arguments (element sizes, output dtypes, extents and strides) is computed once here: the
// per-call cost is the argument checks, the output allocation and the plan's own run.
class PyPlan {
 public:
  PyPlan(std::shared_ptr<const Plan> plan, OperandMemory memory, std::vector<InputSpec> inputs,
         const std::vector<OutputSpec>& outputs)
      : plan_(std::move(plan)), memory_(memory), inputs_(std::move(inputs)) {
    if (inputs_.size() > kMaxOperands || outputs.size() > kMaxOperands)
      throw py::value_error("a plan with more operands than qforge::kMaxOperands");
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      itemsizes_.push_back(itemsize(inputs_[i].dtype));
      if (!plan_->reads_input(i)) continue;
      read_names_ += (read_names_.empty() ? "" : ", ") + inputs_[i].name;
      ++reads_;
    }
    if (const auto* d = std::get_if<MatmulDesc>(&plan_->desc().desc); d && d->a_params_at_run) {
      if (inputs_.size() < 3 || inputs_[inputs_.size() - 2].name != "a_scale")
        throw py::value_error("a plan with A's params at run needs a_scale and a_zero_point last");
      a_scale_index_ = inputs_.size() - 2;
      a_params_.emplace(d->a);
    }
    for (const auto& o : outputs) {
      Output out;
      out.dtype = o.is_float   ? py::dtype::of<float>()
                  : o.is_int32 ? py::dtype::of<std::int32_t>()
                               : storage_dtype(o.dtype);
      const bool packed = !o.is_float && !o.is_int32 && traits(o.dtype).bits < 8;
      const Shape shape = packed ? Shape{static_cast<std::int64_t>(storage_bytes(
                                       o.dtype, static_cast<std::size_t>(element_count(o.shape))))}
                                 : o.shape;
      out.bytes = static_cast<std::size_t>(element_count(shape)) *
                  static_cast<std::size_t>(itemsize(out.dtype));
      out.host_resident = o.host_resident;
      out.extents.assign(shape.begin(), shape.end());
      out.strides.resize(shape.size());
      py::ssize_t stride = itemsize(out.dtype);
      for (std::size_t i = shape.size(); i-- > 0;) {
        out.strides[i] = stride;
        stride *= std::max<py::ssize_t>(out.extents[i], 1);
      }
      outputs_.push_back(std::move(out));
    }
  }

  // Inputs in operand order, leaving out those fixed when the plan was made; a plan with A's
  // params at run takes them as its last two arrays or as `a_params`.
  py::object run(const py::args& args, const std::optional<QuantizationParams>& a_params) const {
    if (!memory_.host)
      throw py::type_error("Plan.run takes numpy arrays, and this plan runs on cuda:" +
                           std::to_string(memory_.device) +
                           " memory (prepared with residency='device'); pass device tensors to "
                           "Plan.run_dlpack(inputs, outputs), or prepare it with "
                           "residency='host' to pass numpy arrays");
    std::array<const void*, kMaxOperands> in{};
    RunValues values;
    check_inputs(args, in, a_params, values);
    std::array<py::array, kMaxOperands> outs;
    std::array<void*, kMaxOperands> out_ptrs{};
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      outs[i] = py::array(outputs_[i].dtype, outputs_[i].extents, outputs_[i].strides);
      out_ptrs[i] = outs[i].mutable_data();
    }
    run_plan(in, out_ptrs);
    if (outputs_.size() == 1) return std::move(outs[0]);
    py::tuple t(outputs_.size());
    for (std::size_t i = 0; i < outputs_.size(); ++i) t[i] = std::move(outs[i]);
    return std::move(t);
  }

  // Seconds per run of `iterations` runs in a C++ loop on the same arrays: the plan's own cost,
  // against which the Python call's overhead is measured (benchmarks/python).
  double seconds_per_run_in_cpp(int iterations, const py::args& args) const {
    if (!memory_.host)
      throw py::type_error("Plan._seconds_per_run_in_cpp: plans of host memory only");
    std::array<const void*, kMaxOperands> in{};
    RunValues values;
    check_inputs(args, in, std::nullopt, values);
    std::vector<py::array> outs;
    std::array<void*, kMaxOperands> out_ptrs{};
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      outs.emplace_back(outputs_[i].dtype, outputs_[i].extents, outputs_[i].strides);
      out_ptrs[i] = outs.back().mutable_data();
    }
    const std::span<const void* const> ins(in.data(), inputs_.size());
    const std::span<void* const> os(out_ptrs.data(), outputs_.size());
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) plan_->run(ins, os);
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    return d.count() / std::max(iterations, 1);
  }

  // The same with DLPack producers for the inputs (those run() takes) and for the outputs,
  // which are written in place: torch tensors on the plan's device, CUDA ones included.
  // Host-resident operands (A's params at run, computed scales) are host memory on any device.
  void run_dlpack(const py::sequence& inputs, const py::sequence& outputs,
                  const std::optional<QuantizationParams>& a_params) const {
    RunValues values;
    const std::size_t expected = expected_arrays(a_params);
    if (inputs.size() != expected)
      throw py::type_error("Plan.run_dlpack takes " + std::to_string(expected) + " input(s) (" +
                           names_expected(a_params) + "); got " + std::to_string(inputs.size()) +
                           at_run_hint(a_params));
    if (outputs.size() != outputs_.size())
      throw py::type_error("Plan.run_dlpack writes " + std::to_string(outputs_.size()) +
                           " output(s); got " + std::to_string(outputs.size()));
    std::array<DlpackOperand, 2 * kMaxOperands> held;
    std::array<const void*, kMaxOperands> in{};
    std::array<void*, kMaxOperands> out{};
    std::size_t next = 0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (!plan_->reads_input(i)) continue;
      if (a_params && i >= a_scale_index_) continue;  // filled from a_params below
      const InputSpec& spec = inputs_[i];
      held[i] = dlpack_operand(inputs[next++], spec.host_resident ? kHost : memory_,
                               spec.dtype.kind(), static_cast<int>(8 * itemsizes_[i]), spec.bytes,
                               "Plan.run_dlpack: " + spec.name +
                                   (spec.host_resident ? " (a host value on every device)" : ""));
      in[i] = held[i].data;
    }
    if (a_params) fill_a_params(*a_params, in, values);
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      const Output& o = outputs_[i];
      held[kMaxOperands + i] =
          dlpack_operand(outputs[i], o.host_resident ? kHost : memory_, o.dtype.kind(),
                         static_cast<int>(8 * itemsize(o.dtype)), o.bytes,
                         "Plan.run_dlpack: output " + std::to_string(i) +
                             (o.host_resident ? " (a host value on every device)" : ""));
      out[i] = held[kMaxOperands + i].data;
    }
    run_plan(in, out);
  }

  const Plan& plan() const { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const { return plan_; }
  const OperandMemory& memory() const { return memory_; }
  std::size_t inputs_read() const { return reads_; }
  std::size_t output_count() const { return outputs_.size(); }
  const InputSpec& input(std::size_t i) const { return inputs_.at(i); }
  std::size_t input_count() const { return inputs_.size(); }
  // Output i's element type and size in bytes.
  const py::dtype& output_dtype(std::size_t i) const { return outputs_.at(i).dtype; }
  std::size_t output_bytes(std::size_t i) const { return outputs_.at(i).bytes; }
  // Whether the plan takes A's scale and zero point at run (its last two inputs).
  bool a_params_at_run() const { return a_scale_index_ != kNone; }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr OperandMemory kHost{true, 0};

  struct Output {
    py::dtype dtype;
    std::size_t bytes = 0;
    bool host_resident = false;
    std::vector<py::ssize_t> extents, strides;
  };
  // A's scale and zero point taken from `a_params`, alive for one run.
  struct RunValues {
    float scale = 0;
    std::int32_t zero_point = 0;
  };

  void run_plan(const std::array<const void*, kMaxOperands>& in,
                const std::array<void*, kMaxOperands>& out) const {
    const std::span<const void* const> ins(in.data(), inputs_.size());
    const std::span<void* const> os(out.data(), outputs_.size());
    if (plan_->concurrency() == PlanConcurrency::concurrent) {
      py::gil_scoped_release release;
      plan_->run(ins, os);
    } else {
      plan_->run(ins, os);
    }
  }

  // How many arrays a run takes: every input not fixed, less A's two params when `a_params`
  // brings them.
  std::size_t expected_arrays(const std::optional<QuantizationParams>& a_params) const {
    if (!a_params) return reads_;
    if (!a_params_at_run())
      throw py::type_error("Plan.run: a_params given, but this plan's " + describe(plan_->desc()) +
                           " fixes A's params (prepare_matmul(..., a_params_at_run=True) makes a "
                           "plan that takes them at run)");
    return reads_ - 2;
  }
  std::string names_expected(const std::optional<QuantizationParams>& a_params) const {
    if (!a_params) return read_names_;
    std::string names;
    for (std::size_t i = 0; i < a_scale_index_; ++i)
      if (plan_->reads_input(i)) names += (names.empty() ? "" : ", ") + inputs_[i].name;
    return names;
  }
  std::string at_run_hint(const std::optional<QuantizationParams>& a_params) const {
    return a_params_at_run() && !a_params
               ? "; A's scale and zero point go last, as one-element float32 and int32 arrays, "
                 "or as a_params="
               : "";
  }

  // A's params of this run from a QuantizationParams: per tensor, of the plan's A dtype and
  // mapping. Their values are checked by the plan's run (reference::check_a_params_at_run).
  void fill_a_params(const QuantizationParams& p, std::array<const void*, kMaxOperands>& in,
                     RunValues& values) const {
    if (p.scheme().granularity != Granularity::per_tensor)
      throw py::value_error("a_params " + p.to_string() +
                            "; expected per_tensor params (one scale and zero point per run)");
    if (p.dtype() != a_params_->dtype() || p.scheme().mapping != a_params_->scheme().mapping)
      throw py::type_error("a_params " + p.to_string() + "; the plan's A is " +
                           std::string(name(a_params_->dtype())) + " " +
                           std::string(to_string(a_params_->scheme().mapping)) +
                           " (prepare_matmul's a_params give A's dtype and mapping)");
    values.scale = p.scale();
    values.zero_point = p.zero_points().empty() ? symmetric_zero_point(p.dtype()) : p.zero_point();
    in[a_scale_index_] = &values.scale;
    in[a_scale_index_ + 1] = &values.zero_point;
  }

  // Checks run()'s arguments and writes the plan's input pointers (null where fixed).
  void check_inputs(const py::args& args, std::array<const void*, kMaxOperands>& in,
                    const std::optional<QuantizationParams>& a_params, RunValues& values) const {
    const std::size_t expected = expected_arrays(a_params);
    if (args.size() != expected)
      throw py::type_error("Plan.run takes " + std::to_string(expected) + " array(s) (" +
                           names_expected(a_params) + "); got " + std::to_string(args.size()) +
                           at_run_hint(a_params));
    std::size_t next = 0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (!plan_->reads_input(i)) continue;
      if (a_params && i >= a_scale_index_) continue;
      py::handle h = args[next++];
      if (!py::isinstance<py::array>(h))
        throw py::type_error("Plan.run: " + inputs_[i].name + " is a " +
                             py::str(py::type::handle_of(h)).cast<std::string>() +
                             "; expected a numpy array");
      auto a = py::reinterpret_borrow<py::array>(h);
      require_array(a, inputs_[i].dtype, inputs_[i].name);
      // require_array checked the dtype, so its element size is the spec's.
      const auto bytes =
          static_cast<std::size_t>(a.size()) * static_cast<std::size_t>(itemsizes_[i]);
      if (bytes != inputs_[i].bytes)
        throw py::value_error("Plan.run: " + inputs_[i].name + " holds " + std::to_string(bytes) +
                              " bytes; the plan's " + describe(plan_->desc()) + " reads " +
                              std::to_string(inputs_[i].bytes));
      in[i] = a.data();
    }
    if (a_params) fill_a_params(*a_params, in, values);
  }

  std::shared_ptr<const Plan> plan_;
  OperandMemory memory_;
  std::vector<InputSpec> inputs_;
  std::vector<Output> outputs_;
  std::size_t reads_ = 0;
  std::string read_names_;
  std::vector<py::ssize_t> itemsizes_;          // per input
  std::size_t a_scale_index_ = kNone;           // a_scale's input index when A's params come at run
  std::optional<QuantizationParams> a_params_;  // A's dtype and mapping then (placeholder values)
};

}  // namespace qforge::python
