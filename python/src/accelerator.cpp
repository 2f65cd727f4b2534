// qforge.Accelerator: options, measured dispatch of the per-call ops, and plans (prepare once,
// run many) whose run() takes and returns numpy arrays.
//
// The accelerator is used from one thread at a time (accelerator.h), so its per-call ops keep
// the GIL: Python threads sharing one accelerator are serialised by it. A plan whose backend
// declares it concurrent runs with the GIL released.
#include "qforge/accelerator.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "descs.h"
#include "dlpack_operand.h"
#include "py_plan.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"

namespace py = pybind11;

namespace qforge::python {

namespace {

AcceleratorOptions make_options(std::optional<std::vector<std::string>> plugins,
                                std::optional<std::string> device_kind,
                                std::optional<bool> online_tuning, std::optional<bool> use_cache,
                                std::optional<std::filesystem::path> cache_path,
                                std::optional<double> budget_s,
                                std::optional<double> total_budget_s,
                                std::optional<bool> include_transfers) {
  AcceleratorOptions o = AcceleratorOptions::from_environment();
  if (plugins) o.policy.plugins = *plugins;
  if (device_kind) o.policy.device_kind = *device_kind;
  if (include_transfers) o.policy.include_transfers = *include_transfers;
  if (online_tuning) o.online_tuning = *online_tuning;
  if (use_cache) o.use_cache = *use_cache;
  if (cache_path) o.cache_path = *cache_path;
  if (budget_s) o.budget.per_workload_s = *budget_s;
  if (total_budget_s) o.budget.total_s = *total_budget_s;
  return o;
}

// prepare_*'s residency: where the caller's arrays live (core's Residency, accelerator.h).
Residency parse_residency(const std::string& r) {
  if (r == "host") return Residency::host;
  if (r == "device") return Residency::device;
  throw py::value_error("residency = '" + r +
                        "'; expected 'host' (numpy arrays and CPU tensors, copied to a device "
                        "plugin's memory and back on every run) or 'device' (the memory of the "
                        "plugin that wins: CUDA tensors for the cuda plugin, host memory for a "
                        "CPU plugin)");
}

// Where the plan's operands live. Residency::host: host memory, whatever the winner (a device
// winner's plan comes back staged: it copies and synchronises). Residency::device: the winner's
// memory, host for CPU plugins and the plan's CUDA device for cuda.
OperandMemory memory_of(const Accelerator& acc, const Plan& plan, Residency residency) {
  bool plugin_host = true;
  for (const auto& p : acc.plugins())
    if (p.name == plan.backend()) plugin_host = p.ops->host_memory();
  if (residency == Residency::host) return {true, plan.device(), !plugin_host};
  return {plugin_host, plan.device(), false};
}

py::dict candidate_dict(const CandidateId& id) {
  py::dict d;
  d["plugin"] = id.plugin;
  d["device"] = id.device;
  d["kernel"] = id.kernel;
  d["label"] = id.label();
  return d;
}

}  // namespace

void bind_accelerator(py::module_& m) {
  py::class_<PyPlan>(m, "Plan", "An op prepared once (validated, weights packed), run many times")
      .def("run", &PyPlan::run, py::arg("a_params") = py::none(),
           "Runs the op on numpy arrays (the inputs not fixed at prepare time, in operand order) "
           "and returns its output array(s). A plan with A's params at run takes them last (a "
           "float32 and an int32 one-element array) or as a_params= (per-tensor params of the "
           "plan's A dtype and mapping)")
      .def("__call__", &PyPlan::run, py::arg("a_params") = py::none())
      .def("run_dlpack", &PyPlan::run_dlpack, py::arg("inputs"), py::arg("outputs"), py::kw_only(),
           py::arg("a_params") = py::none(),
           "Runs the op on DLPack producers (torch tensors; on the plan's device, CUDA "
           "included): the inputs run() takes, and the outputs, written in place. A's params at "
           "run (host memory on any device) as run() takes them")
      .def_property_readonly(
          "host_memory", [](const PyPlan& p) { return p.memory().host; },
          "Whether run() takes host arrays (a CPU plugin's plan, or any plan "
          "prepared with residency='host')")
      .def_property_readonly(
          "staged", [](const PyPlan& p) { return p.memory().staged; },
          "Whether each run copies host arrays to the plan's device and back and synchronises "
          "(a device plugin's plan prepared with residency='host')")
      .def_property_readonly("a_params_at_run", &PyPlan::a_params_at_run,
                             "Whether run() takes A's scale and zero point")
      .def("_seconds_per_run_in_cpp", &PyPlan::seconds_per_run_in_cpp, py::arg("iterations"),
           "Benchmarks: seconds per run of the plan in a C++ loop on these inputs")
      .def_property_readonly("backend", [](const PyPlan& p) { return p.plan().backend(); })
      .def_property_readonly("kernel", [](const PyPlan& p) { return p.plan().kernel(); })
      .def_property_readonly("device", [](const PyPlan& p) { return p.plan().device(); })
      .def_property_readonly(
          "concurrent",
          [](const PyPlan& p) { return p.plan().concurrency() == PlanConcurrency::concurrent; })
      .def_property_readonly("description",
                             [](const PyPlan& p) { return describe(p.plan().desc()); })
      .def("__repr__", [](const PyPlan& p) {
        return "<qforge.Plan " + describe(p.plan().desc()) + " on " + p.plan().backend() + "[" +
               std::to_string(p.plan().device()) + "]/" + p.plan().kernel() + ">";
      });

  py::class_<Accelerator, std::shared_ptr<Accelerator>>(
      m, "Accelerator", "Measured dispatch across the loaded plugins (accelerator.h)")
      .def(py::init([](std::optional<std::vector<std::string>> plugins,
                       std::optional<std::string> device_kind, std::optional<bool> online_tuning,
                       std::optional<bool> use_cache,
                       std::optional<std::filesystem::path> cache_path,
                       std::optional<double> budget_s, std::optional<double> total_budget_s,
                       std::optional<bool> include_transfers) {
             return std::make_shared<Accelerator>(
                 make_options(std::move(plugins), std::move(device_kind), online_tuning, use_cache,
                              std::move(cache_path), budget_s, total_budget_s, include_transfers));
           }),
           py::kw_only(), py::arg("plugins") = py::none(), py::arg("device_kind") = py::none(),
           py::arg("online_tuning") = py::none(), py::arg("use_cache") = py::none(),
           py::arg("cache_path") = py::none(), py::arg("budget_s") = py::none(),
           py::arg("total_budget_s") = py::none(), py::arg("include_transfers") = py::none())
      .def_property_readonly("plugins",
                             [](const Accelerator& a) {
                               std::vector<std::string> names;
                               for (const auto& p : a.plugins()) names.push_back(p.name);
                               return names;
                             })
      .def_property_readonly(
          "policy",
          [](const Accelerator& a) {
            const Policy& p = a.options().policy;
            py::dict d;
            d["plugins"] = p.plugins;  // empty: every loaded plugin competes
            d["device_kind"] = p.device_kind;
            d["include_transfers"] = p.include_transfers;
            return d;
          },
          "What competes for a workload: {'plugins', 'device_kind', 'include_transfers'} "
          "(plugins lists every loaded plugin, policy['plugins'] those allowed to win)")
      .def_property_readonly("online_tuning",
                             [](const Accelerator& a) { return a.options().online_tuning; })
      .def_property_readonly("cache_path",
                             [](Accelerator& a) -> std::optional<std::filesystem::path> {
                               if (TuningCache* c = a.cache()) return c->path();
                               return std::nullopt;
                             })
      .def_property_readonly("fingerprint",
                             [](const Accelerator& a) { return a.fingerprint().id(); })
      .def_property_readonly("stats",
                             [](const Accelerator& a) {
                               const AcceleratorStats s = a.stats();
                               py::dict d;
                               d["dispatches"] = s.dispatches;
                               d["buckets_tuned"] = s.buckets_tuned;
                               d["cache_hits"] = s.cache_hits;
                               d["fallbacks"] = s.fallbacks;
                               d["tuning_seconds"] = s.tuning_seconds;
                               return d;
                             })
      .def("clear_cache", &Accelerator::clear_cache)
      .def(
          "quantize",
          [](Accelerator& acc, const py::array& x, const QuantizationParams& params) {
            const QuantizeDesc desc = quantize_desc(x, params);
            py::array q = storage_array(params.dtype(), desc.shape);
            acc.quantize(desc, x.data(), q.mutable_data());
            return q;
          },
          py::arg("x"), py::arg("params"), "The storage of x quantized with params")
      .def(
          "dequantize",
          [](Accelerator& acc, const py::array& q, const Shape& shape,
             const QuantizationParams& params) {
            require_storage(q, params.dtype(), shape, "q");
            const QuantizeDesc desc{shape, params};
            reference::check_descriptor(OpKind::dequantize, desc);
            py::array_t<float> x = float_array(shape);
            acc.dequantize(desc, q.data(), x.mutable_data());
            return x;
          },
          py::arg("q"), py::arg("shape"), py::arg("params"))
      .def(
          "matmul_dequant",
          [](Accelerator& acc, const py::array& a, const Shape& a_shape,
             const QuantizationParams& a_params, const py::array& b, const Shape& b_shape,
             const QuantizationParams& b_params, const std::string& b_layout,
             const std::optional<py::array>& bias) {
            const MatmulDesc d = matmul_desc(a, a_shape, a_params, b, b_shape, b_params,
                                             parse_layout(b_layout), bias);
            py::array_t<float> y = float_array({d.m, d.n});
            acc.matmul_dequant(d, a.data(), b.data(),
                               bias ? static_cast<const float*>(bias->data()) : nullptr,
                               y.mutable_data());
            return y;
          },
          py::arg("a"), py::arg("a_shape"), py::arg("a_params"), py::arg("b"), py::arg("b_shape"),
          py::arg("b_params"), py::arg("b_layout") = "kn", py::arg("bias") = py::none(),
          "Y = (A - za)(B - zb) sa sb + bias, float32, on the plugin tuned for the workload")
      .def(
          "tune_quantize",
          [](Accelerator& acc, const Shape& shape, const QuantizationParams& params) {
            const TuneReport r = acc.tune({OpDesc{OpKind::quantize, QuantizeDesc{shape, params}}});
            py::dict d;
            d["source"] = std::string(to_string(r.source));
            d["winner"] = candidate_dict(r.winner);
            d["bucket"] = r.bucket;
            d["seconds"] = r.winner_seconds;
            return d;
          },
          py::arg("shape"), py::arg("params"), "Decides the quantize workload; says how")
      .def(
          "prepare_quantize",
          [](Accelerator& acc, const Shape& shape, const QuantizationParams& params,
             const std::string& float_type, const std::string& residency) {
            const Residency r = parse_residency(residency);
            FloatType ft = FloatType::f32;
            py::dtype in = py::dtype::of<float>();
            if (float_type == "float16") {
              ft = FloatType::f16;
              in = py::dtype("float16");
            } else if (float_type != "float32") {
              throw py::value_error("float_type = '" + float_type +
                                    "'; expected 'float32' or 'float16'");
            }
            const OpDesc op{OpKind::quantize, QuantizeDesc{shape, params, ft}};
            const OpOperands ops = op_operands(op);
            auto plan = acc.prepare({op, r});
            return PyPlan(plan, memory_of(acc, *plan, r), {{"x", in, ops.inputs[0].bytes}},
                          {{"q", params.dtype(), false, false, shape}});
          },
          py::arg("shape"), py::arg("params"), py::arg("float_type") = "float32", py::kw_only(),
          py::arg("residency") = "host",
          "A plan quantizing float arrays of this shape; plan.run(x) returns the storage")
      .def(
          "prepare_dequantize",
          [](Accelerator& acc, const Shape& shape, const QuantizationParams& params,
             const std::string& residency) {
            const Residency r = parse_residency(residency);
            const OpDesc op{OpKind::dequantize, QuantizeDesc{shape, params}};
            const OpOperands ops = op_operands(op);
            auto plan = acc.prepare({op, r});
            return PyPlan(plan, memory_of(acc, *plan, r),
                          {{"q", storage_dtype(params.dtype()), ops.inputs[0].bytes}},
                          {{"x", params.dtype(), true, false, shape}});
          },
          py::arg("shape"), py::arg("params"), py::kw_only(), py::arg("residency") = "host")
      .def(
          "prepare_matmul",
          [](Accelerator& acc, std::int64_t m, std::int64_t n, std::int64_t k,
             const QuantizationParams& a_params, const QuantizationParams& b_params,
             const std::string& b_layout, const std::optional<py::array>& b,
             const std::optional<py::array>& bias, bool integer, bool a_params_at_run,
             const std::string& residency) {
            const Residency r = parse_residency(residency);
            MatmulDesc d{m, n, k, a_params, b_params, parse_layout(b_layout)};
            if (a_params_at_run) {
              if (integer)
                throw py::value_error(
                    "a_params_at_run with integer=True; A's params at run are for "
                    "matmul_dequant (matmul_integer's result does not depend on A's scale)");
              if (a_params.scheme().granularity != Granularity::per_tensor)
                throw py::value_error("a_params_at_run with a_params " + a_params.to_string() +
                                      "; expected per_tensor params (their dtype and mapping are "
                                      "A's, each run brings the scale and zero point)");
              d.a_params_at_run = true;
            }
            if (bias) {
              if (integer) throw py::value_error("matmul_integer takes no bias");
              require_array(*bias, py::dtype::of<float>(), "bias");
              if (bias->ndim() != 1 || bias->shape(0) != n)
                throw py::value_error("bias has shape " + to_string(shape_of(*bias)) +
                                      "; expected [" + std::to_string(n) + "]");
              d.has_bias = true;
            }
            if (b) require_storage(*b, b_params.dtype(), d.b_shape(), "b");
            const OpDesc op{integer ? OpKind::matmul_integer : OpKind::matmul_dequant, d};
            const OpOperands ops = op_operands(op);
            std::vector<const void*> weights;
            if (b || bias) {
              weights.assign(ops.inputs.size(), nullptr);
              if (b) weights[1] = b->data();
              if (bias) weights[2] = bias->data();
            }
            auto plan = acc.prepare({op, r}, weights);
            std::vector<InputSpec> in{{"a", storage_dtype(a_params.dtype()), ops.inputs[0].bytes},
                                      {"b", storage_dtype(b_params.dtype()), ops.inputs[1].bytes}};
            if (bias) in.push_back({"bias", py::dtype::of<float>(), ops.inputs[2].bytes});
            if (a_params_at_run) {
              const std::size_t i = in.size();
              in.push_back({"a_scale", py::dtype::of<float>(), ops.inputs[i].bytes, true});
              in.push_back(
                  {"a_zero_point", py::dtype::of<std::int32_t>(), ops.inputs[i + 1].bytes, true});
            }
            return PyPlan(plan, memory_of(acc, *plan, r), std::move(in),
                          {{integer ? "c" : "y", DType::int8, !integer, integer, Shape{m, n}}});
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("a_params"), py::arg("b_params"),
          py::kw_only(), py::arg("b_layout") = "kn", py::arg("b") = py::none(),
          py::arg("bias") = py::none(), py::arg("integer") = false,
          py::arg("a_params_at_run") = false, py::arg("residency") = "host",
          "A plan of matmul_dequant (or matmul_integer with integer=True); b and bias given "
          "here are fixed (packed once) and left out of run()'s arguments. With "
          "a_params_at_run=True, a_params (per tensor) give only A's dtype and mapping and every "
          "run takes A's scale and zero point (plan.run(a, a_params=p))")
      .def(
          "prepare_dynamic_quantize",
          [](Accelerator& acc, const Shape& shape, const std::string& residency) {
            const Residency r = parse_residency(residency);
            const OpDesc op{OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{shape}};
            const OpOperands ops = op_operands(op);
            auto plan = acc.prepare({op, r});
            return PyPlan(plan, memory_of(acc, *plan, r),
                          {{"x", py::dtype::of<float>(), ops.inputs[0].bytes}},
                          {{"y", DType::uint8, false, false, shape},
                           {"y_scale", DType::int8, true, false, Shape{1}, true},
                           {"y_zero_point", DType::uint8, false, false, Shape{1}, true}});
          },
          py::arg("shape"), py::kw_only(), py::arg("residency") = "host",
          "A plan of ONNX's DynamicQuantizeLinear on float32 arrays of this shape: plan.run(x) "
          "returns (uint8 codes, scale [1] float32, zero point [1] uint8), the params from the "
          "array's range as QuantizationParams.from_range(uint8, affine, min, max) computes them")
      .def(
          "prepare_conv",
          [](Accelerator& acc, const Shape& x_shape, const QuantizationParams& x_params,
             const py::array& w, const Shape& w_shape, const QuantizationParams& w_params,
             const std::array<std::int64_t, 2>& stride, const std::array<std::int64_t, 4>& pads,
             const std::array<std::int64_t, 2>& dilation, std::int64_t groups,
             const std::optional<py::array>& bias, bool integer, const std::string& residency) {
            const Residency r = parse_residency(residency);
            if (x_shape.size() != 4)
              throw py::value_error("x_shape " + to_string(x_shape) + "; expected [N, C, H, W]");
            if (w_shape.size() != 4)
              throw py::value_error("w_shape " + to_string(w_shape) +
                                    "; expected [O, C / groups, KH, KW]");
            ConvDesc d;
            d.n = x_shape[0], d.c = x_shape[1], d.h = x_shape[2], d.w = x_shape[3];
            d.out_channels = w_shape[0];
            d.kernel_h = w_shape[2], d.kernel_w = w_shape[3];
            d.stride_h = stride[0], d.stride_w = stride[1];
            d.pad_top = pads[0], d.pad_left = pads[1], d.pad_bottom = pads[2],
            d.pad_right = pads[3];
            d.dilation_h = dilation[0], d.dilation_w = dilation[1];
            d.groups = groups;
            d.x_params = x_params;
            d.w_params = w_params;
            if (groups <= 0 || d.c % groups != 0 || w_shape[1] != d.c / groups)
              throw py::value_error("w_shape " + to_string(w_shape) + " with groups = " +
                                    std::to_string(groups) + " does not fit x_shape " +
                                    to_string(x_shape) + "; expected [O, C / groups, KH, KW]");
            if (bias) {
              if (integer) throw py::value_error("conv_integer takes no bias");
              require_array(*bias, py::dtype::of<float>(), "bias");
              if (bias->ndim() != 1 || bias->shape(0) != d.out_channels)
                throw py::value_error("bias has shape " + to_string(shape_of(*bias)) +
                                      "; expected [" + std::to_string(d.out_channels) + "]");
              d.bias = ConvBias::f32;
            }
            require_storage(w, w_params.dtype(), d.w_shape(), "w");
            const OpDesc op{integer ? OpKind::conv_integer : OpKind::conv_dequant, d};
            // The reference's own reasons (a ValueError) before any plugin is asked.
            reference::check_descriptor(op);
            const OpOperands ops = op_operands(op);
            std::vector<const void*> weights(ops.inputs.size(), nullptr);
            weights[1] = w.data();
            if (bias) weights[2] = bias->data();
            auto plan = acc.prepare({op, r}, weights);
            std::vector<InputSpec> in{{"x", storage_dtype(x_params.dtype()), ops.inputs[0].bytes},
                                      {"w", storage_dtype(w_params.dtype()), ops.inputs[1].bytes}};
            if (bias) in.push_back({"bias", py::dtype::of<float>(), ops.inputs[2].bytes});
            return PyPlan(plan, memory_of(acc, *plan, r), std::move(in),
                          {{integer ? "c" : "y", DType::int8, !integer, integer, d.y_shape()}});
          },
          py::arg("x_shape"), py::arg("x_params"), py::arg("w"), py::arg("w_shape"),
          py::arg("w_params"), py::kw_only(), py::arg("stride") = std::array<std::int64_t, 2>{1, 1},
          py::arg("pads") = std::array<std::int64_t, 4>{0, 0, 0, 0},
          py::arg("dilation") = std::array<std::int64_t, 2>{1, 1}, py::arg("groups") = 1,
          py::arg("bias") = py::none(), py::arg("integer") = false, py::arg("residency") = "host",
          "A plan of conv_dequant (float32 out, NCHW; conv_integer with integer=True, int32 "
          "out) with the weights w [O, C / groups, KH, KW] and the float32 bias fixed (packed "
          "once): plan.run(x) takes the activations' codes. pads are (top, left, bottom, right)");
}

}  // namespace qforge::python
