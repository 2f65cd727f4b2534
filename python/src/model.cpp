// The model layer from Python: import an ONNX file, calibrate it on batches from a Python
// iterator (one batch at a time, nothing kept), build the QuantizedModel, run it on dicts of
// numpy arrays, and report per-layer SQNR and timing.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "qforge/accelerator.h"
#include "qforge/calibration/methods.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/executor.h"
#include "qforge/model/export_c.h"
#include "qforge/model/export_c_recipe.h"
#include "qforge/model/layer_report.h"
#include "qforge/model/onnx_import.h"
#include "qforge/model/qdq_export.h"
#include "qforge/model/quantized_model.h"
#include "qforge/model/recipe.h"

namespace py = pybind11;

namespace qforge::python {

namespace mdl = qforge::model;

namespace {

mdl::ElementType element_type(const py::dtype& d, const std::string& name) {
  const char kind = d.kind();
  const auto size = itemsize(d);
  if (kind == 'f' && size == 4) return mdl::ElementType::float32;
  if (kind == 'f' && size == 8) return mdl::ElementType::float64;
  if (kind == 'f' && size == 2) return mdl::ElementType::float16;
  if (kind == 'b' && size == 1) return mdl::ElementType::boolean;
  if (kind == 'i' && size == 1) return mdl::ElementType::int8;
  if (kind == 'i' && size == 2) return mdl::ElementType::int16;
  if (kind == 'i' && size == 4) return mdl::ElementType::int32;
  if (kind == 'i' && size == 8) return mdl::ElementType::int64;
  if (kind == 'u' && size == 1) return mdl::ElementType::uint8;
  if (kind == 'u' && size == 2) return mdl::ElementType::uint16;
  if (kind == 'u' && size == 4) return mdl::ElementType::uint32;
  if (kind == 'u' && size == 8) return mdl::ElementType::uint64;
  throw py::type_error("input '" + name + "' has dtype " +
                       py::str(static_cast<const py::handle&>(d)).cast<std::string>() +
                       ", which no ONNX tensor type of qforge holds");
}

py::dtype numpy_dtype(mdl::ElementType t) {
  switch (t) {
    case mdl::ElementType::float32: return py::dtype("float32");
    case mdl::ElementType::float64: return py::dtype("float64");
    case mdl::ElementType::float16: return py::dtype("float16");
    case mdl::ElementType::boolean: return py::dtype("bool");
    case mdl::ElementType::int8: return py::dtype("int8");
    case mdl::ElementType::int16: return py::dtype("int16");
    case mdl::ElementType::int32: return py::dtype("int32");
    case mdl::ElementType::int64: return py::dtype("int64");
    case mdl::ElementType::uint8: return py::dtype("uint8");
    case mdl::ElementType::uint16: return py::dtype("uint16");
    case mdl::ElementType::uint32: return py::dtype("uint32");
    case mdl::ElementType::uint64: return py::dtype("uint64");
  }
  throw py::type_error("unknown element type");
}

// A dict of arrays (any layout: the model layer copies its inputs anyway) as a TensorMap.
mdl::TensorMap tensor_map(const py::dict& inputs) {
  mdl::TensorMap out;
  for (const auto& [key, value] : inputs) {
    const auto name = py::str(key).cast<std::string>();
    if (!py::isinstance<py::array>(value))
      throw py::type_error("input '" + name + "' is a " +
                           py::str(py::type::handle_of(value)).cast<std::string>() +
                           "; expected a numpy array");
    auto a = py::array::ensure(value, py::array::c_style);
    mdl::Tensor t(element_type(a.dtype(), name), shape_of(a));
    std::memcpy(t.data(), a.data(), t.byte_size());
    out.emplace(name, std::move(t));
  }
  return out;
}

py::dict array_dict(const mdl::TensorMap& tensors) {
  py::dict out;
  for (const auto& [name, t] : tensors) {
    py::array a = new_array(numpy_dtype(t.type()), t.shape());
    std::memcpy(a.mutable_data(), t.data(), t.byte_size());
    out[py::str(name)] = a;
  }
  return out;
}

// Everything a quantized model needs alive: the float model (for reports), the recipe, the
// calibration and the accelerator whose plans the layers hold.
struct PyModel {
  std::filesystem::path onnx_path;
  mdl::Recipe recipe;
  std::shared_ptr<Accelerator> accelerator;
  std::unique_ptr<mdl::Executor> float_model;
  mdl::CalibrationResult calibration;
  std::unique_ptr<mdl::QuantizedModel> quantized;
};

py::list layer_list(const mdl::QuantizedModel& q) {
  py::list out;
  for (const auto& l : q.layers()) {
    py::dict d;
    d["name"] = l.name;
    d["op_type"] = l.op_type;
    d["input"] = l.input;
    d["output"] = l.output;
    d["mode"] = std::string(mdl::to_string(l.mode));
    d["settings"] = l.settings;
    d["n"] = l.n;
    d["k"] = l.k;
    d["b_params"] = l.b_params;
    d["a_params"] = l.a_params;
    d["float_weight_bytes"] = l.float_weight_bytes;
    d["quantized_weight_bytes"] = l.quantized_weight_bytes;
    d["backend"] = l.backend;
    d["kernel"] = l.kernel;
    d["int8_input"] = l.int8_input;
    d["int8_output"] = l.int8_output;
    out.append(d);
  }
  return out;
}

py::object layer_dict(const std::optional<mdl::LayerQuantization>& q) {
  if (!q) return py::none();
  py::dict d;
  if (q->weights) {
    py::dict w;
    w["dtype"] = q->weights->dtype;
    w["mapping"] = q->weights->mapping;
    w["granularity"] = q->weights->granularity;
    w["axis"] = q->weights->axis;
    w["block_size"] = q->weights->block_size;
    w["observer"] = std::string(calibration::to_string(q->weights->observer));
    w["rounding"] = std::string(mdl::to_string(q->weights->rounding));
    d["weights"] = w;
  } else {
    d["weights"] = py::none();
  }
  if (q->activations) {
    const auto& a = *q->activations;
    py::dict w;
    w["mode"] = std::string(mdl::to_string(a.mode));
    w["dtype"] = a.dtype;
    w["mapping"] = a.mapping;
    w["method"] = std::string(calibration::to_string(a.calibration.method));
    w["percentile"] = a.calibration.percentile;
    w["scale"] = a.scale;
    w["zero_point"] = a.zero_point;
    d["activations"] = w;
  } else {
    d["activations"] = py::none();
  }
  d["describe"] = mdl::describe(q);
  return std::move(d);
}

}  // namespace

void bind_model(py::module_& m) {
  m.def(
      "resolve_recipe",
      [](const std::string& recipe_json, const std::optional<std::filesystem::path>& recipe_path,
         const std::vector<std::pair<std::string, std::string>>& nodes) {
        const mdl::Recipe recipe =
            recipe_path ? mdl::load_recipe(*recipe_path) : mdl::recipe_from_json(recipe_json);
        std::vector<mdl::NodeRef> refs;
        for (const auto& [name, op] : nodes) refs.push_back({name, op});
        const mdl::RecipeResolution res = mdl::resolve(recipe, refs);
        py::list out;
        for (const auto& d : res.nodes) {
          py::object layer = layer_dict(d.quantize);
          // Broad decisions (the default, optional rules) leave what cannot run in float.
          if (!layer.is_none())
            layer["lenient"] = d.by_default() || recipe.rules.at(d.rule).optional;
          out.append(layer);
        }
        return py::make_tuple(out, mdl::format_report(recipe, res, refs));
      },
      py::arg("recipe_json"), py::arg("recipe_path"), py::arg("nodes"),
      "The recipe's decision for each (name, op_type), and the resolution report");

  py::class_<PyModel>(m, "QuantizedModel", "A model quantized by qforge.quantize_model")
      .def(
          "run",
          [](const PyModel& pm, const py::dict& inputs, const std::vector<std::string>& keep) {
            mdl::TensorMap in = tensor_map(inputs);
            mdl::TensorMap out;
            {
              py::gil_scoped_release release;
              out = pm.quantized->run(in, keep);
            }
            return array_dict(out);
          },
          py::arg("inputs"), py::arg("keep") = std::vector<std::string>{},
          "Runs the quantized model; returns every graph output (and the kept intermediates)")
      .def(
          "run_float",
          [](const PyModel& pm, const py::dict& inputs) {
            mdl::TensorMap in = tensor_map(inputs);
            mdl::TensorMap out;
            {
              py::gil_scoped_release release;
              out = pm.float_model->run(in);
            }
            return array_dict(out);
          },
          py::arg("inputs"), "Runs the float model the quantized one was made from")
      .def(
          "report",
          [](const PyModel& pm, const py::list& batches, int timed_runs) {
            std::vector<mdl::TensorMap> data;
            for (const auto& b : batches) data.push_back(tensor_map(b.cast<py::dict>()));
            mdl::ModelReport r;
            {
              py::gil_scoped_release release;
              r = mdl::layer_report(*pm.float_model, *pm.quantized, data,
                                    mdl::ReportOptions{timed_runs});
            }
            return py::make_tuple(mdl::report_to_json(r), mdl::format_report(r),
                                  mdl::report_to_svg(r));
          },
          py::arg("batches"), py::arg("timed_runs"),
          "(json, text, svg) of the per-layer report on these batches")
      .def(
          "export_onnx",
          [](const PyModel& pm, const std::filesystem::path& path) {
            py::gil_scoped_release release;
            mdl::export_qdq_onnx(*pm.quantized, path);
          },
          py::arg("path"), "Writes the QDQ ONNX model atomically")
      .def(
          "export_onnx_bytes",
          [](const PyModel& pm) {
            std::vector<std::byte> bytes;
            {
              py::gil_scoped_release release;
              bytes = mdl::export_qdq_onnx_bytes(*pm.quantized);
            }
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          "The serialized QDQ ModelProto")
      .def(
          "export_c",
          [](const PyModel& pm, const std::filesystem::path& dir, const py::list& batches,
             bool measure) {
            // The C export lowers the float model itself (TFLite's conventions, every
            // activation calibrated on these batches) as the model's recipe asks.
            std::vector<mdl::TensorMap> data;
            for (const auto& b : batches) data.push_back(tensor_map(b.cast<py::dict>()));
            mdl::CExport c;
            std::optional<mdl::CFootprint> footprint;
            {
              py::gil_scoped_release release;
              const mdl::Graph graph = mdl::import_onnx_file(pm.onnx_path);
              const mdl::LowerOptions options = mdl::lower_options_from_recipe(pm.recipe, graph);
              c = mdl::emit_c(mdl::lower_to_integer(graph, data, options));
              mdl::write_c_export(c, dir);
              if (measure) footprint = mdl::measure_footprint(dir);
            }
            py::dict d;
            py::list files;
            for (const auto& [name, text] : c.files) files.append(name);
            d["files"] = files;
            d["arena_bytes"] = c.report.arena_bytes;
            d["weight_bytes"] = c.report.weight_bytes;
            d["multiply_accumulates"] = c.report.multiply_accumulates;
            d["input_size"] = c.report.input_size;
            d["output_size"] = c.report.output_size;
            if (footprint) {
              d["flash_bytes"] = footprint->text_bytes + footprint->data_bytes;
              d["static_ram_bytes"] = footprint->bss_bytes;
              d["stack_bytes"] = footprint->stack_bytes;
              d["measured_as"] = footprint->command;
            }
            return d;
          },
          py::arg("dir"), py::arg("batches"), py::arg("measure"),
          "Writes the standalone C export into dir; returns its report")
      .def_property_readonly("layers", [](const PyModel& pm) { return layer_list(*pm.quantized); })
      .def_property_readonly("skipped",
                             [](const PyModel& pm) {
                               py::list out;
                               for (const auto& s : pm.quantized->skipped()) {
                                 py::dict d;
                                 d["node"] = s.name;
                                 d["reason"] = s.reason;
                                 out.append(d);
                               }
                               return out;
                             })
      .def_property_readonly("calibration",
                             [](const PyModel& pm) { return pm.calibration.to_json(); })
      .def_property_readonly("inputs", [](const PyModel& pm) {
        py::dict out;
        for (const auto& in : pm.float_model->graph().inputs) out[py::str(in.name)] = in.shape();
        return out;
      });

  m.def(
      "quantize_model",
      [](const std::filesystem::path& onnx_path, const std::string& recipe_json,
         const std::optional<std::filesystem::path>& recipe_path,
         const std::map<std::string, Shape>& input_shapes,
         const std::function<py::object()>& next_batch, std::shared_ptr<Accelerator> accelerator,
         int bins) {
        auto pm = std::make_unique<PyModel>();
        pm->onnx_path = onnx_path;
        pm->recipe =
            recipe_path ? mdl::load_recipe(*recipe_path) : mdl::recipe_from_json(recipe_json);
        const mdl::Recipe& recipe = pm->recipe;
        mdl::ResolveOptions ro;
        for (const auto& [name, shape] : input_shapes) ro.input_shapes.emplace(name, shape);
        pm->float_model = std::make_unique<mdl::Executor>(mdl::import_onnx_file(onnx_path), ro);
        const auto nodes = mdl::node_refs(pm->float_model->graph());
        const mdl::RecipeResolution res = mdl::resolve(recipe, nodes);
        const mdl::BatchSource source = [&]() -> std::optional<mdl::TensorMap> {
          py::object b = next_batch();
          if (b.is_none()) return std::nullopt;
          if (!py::isinstance<py::dict>(b))
            throw py::type_error("a calibration batch is a " +
                                 py::str(py::type::handle_of(b)).cast<std::string>() +
                                 "; expected a dict of input name -> numpy array");
          return tensor_map(b.cast<py::dict>());
        };
        mdl::CalibrateOptions co;
        co.bins = bins;
        pm->calibration = mdl::calibrate(*pm->float_model, res, source, co);
        pm->accelerator = accelerator ? std::move(accelerator) : std::make_shared<Accelerator>();
        pm->quantized = std::make_unique<mdl::QuantizedModel>(*pm->float_model, recipe, res,
                                                              pm->calibration, *pm->accelerator);
        return pm;
      },
      py::arg("onnx_path"), py::arg("recipe_json"), py::arg("recipe_path"), py::arg("input_shapes"),
      py::arg("next_batch"), py::arg("accelerator"), py::arg("bins"));
}

}  // namespace qforge::python
