// qforge.torch's layers as one call into qforge: two plans run back to back, the first's output
// handed to the second in C++, so that a layer costs one Python call and one GIL release.
//
// _DeviceChain: a quantize plan, then a matmul_dequant or conv_dequant plan with the activations'
// params fixed (static and explicit activations), on one CUDA device.
// _DynamicChain: a dynamic_quantize_linear plan (the batch's range, its uint8 codes, scale and
// zero point), then a matmul_dequant plan that takes A's params at run
// (MatmulDesc::a_params_at_run), on the host or on one CUDA device: the scale and zero point
// the first computes are passed to the second without reaching Python.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "bindings.h"
#include "dlpack_operand.h"
#include "py_plan.h"
#include "qforge/op_desc.h"
#include "qforge/op_table.h"

namespace py = pybind11;

namespace qforge::python {

namespace {

std::string where(const OperandMemory& m) {
  if (m.staged)
    return "the host (a plan of cuda:" + std::to_string(m.device) +
           " prepared with residency='host'; prepare it with residency='device')";
  return m.host ? std::string("the host") : "cuda:" + std::to_string(m.device);
}

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
  std::shared_ptr<const Plan> first_, second_;
  DlpackOperand between_;  // its capsule keeps the caller's buffer alive
  std::size_t between_bytes_ = 0, in_bytes_ = 0, out_bytes_ = 0;
  std::size_t n0_ = 0, n1_ = 0;  // the plans' input counts, fixed ones included
  bool concurrent_ = false;
  mutable std::mutex mutex_;
};

// dynamic_quantize_linear, then matmul_dequant with A's params at run (the weights and bias
// fixed in its plan). `between` holds the uint8 codes, in the plans' memory (a numpy array or a
// CPU tensor for host plans, a CUDA tensor for device plans), checked once here and kept alive.
// The scale and the zero point are host values of the chain's, written by the first plan
// (which, on a device, waits for the range reduction before it returns: op_table.h's
// host-resident params) and read by the second. run() takes the float32 input's and the output's
// addresses (torch's data_ptr()), which the caller vouches for, as _DeviceChain's.
class DynamicChain {
 public:
  DynamicChain(const PyPlan& first, const PyPlan& second, const py::handle& between)
      : first_(first.shared_plan()), second_(second.shared_plan()) {
    const OperandMemory& m = first.memory();
    if (m.host != second.memory().host || (!m.host && m.device != second.memory().device))
      throw py::value_error("_DynamicChain: both plans must run in one memory; got " + where(m) +
                            " and " + where(second.memory()));
    if (first.plan().desc().op != OpKind::dynamic_quantize_linear)
      throw py::value_error("_DynamicChain: the first plan must be dynamic_quantize_linear; got " +
                            describe(first.plan().desc()));
    if (!second.a_params_at_run() || second.inputs_read() != 3 || !second.plan().reads_input(0))
      throw py::value_error(
          "_DynamicChain: the second plan must be a matmul_dequant with A's params at run that "
          "reads only A and them (B and the bias fixed); got " +
          describe(second.plan().desc()));
    between_bytes_ = first.output_bytes(0);
    if (second.input(0).bytes != between_bytes_ ||
        !first.output_dtype(0).equal(second.input(0).dtype))
      throw py::value_error("_DynamicChain: the first plan writes " +
                            std::to_string(between_bytes_) + " bytes of " +
                            first.output_dtype(0).attr("name").cast<std::string>() +
                            " and the second reads " + std::to_string(second.input(0).bytes) +
                            " of " + second.input(0).dtype.attr("name").cast<std::string>());
    in_bytes_ = first.input(0).bytes;
    out_bytes_ = second.output_bytes(0);
    n1_ = second.input_count();
    concurrent_ = first.plan().concurrency() == PlanConcurrency::concurrent &&
                  second.plan().concurrency() == PlanConcurrency::concurrent;
    between_ = dlpack_operand(between, m, 'u', 8, between_bytes_, "_DynamicChain: between");
  }

  void run(std::uintptr_t x, std::uintptr_t y) const {
    if ((x == 0 && in_bytes_ != 0) || (y == 0 && out_bytes_ != 0))
      throw py::value_error(
          "_DynamicChain.run: a null address; expected the input's and the output's "
          "data_ptr()");
    auto go = [&] {
      std::lock_guard lock(mutex_);  // runs share `between` and the params
      const void* in0[1] = {reinterpret_cast<const void*>(x)};
      void* out0[3] = {between_.data, &scale_, &zero_point_u8_};
      first_->run(std::span<const void* const>(in0, 1), std::span<void* const>(out0, 3));
      zero_point_ = zero_point_u8_;
      const void* in1[kMaxOperands] = {between_.data};
      in1[n1_ - 2] = &scale_;
      in1[n1_ - 1] = &zero_point_;
      void* out1[1] = {reinterpret_cast<void*>(y)};
      second_->run(std::span<const void* const>(in1, n1_), std::span<void* const>(out1, 1));
    };
    if (concurrent_) {
      py::gil_scoped_release release;
      go();
    } else {
      go();
    }
  }

  // The last run's scale and zero point (what the batch was quantized with).
  py::tuple last_params() const {
    std::lock_guard lock(mutex_);
    return py::make_tuple(scale_, zero_point_);
  }
  std::size_t between_bytes() const { return between_bytes_; }

 private:
  std::shared_ptr<const Plan> first_, second_;
  DlpackOperand between_;  // its capsule keeps the caller's buffer alive
  std::size_t between_bytes_ = 0, in_bytes_ = 0, out_bytes_ = 0;
  std::size_t n1_ = 0;  // the second plan's input count, fixed ones included
  bool concurrent_ = false;
  mutable std::mutex mutex_;
  mutable float scale_ = 0;
  mutable std::uint8_t zero_point_u8_ = 0;
  mutable std::int32_t zero_point_ = 0;
};

}  // namespace

void bind_chains(py::module_& m) {
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

  py::class_<DynamicChain>(m, "_DynamicChain",
                           "dynamic_quantize_linear, then matmul_dequant with A's params at run, "
                           "in one call (qforge.torch's dynamic layers)")
      .def(py::init<const PyPlan&, const PyPlan&, const py::handle&>(), py::arg("first"),
           py::arg("second"), py::arg("between"),
           "first: a dynamic_quantize_linear plan writing its uint8 codes into `between` (a "
           "DLPack producer in the plans' memory, checked here and kept alive); second: a "
           "matmul_dequant plan with a_params_at_run, B and the bias fixed")
      .def("run", &DynamicChain::run, py::arg("x"), py::arg("y"),
           "Runs both plans: x is the float32 input's address, y the output's (torch's "
           "data_ptr()), which the caller vouches for")
      .def_property_readonly("last_params", &DynamicChain::last_params,
                             "(scale, zero point) of the last run")
      .def_property_readonly("between_bytes", &DynamicChain::between_bytes);
}

}  // namespace qforge::python
