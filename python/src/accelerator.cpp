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
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"

namespace py = pybind11;

namespace qforge::python {

namespace {

// One operand of a plan as Python sees it.
struct InputSpec {
  std::string name;
  py::dtype dtype;
  std::size_t bytes = 0;
};
struct OutputSpec {
  std::string name;
  DType dtype = DType::int8;  // when !is_float and !is_int32
  bool is_float = false;
  bool is_int32 = false;
  Shape shape;
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

  // Inputs in operand order, leaving out those fixed when the plan was made.
  py::object run(const py::args& args) const {
    if (!memory_.host)
      throw py::type_error("Plan.run takes numpy arrays, and this plan runs on cuda:" +
                           std::to_string(memory_.device) +
                           "; pass device tensors to Plan.run_dlpack(inputs, outputs)");
    std::array<const void*, kMaxOperands> in{};
    check_inputs(args, in);
    std::array<py::array, kMaxOperands> outs;
    std::array<void*, kMaxOperands> out_ptrs{};
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      outs[i] = py::array(outputs_[i].dtype, outputs_[i].extents, outputs_[i].strides);
      out_ptrs[i] = outs[i].mutable_data();
    }
    const std::span<const void* const> ins(in.data(), inputs_.size());
    const std::span<void* const> os(out_ptrs.data(), outputs_.size());
    if (plan_->concurrency() == PlanConcurrency::concurrent) {
      py::gil_scoped_release release;
      plan_->run(ins, os);
    } else {
      plan_->run(ins, os);
    }
    if (outputs_.size() == 1) return std::move(outs[0]);
    py::tuple t(outputs_.size());
    for (std::size_t i = 0; i < outputs_.size(); ++i) t[i] = std::move(outs[i]);
    return std::move(t);
  }

  // Seconds per run of `iterations` runs in a C++ loop on the same arrays: the plan's own cost,
  // against which the Python call's overhead is measured (benchmarks/python).
  double seconds_per_run_in_cpp(int iterations, const py::args& args) const {
    if (!memory_.host) throw py::type_error("Plan._seconds_per_run_in_cpp: host plans only");
    std::array<const void*, kMaxOperands> in{};
    check_inputs(args, in);
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
  void run_dlpack(const py::sequence& inputs, const py::sequence& outputs) const {
    if (inputs.size() != reads_)
      throw py::type_error("Plan.run_dlpack takes " + std::to_string(reads_) + " input(s) (" +
                           read_names_ + "); got " + std::to_string(inputs.size()));
    if (outputs.size() != outputs_.size())
      throw py::type_error("Plan.run_dlpack writes " + std::to_string(outputs_.size()) +
                           " output(s); got " + std::to_string(outputs.size()));
    std::array<DlpackOperand, 2 * kMaxOperands> held;
    std::array<const void*, kMaxOperands> in{};
    std::array<void*, kMaxOperands> out{};
    std::size_t next = 0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (!plan_->reads_input(i)) continue;
      const InputSpec& spec = inputs_[i];
      held[i] = dlpack_operand(inputs[next++], memory_, spec.dtype.kind(),
                               static_cast<int>(8 * itemsizes_[i]), spec.bytes,
                               "Plan.run_dlpack: " + spec.name);
      in[i] = held[i].data;
    }
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      const Output& o = outputs_[i];
      held[kMaxOperands + i] = dlpack_operand(outputs[i], memory_, o.dtype.kind(),
                                              static_cast<int>(8 * itemsize(o.dtype)), o.bytes,
                                              "Plan.run_dlpack: output " + std::to_string(i));
      out[i] = held[kMaxOperands + i].data;
    }
    const std::span<const void* const> ins(in.data(), inputs_.size());
    const std::span<void* const> os(out.data(), outputs_.size());
    if (plan_->concurrency() == PlanConcurrency::concurrent) {
      py::gil_scoped_release release;
      plan_->run(ins, os);
    } else {
      plan_->run(ins, os);
    }
  }

  const Plan& plan() const { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const { return plan_; }
  const OperandMemory& memory() const { return memory_; }
  std::size_t inputs_read() const { return reads_; }
  std::size_t output_count() const { return outputs_.size(); }
  const InputSpec& input(std::size_t i) const { return inputs_.at(i); }
  // Output i's element type and size in bytes.
  const py::dtype& output_dtype(std::size_t i) const { return outputs_.at(i).dtype; }
  std::size_t output_bytes(std::size_t i) const { return outputs_.at(i).bytes; }

 private:
  struct Output {
    py::dtype dtype;
    std::size_t bytes = 0;
    std::vector<py::ssize_t> extents, strides;
  };

  // Checks run()'s arguments and writes the plan's input pointers (null where fixed).
  void check_inputs(const py::args& args, std::array<const void*, kMaxOperands>& in) const {
    if (args.size() != reads_)
      throw py::type_error("Plan.run takes " + std::to_string(reads_) + " array(s) (" +
                           read_names_ + "); got " + std::to_string(args.size()));
    std::size_t next = 0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (!plan_->reads_input(i)) continue;
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
  }

  std::shared_ptr<const Plan> plan_;
  OperandMemory memory_;
  std::vector<InputSpec> inputs_;
  std::vector<Output> outputs_;
  std::size_t reads_ = 0;
  std::string read_names_;
  std::vector<py::ssize_t> itemsizes_;  // per input
};

// Two device plans run back to back by one call, for qforge.torch's layers (quantize, then
// matmul_dequant or conv_dequant): the first writes its one output into `between`, a device
// buffer of the caller's checked once here and kept alive by the chain, which the second reads
// as its one input. A layer then costs one Python call and one GIL release, with no DLPack
// exchange, instead of two Plan.run_dlpack calls and four exchanges.
//
// run() takes the first's input and the second's output as device addresses (a torch tensor's
// data_ptr()): the caller vouches for them (contiguous, on the plans' device, of the element
// type and size the plans read and write), as the chain cannot see what they point to. The
// kernels queue on the device's legacy default stream, as run_dlpack's do; ordering them with
// the caller's stream is the caller's (qforge.torch does it once per layer).
class DeviceChain {
 public:
  DeviceChain(const PyPlan& first, const PyPlan& second, const py::handle& between)
      : first_(first.shared_plan()), second_(second.shared_plan()) {
    const OperandMemory& m = first.memory();
    if (m.host || second.memory().host || second.memory().device != m.device)
      throw py::value_error("_DeviceChain: both plans must run on one CUDA device; got " +
                            where(first.memory()) + " and " + where(second.memory()));
    if (first.inputs_read() != 1 || first.output_count() != 1)
      throw py::value_error(
          "_DeviceChain: the first plan must read one input and write one "
          "output; " +
          describe(first.plan().desc()) + " reads " + std::to_string(first.inputs_read()) +
          " and writes " + std::to_string(first.output_count()));
    if (second.inputs_read() != 1 || !second.plan().reads_input(0) || second.output_count() != 1)
      throw py::value_error(
          "_DeviceChain: the second plan must read only its first input (the "
          "others fixed) and write one output; " +
          describe(second.plan().desc()) + " does not");
    const py::dtype& mid = first.output_dtype(0);
    between_bytes_ = first.output_bytes(0);
    if (!mid.is(second.input(0).dtype) && !mid.equal(second.input(0).dtype))
      throw py::type_error("_DeviceChain: the first plan writes " +
                           mid.attr("name").cast<std::string>() + " and the second reads " +
                           second.input(0).dtype.attr("name").cast<std::string>());
    if (second.input(0).bytes != between_bytes_)
      throw py::value_error("_DeviceChain: the first plan writes " +
                            std::to_string(between_bytes_) + " bytes and the second reads " +
                            std::to_string(second.input(0).bytes));
    in_bytes_ = first.input(0).bytes;
    n0_ = op_operands(first.plan().desc()).inputs.size();
    n1_ = op_operands(second.plan().desc()).inputs.size();
    out_bytes_ = second.output_bytes(0);
    concurrent_ = first.plan().concurrency() == PlanConcurrency::concurrent &&
                  second.plan().concurrency() == PlanConcurrency::concurrent;
    between_ = dlpack_operand(between, m, mid.kind(), static_cast<int>(8 * mid.itemsize()),
                              between_bytes_, "_DeviceChain: between");
  }

  void run(std::uintptr_t x, std::uintptr_t y) const {
    if ((x == 0 && in_bytes_ != 0) || (y == 0 && out_bytes_ != 0))
      throw py::value_error(
          "_DeviceChain.run: a null device address; expected the input's and "
          "the output's data_ptr()");
    const void* in0[kMaxOperands] = {reinterpret_cast<const void*>(x)};
    void* mid[1] = {between_.data};
    const void* in1[kMaxOperands] = {between_.data};
    void* out[1] = {reinterpret_cast<void*>(y)};
    auto go = [&] {
      std::lock_guard lock(mutex_);  // runs share `between`
      first_->run(std::span<const void* const>(in0, n0_), std::span<void* const>(mid, 1));
      second_->run(std::span<const void* const>(in1, n1_), std::span<void* const>(out, 1));
    };
    if (concurrent_) {
      py::gil_scoped_release release;
      go();
    } else {
      go();
    }
  }

  std::size_t between_bytes() const { return between_bytes_; }

 private:
  static std::string where(const OperandMemory& m) {
    return m.host ? std::string("the host") : "cuda:" + std::to_string(m.device);
  }

  std::shared_ptr<const Plan> first_, second_;
  DlpackOperand between_;  // its capsule keeps the caller's buffer alive
  std::size_t between_bytes_ = 0, in_bytes_ = 0, out_bytes_ = 0;
  std::size_t n0_ = 0, n1_ = 0;  // the plans' input counts, fixed ones included
  bool concurrent_ = false;
  mutable std::mutex mutex_;
};

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

// Where the plan's operands live: host memory, or the device of a plugin that has its own.
OperandMemory memory_of(const Accelerator& acc, const Plan& plan) {
  for (const auto& p : acc.plugins())
    if (p.name == plan.backend()) return {p.ops->host_memory(), plan.device()};
  return {true, plan.device()};
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
      .def("run", &PyPlan::run,
           "Runs the op on numpy arrays (the inputs not fixed at prepare time, in operand order) "
           "and returns its output array(s)")
      .def("__call__", &PyPlan::run)
      .def("run_dlpack", &PyPlan::run_dlpack, py::arg("inputs"), py::arg("outputs"),
           "Runs the op on DLPack producers (torch tensors; on the plan's device, CUDA "
           "included): the inputs run() takes, and the outputs, written in place")
      .def_property_readonly("host_memory", [](const PyPlan& p) { return p.memory().host; })
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

  py::class_<DeviceChain>(m, "_DeviceChain",
                          "Two device plans run back to back by one call (qforge.torch's layers)")
      .def(py::init<const PyPlan&, const PyPlan&, const py::handle&>(), py::arg("first"),
           py::arg("second"), py::arg("between"),
           "first: one input, one output, written into `between` (a DLPack producer on the "
           "plans' device, checked here and kept alive); second: reads it as its only input")
      .def("run", &DeviceChain::run, py::arg("x"), py::arg("y"),
           "Runs both plans: x is the first's input, y the second's output, as device addresses "
           "(torch's data_ptr()) the caller vouches for")
      .def_property_readonly("between_bytes", &DeviceChain::between_bytes);

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
             const std::string& float_type) {
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
            auto plan = acc.prepare({op});
            return PyPlan(plan, memory_of(acc, *plan), {{"x", in, ops.inputs[0].bytes}},
                          {{"q", params.dtype(), false, false, shape}});
          },
          py::arg("shape"), py::arg("params"), py::arg("float_type") = "float32",
          "A plan quantizing float arrays of this shape; plan.run(x) returns the storage")
      .def(
          "prepare_dequantize",
          [](Accelerator& acc, const Shape& shape, const QuantizationParams& params) {
            const OpDesc op{OpKind::dequantize, QuantizeDesc{shape, params}};
            const OpOperands ops = op_operands(op);
            auto plan = acc.prepare({op});
            return PyPlan(plan, memory_of(acc, *plan),
                          {{"q", storage_dtype(params.dtype()), ops.inputs[0].bytes}},
                          {{"x", params.dtype(), true, false, shape}});
          },
          py::arg("shape"), py::arg("params"))
      .def(
          "prepare_matmul",
          [](Accelerator& acc, std::int64_t m, std::int64_t n, std::int64_t k,
             const QuantizationParams& a_params, const QuantizationParams& b_params,
             const std::string& b_layout, const std::optional<py::array>& b,
             const std::optional<py::array>& bias, bool integer) {
            MatmulDesc d{m, n, k, a_params, b_params, parse_layout(b_layout)};
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
            auto plan = acc.prepare({op}, weights);
            std::vector<InputSpec> in{{"a", storage_dtype(a_params.dtype()), ops.inputs[0].bytes},
                                      {"b", storage_dtype(b_params.dtype()), ops.inputs[1].bytes}};
            if (bias) in.push_back({"bias", py::dtype::of<float>(), ops.inputs[2].bytes});
            return PyPlan(plan, memory_of(acc, *plan), std::move(in),
                          {{integer ? "c" : "y", DType::int8, !integer, integer, Shape{m, n}}});
          },
          py::arg("m"), py::arg("n"), py::arg("k"), py::arg("a_params"), py::arg("b_params"),
          py::kw_only(), py::arg("b_layout") = "kn", py::arg("b") = py::none(),
          py::arg("bias") = py::none(), py::arg("integer") = false,
          "A plan of matmul_dequant (or matmul_integer with integer=True); b and bias given "
          "here are fixed (packed once) and left out of run()'s arguments")
      .def(
          "prepare_conv",
          [](Accelerator& acc, const Shape& x_shape, const QuantizationParams& x_params,
             const py::array& w, const Shape& w_shape, const QuantizationParams& w_params,
             const std::array<std::int64_t, 2>& stride, const std::array<std::int64_t, 4>& pads,
             const std::array<std::int64_t, 2>& dilation, std::int64_t groups,
             const std::optional<py::array>& bias, bool integer) {
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
            auto plan = acc.prepare({op}, weights);
            std::vector<InputSpec> in{{"x", storage_dtype(x_params.dtype()), ops.inputs[0].bytes},
                                      {"w", storage_dtype(w_params.dtype()), ops.inputs[1].bytes}};
            if (bias) in.push_back({"bias", py::dtype::of<float>(), ops.inputs[2].bytes});
            return PyPlan(plan, memory_of(acc, *plan), std::move(in),
                          {{integer ? "c" : "y", DType::int8, !integer, integer, d.y_shape()}});
          },
          py::arg("x_shape"), py::arg("x_params"), py::arg("w"), py::arg("w_shape"),
          py::arg("w_params"), py::kw_only(), py::arg("stride") = std::array<std::int64_t, 2>{1, 1},
          py::arg("pads") = std::array<std::int64_t, 4>{0, 0, 0, 0},
          py::arg("dilation") = std::array<std::int64_t, 2>{1, 1}, py::arg("groups") = 1,
          py::arg("bias") = py::none(), py::arg("integer") = false,
          "A plan of conv_dequant (float32 out, NCHW; conv_integer with integer=True, int32 "
          "out) with the weights w [O, C / groups, KH, KW] and the float32 bias fixed (packed "
          "once): plan.run(x) takes the activations' codes. pads are (top, left, bottom, right)");
}

}  // namespace qforge::python
