// Calibration observers (qforge::calibration) fed numpy batches.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "arrays.h"
#include "bindings.h"
#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/methods.h"
#include "qforge/calibration/minmax.h"
#include "qforge/calibration/observer.h"

namespace py = pybind11;

namespace qforge::python {

namespace cal = qforge::calibration;

namespace {

cal::Target make_target(DType dtype, Mapping mapping, const std::string& convention) {
  cal::Target t{dtype, mapping, cal::Convention::qforge};
  if (convention == "pytorch") t.convention = cal::Convention::pytorch;
  else if (convention != "qforge")
    throw py::value_error("convention = '" + convention + "'; expected 'qforge' or 'pytorch'");
  return t;
}

cal::MethodOptions make_method(const std::string& method, double percentile) {
  cal::MethodOptions o;
  auto m = cal::parse_method(method);
  if (!m)
    throw py::value_error("method = '" + method +
                          "'; expected minmax, percentile, entropy, mse or adaptive");
  o.method = *m;
  o.percentile = percentile;
  cal::validate(o);
  return o;
}

py::list ranges_list(const std::vector<cal::Range>& ranges) {
  py::list out;
  for (const auto& r : ranges) out.append(py::make_tuple(r.lo, r.hi));
  return out;
}

}  // namespace

void bind_calibration(py::module_& m) {
  py::class_<cal::Observer>(m, "Observer", "Feed float32 batches, then ask for params")
      .def(
          "observe",
          [](cal::Observer& o, const py::array& batch) {
            require_array(batch, py::dtype::of<float>(), "batch");
            const Shape shape = shape_of(batch);
            const auto n = static_cast<std::size_t>(element_count(shape));
            o.observe(std::span<const float>(static_cast<const float*>(batch.data()), n), shape);
          },
          py::arg("batch"), "Folds one float32 batch (C-contiguous) into the observer")
      .def(
          "params",
          [](const cal::Observer& o, DType dtype, Mapping mapping, const std::string& convention) {
            return o.params(make_target(dtype, mapping, convention));
          },
          py::arg("dtype") = DType::int8, py::arg("mapping") = Mapping::affine,
          py::arg("convention") = "qforge",
          "Params for the data seen so far (per channel along axis when the observer has one)")
      .def_property_readonly("kind", [](const cal::Observer& o) { return std::string(o.kind()); })
      .def_property_readonly("axis", [](const cal::Observer& o) { return o.axis(); })
      .def_property_readonly("channels", &cal::Observer::channels)
      .def_property_readonly("has_data", &cal::Observer::has_data)
      .def_property_readonly("stats", [](const cal::Observer& o) {
        const cal::ObserverStats& s = o.stats();
        py::dict d;
        d["batches"] = s.batches;
        d["empty_batches"] = s.empty_batches;
        d["values"] = s.values;
        d["non_finite"] = s.non_finite;
        return d;
      });

  py::class_<cal::RangeObserver, cal::Observer>(m, "RangeObserver")
      .def(
          "ranges", [](const cal::RangeObserver& o) { return ranges_list(o.ranges()); },
          "The tracked (lo, hi) of each channel (one per tensor)");

  py::class_<cal::MinMaxObserver, cal::RangeObserver>(
      m, "MinMaxObserver", "PyTorch's MinMaxObserver (PerChannelMinMaxObserver with an axis)")
      .def(py::init<std::optional<int>>(), py::arg("axis") = py::none());

  py::class_<cal::MovingAverageMinMaxObserver, cal::RangeObserver>(
      m, "MovingAverageMinMaxObserver", "PyTorch's MovingAverage(PerChannel)MinMaxObserver")
      .def(py::init<float, std::optional<int>>(),
           py::arg("averaging_constant") =
               cal::MovingAverageMinMaxObserver::kDefaultAveragingConstant,
           py::arg("axis") = py::none())
      .def_property_readonly("averaging_constant",
                             &cal::MovingAverageMinMaxObserver::averaging_constant);

  py::class_<cal::HistogramObserver, cal::Observer>(
      m, "HistogramObserver",
      "A histogram per tensor (or channel); params by minmax, percentile, entropy, mse or "
      "adaptive (docs/CALIBRATION.md)")
      .def(py::init(
               [](const std::string& method, double percentile, int bins, std::optional<int> axis) {
                 return cal::HistogramObserver(make_method(method, percentile), bins, axis);
               }),
           py::arg("method") = "entropy", py::arg("percentile") = 99.99,
           py::arg("bins") = cal::Histogram::kDefaultBins, py::arg("axis") = py::none())
      .def(
          "params_by",
          [](const cal::HistogramObserver& o, const std::string& method, DType dtype,
             Mapping mapping, double percentile, const std::string& convention) {
            return o.params(make_target(dtype, mapping, convention),
                            make_method(method, percentile));
          },
          py::arg("method"), py::arg("dtype") = DType::int8, py::arg("mapping") = Mapping::affine,
          py::arg("percentile") = 99.99, py::arg("convention") = "qforge",
          "Params by another method than the observer's, without observing again")
      .def(
          "ranges",
          [](const cal::HistogramObserver& o, DType dtype, Mapping mapping) {
            return ranges_list(o.ranges(make_target(dtype, mapping, "qforge"), o.method()));
          },
          py::arg("dtype") = DType::int8, py::arg("mapping") = Mapping::affine)
      .def_property_readonly("bins", &cal::HistogramObserver::bins)
      .def_property_readonly("method", [](const cal::HistogramObserver& o) {
        return std::string(cal::to_string(o.method().method));
      });
}

}  // namespace qforge::python
