// qforge_ort_cases: writes the cases that model/quantize/tests/ort/ort_check.py runs in ONNX
// Runtime, with qforge's results for them (docs/MODEL.md, "The ONNX Runtime check").
//
//   qforge_ort_cases --seed N --out DIR
//
// DIR/manifest.json lists
//   - float cases: an ONNX model (built here from random weights), its random inputs and the
//     outputs of qforge's float executor;
//   - QDQ cases: a quantized MLP exported with export_qdq_onnx, random inputs, QuantizedModel's
//     outputs, and per quantized layer what the bound of qdq_bound.h needs: qforge's A codes
//     with their scale and zero point, the layer's output, and the names of the weight codes,
//     scales and zero points in the exported file.
// Tensors are serialized onnx.TensorProto files (onnx.load_tensor reads them).
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "../fixtures.h"
#include "float_models.h"
#include "qforge/error.h"
#include "qforge/model/onnx_export.h"
#include "qforge/model/qdq_export.h"
#include "qforge/output_file.h"
#include "qforge/reference.h"

namespace qforge::model::ort {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void write_tensor(const Tensor& t, const fs::path& path) {
  onnx::TensorProto p;
  p.set_data_type(static_cast<std::int32_t>(t.type()));
  for (auto d : t.shape()) p.add_dims(d);
  p.set_raw_data(reinterpret_cast<const char*>(t.data()), t.byte_size());
  write_file_atomically(path, p.SerializeAsString(), "tensor");
}

// Writes every tensor of `m` as <prefix>.<name>.pb and returns name -> file.
json write_tensors(const TensorMap& m, const fs::path& dir, const std::string& prefix) {
  json files = json::object();
  int i = 0;
  for (const auto& [name, t] : m) {
    const std::string file = prefix + "." + std::to_string(i++) + ".pb";
    write_tensor(t, dir / file);
    files[name] = file;
  }
  return files;
}

TensorMap random_inputs(std::mt19937_64& g, const Graph& graph) {
  TensorMap in;
  for (const ValueInfo& v : graph.inputs)
    in.emplace(v.name, test::random_tensor(g, v.shape(), -2.0f, 2.0f));
  return in;
}

json float_case(const std::string& name, const std::vector<std::byte>& bytes, std::mt19937_64& g,
                const fs::path& dir) {
  const std::string model = name + ".onnx";
  write_file_atomically(dir / model,
                        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                        "ONNX model");
  const Executor e(import_onnx_bytes(bytes, model));
  const TensorMap in = random_inputs(g, e.graph());
  return {{"name", name},
          {"model", model},
          {"inputs", write_tensors(in, dir, name + ".input")},
          {"outputs", write_tensors(e.run(in), dir, name + ".qforge")}};
}

// A's codes as the layer computed them from its float input.
Tensor activation_codes(const QuantizedLayerInfo& l, const Tensor& a, float& scale,
                        std::int32_t& zero_point) {
  const auto x = a.values<float>();
  Tensor q(ElementType::int32, a.shape());
  auto out = q.values<std::int32_t>();
  if (l.a_params) {
    scale = l.a_params->scale();
    zero_point = l.a_params->zero_point();
    for (std::size_t i = 0; i < x.size(); ++i)
      out[i] = reference::quantize_value(x[i], scale, zero_point, l.a_params->qmin(),
                                         l.a_params->qmax());
  } else {
    std::vector<std::uint8_t> codes(x.size());
    const QuantizationParams p = reference::dynamic_quantize_linear(
        DynamicQuantizeDesc{Shape{a.size()}}, x.data(), codes.data());
    scale = p.scale();
    zero_point = p.zero_point();
    std::copy(codes.begin(), codes.end(), out.begin());
  }
  return q;
}

struct QdqCase {
  std::string name;
  Graph graph;
  LayerQuantization layer;
  std::map<std::string, std::string> output_layers;  // graph output -> the layer computing it
};

json qdq_case(QdqCase c, std::mt19937_64& g, const fs::path& dir, Accelerator& acc) {
  using namespace qtest;
  Prepared p = prepare(c.graph, matmul_recipe(c.layer), batches(g, c.graph, kCalibrationBatches));
  const QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, acc);
  const std::string model = c.name + ".qdq.onnx";
  export_qdq_onnx(q, dir / model);
  // Static layers see inputs inside the calibrated range and a little beyond.
  const TensorMap in = batches(g, q.graph(), 1)[0];
  std::vector<std::string> keep;
  for (const QuantizedLayerInfo& l : q.layers()) keep.insert(keep.end(), {l.input, l.output});
  const TensorMap out = q.run(in, keep);
  json layers = json::array();
  for (const QuantizedLayerInfo& l : q.layers()) {
    float scale = 0;
    std::int32_t zero_point = 0;
    const Tensor codes = activation_codes(l, out.at(l.input), scale, zero_point);
    write_tensor(codes, dir / (c.name + "." + l.name + ".codes.pb"));
    write_tensor(out.at(l.output), dir / (c.name + "." + l.name + ".output.pb"));
    json layer = {{"name", l.name},
                  {"k", l.k},
                  {"n", l.n},
                  {"dynamic", !l.a_params.has_value()},
                  {"weight_layout", l.b_layout == MatrixLayout::kn ? "kn" : "nk"},
                  {"weight", l.name + ".weight_quantized"},
                  {"weight_scale", l.name + ".weight_scale"},
                  {"weight_zero_point", l.name + ".weight_zero_point"},
                  {"codes_tensor", l.name + ".input_quantized"},
                  {"scale_tensor", l.name + ".input_scale"},
                  {"zero_point_tensor", l.name + ".input_zero_point"},
                  {"output_tensor", l.output},
                  {"bias", l.bias},
                  {"qforge_codes", c.name + "." + l.name + ".codes.pb"},
                  {"qforge_scale", scale},
                  {"qforge_zero_point", zero_point},
                  {"qforge_output", c.name + "." + l.name + ".output.pb"}};
    // The int8 path: qforge's output is already the next layer's codes (ort_check.py allows one
    // step of them, within their range).
    if (l.int8_output)
      layer["int8_output"] = {{"scale", l.int8_output->scale()},
                              {"zero_point", l.int8_output->zero_point()},
                              {"qmin", l.int8_output->qmin()},
                              {"qmax", l.int8_output->qmax()}};
    layers.push_back(std::move(layer));
  }
  TensorMap outputs;
  for (const ValueInfo& v : q.graph().outputs) outputs.emplace(v.name, out.at(v.name));
  return {{"name", c.name},
          {"model", model},
          {"inputs", write_tensors(in, dir, c.name + ".input")},
          {"outputs", write_tensors(outputs, dir, c.name + ".qforge")},
          {"layers", std::move(layers)},
          {"output_layers", c.output_layers}};
}

int run(std::uint64_t seed, const fs::path& dir) {
  fs::create_directories(dir);
  std::mt19937_64 g(seed);
  json manifest = {{"seed", seed}};
  manifest["float"] = json::array();
  for (auto make : {mlp_model, cnn_model, misc_model}) {
    FloatModel m = make(g);
    manifest["float"].push_back(float_case(m.name, m.builder.bytes(), g, dir));
  }
  // The quantize tests' MLPs, written by qforge's own ONNX export.
  using namespace qtest;
  manifest["float"].push_back(
      float_case("gemm_mlp", export_onnx_bytes(gemm_mlp(g, {}, true, 0.75f, 1.5f)), g, dir));
  manifest["float"].push_back(
      float_case("matmul_mlp", export_onnx_bytes(matmul_mlp(g, {})), g, dir));

  LayerQuantization uint8_layer = minmax_layer();
  uint8_layer.weights = WeightQuantization{
      .dtype = DType::uint8, .mapping = Mapping::affine, .granularity = Granularity::per_tensor};
  uint8_layer.activations->dtype = DType::uint8;
  std::vector<QdqCase> cases;
  cases.push_back({"gemm_int8_per_channel",
                   gemm_mlp(g, {}, true, 0.75f, 1.5f),
                   minmax_layer(),
                   {{"y", "fc2"}}});
  cases.push_back({"gemm_uint8_per_tensor", gemm_mlp(g, {}), uint8_layer, {{"y", "fc2"}}});
  cases.push_back({"matmul_dynamic", matmul_mlp(g, {}), dynamic_layer(), {{"y", "mm2"}}});
  // Symmetric int8 activations whose scale makes inputs in [-1, 1] saturate: the export's Clip
  // keeps them at qforge's -127.
  LayerQuantization symmetric;
  symmetric.activations = ActivationQuantization::explicit_symmetric(DType::int8, 0.004f);
  cases.push_back({"gemm_int8_symmetric_saturating", gemm_mlp(g, {}), symmetric, {{"y", "fc2"}}});
  // The best CPU plugin without tuning: quick, and what QuantizedModel runs on this machine.
  std::unique_ptr<Accelerator> acc = accelerator("cpu_x86");
  if (!acc) acc = accelerator("cpu_scalar");
  if (!acc) throw Error(ErrorCode::unavailable, "neither cpu_x86 nor cpu_scalar loaded");
  manifest["qdq"] = json::array();
  for (QdqCase& c : cases) manifest["qdq"].push_back(qdq_case(std::move(c), g, dir, *acc));
  write_file_atomically(dir / "manifest.json", manifest.dump(1), "manifest");
  return 0;
}

}  // namespace
}  // namespace qforge::model::ort

int main(int argc, char** argv) {
  std::uint64_t seed = 0;
  std::filesystem::path out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed") seed = std::stoull(argv[i + 1]);
    else if (flag == "--out") out = argv[i + 1];
  }
  if (out.empty()) {
    std::cerr << "usage: qforge_ort_cases --seed N --out DIR\n";
    return 2;
  }
  try {
    return qforge::model::ort::run(seed, out);
  } catch (const std::exception& e) {
    std::cerr << "qforge_ort_cases (seed " << seed << "): " << e.what() << "\n";
    return 1;
  }
}
