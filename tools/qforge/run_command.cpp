#include "run_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "data/npy.h"
#include "qforge/error.h"
#include "qforge/model/resolve.h"

namespace qforge::cli {
namespace {

namespace fs = std::filesystem;
using model::Tensor;

// The arrays for the graph inputs, by name, in the shapes the model declares.
model::TensorMap read_inputs(const LoadedModel& m, const std::vector<std::string>& specs) {
  std::map<std::string, std::string, std::less<>> given;
  for (const std::string& s : specs) {
    const auto eq = s.find('=');
    std::string name, path;
    if (eq == std::string::npos) {
      if (m.graph.inputs.size() != 1)
        throw Error(ErrorCode::invalid_argument, "--input '" + s + "': the model has " +
                                                     std::to_string(m.graph.inputs.size()) +
                                                     " inputs; name each as NAME=PATH");
      name = m.graph.inputs[0].name;
      path = s;
    } else {
      name = s.substr(0, eq);
      path = s.substr(eq + 1);
    }
    if (!given.emplace(name, path).second)
      throw Error(ErrorCode::invalid_argument, "--input: '" + name + "' given twice");
  }
  model::TensorMap out;
  for (const model::ValueInfo& in : m.graph.inputs) {
    const auto it = given.find(in.name);
    if (it == given.end())
      throw Error(ErrorCode::invalid_argument, "--input: no data for model input " + to_string(in) +
                                                   "; give it as --input " + in.name + "=PATH");
    Tensor t = in.type == model::ElementType::float32 ? read_all(it->second, DataRole::samples)
                                                      : load_npy(it->second);
    if (t.type() != in.type)
      throw Error(ErrorCode::invalid_argument,
                  it->second + ": " + std::string(to_string(t.type())) + " data for input " +
                      to_string(in) + "; expected " + std::string(to_string(in.type)));
    std::vector<std::int64_t> dims;
    if (in.name == m.input) {
      dims = m.dims;
    } else if (const auto s = m.other_shapes.find(in.name); s != m.other_shapes.end()) {
      dims = s->second;
    } else if (in.has_shape) {
      for (const auto& d : in.dims) dims.push_back(d.known() ? d.value : -1);
    }
    out.emplace(in.name, fit_shape(in.name, dims, std::move(t)));
    given.erase(it);
  }
  if (!given.empty())
    throw Error(ErrorCode::invalid_argument,
                "--input: the model has no input '" + given.begin()->first + "'");
  return out;
}

}  // namespace

CLI::App* RunCommand::add_to(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "run",
      "Run a model on arrays and write its outputs as .npy files, in float or quantized "
      "(--recipe and --calibration)");
  model.add_model(*app);
  app->add_option("--input,-i", inputs,
                  "NAME=PATH for each model input (PATH: .npy, .npz[:NAME], a directory of .npy "
                  "files, or IDX); just PATH for a model with one input")
      ->required()
      ->allow_extra_args(false);
  app->add_option("--output-dir,-o", output_dir, "Directory for the outputs, one OUTPUT.npy each")
      ->required();
  app->add_option("--repeat", repeat,
                  "Run N times more after the first and print the median seconds per run, on "
                  "stderr (the first run, which warms caches, is not counted)")
      ->check(CLI::PositiveNumber);
  model.add_quantization(*app, /*recipe_required=*/false);
  model.add_shapes(*app);
  model.add_batch_size(*app);
  app->footer(
      "Examples:\n"
      "  qforge run mlp.onnx --input x=images.npy --output-dir out\n"
      "  qforge run mlp.onnx -i images.npy -o out --recipe int8.json --calibration train.npy \\\n"
      "      --plugins cpu_x86\n"
      "\nThe run is one batch of all the given samples; --batch-size applies to calibration.");
  return app;
}

int RunCommand::run() const {
  const auto schemas = start_onnx_schemas(/*plugin_thread=*/!model.recipe.empty());
  std::future<std::unique_ptr<Accelerator>> pending_accelerator;
  if (!model.recipe.empty()) pending_accelerator = start_accelerator(model);
  const LoadedModel m = load_model(model);
  const model::TensorMap in = read_inputs(m, inputs);
  model::ResolveOptions r;
  for (const auto& [name, t] : in) r.input_shapes[name] = t.shape();
  const model::Executor float_model(m.graph, r);
  model::TensorMap out;
  std::unique_ptr<model::QuantizedModel> quantized;
  if (!model.recipe.empty()) {
    const Calibrated c = calibrate_model(m, model);
    std::cerr << "calibration: " << c.data_description << ", " << c.batches << " x " << c.batch
              << "\n";
    const auto accelerator = pending_accelerator.get();
    const auto nodes = model::node_refs(float_model.graph());
    quantized = std::make_unique<model::QuantizedModel>(
        float_model, c.recipe, model::resolve(c.recipe, nodes), c.calibration, *accelerator);
  }
  const auto run_once = [&] { return quantized ? quantized->run(in) : float_model.run(in); };
  out = run_once();
  if (repeat > 0) {
    std::vector<double> seconds;
    for (int i = 0; i < repeat; ++i) {
      const auto start = std::chrono::steady_clock::now();
      run_once();
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::cerr << "median seconds per run over " << repeat
              << " runs: " << seconds[seconds.size() / 2] << "\n";
  }
  fs::create_directories(output_dir);
  for (const auto& [name, t] : out) {
    const fs::path file = fs::path(output_dir) / (file_name_for(name) + ".npy");
    save_npy(file, t);
    std::cout << name << ": " << to_string(t.tensor_type()) << " -> " << file.string() << "\n";
  }
  return 0;
}

}  // namespace qforge::cli
