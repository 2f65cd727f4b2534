#include "model_setup.h"

#include <cblas.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "batch_prefetch.h"
#include "progress.h"
#include "qforge/error.h"
#include "qforge/model/onnx_import.h"
#include "qforge/model/onnx_schemas.h"
#include "qforge/model/resolve.h"
#include "qforge/registry.h"

namespace qforge::cli {
namespace {

using model::Tensor;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string input_names(const model::Graph& g) {
  std::string names;
  for (const auto& i : g.inputs) names += (names.empty() ? "" : ", ") + to_string(i);
  return names.empty() ? "none" : names;
}

// "name=1,1,28,28"
std::pair<std::string, Shape> parse_shape_option(const std::string& text) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error(ErrorCode::invalid_argument,
                "--input-shape '" + text + "': expected NAME=D0,D1,... (e.g. x=1,1,28,28)");
  Shape shape;
  for (const std::string& d : split(text.substr(eq + 1), ',')) {
    std::int64_t v = -1;
    const auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    if (ec != std::errc{} || p != d.data() + d.size() || v < 0)
      throw Error(ErrorCode::invalid_argument,
                  "--input-shape '" + text + "': '" + d + "' is not a non-negative integer");
    shape.push_back(v);
  }
  return {text.substr(0, eq), shape};
}

}  // namespace

void ModelOptions::add_model(CLI::App& app) {
  app.add_option("model", model, "The ONNX model (opset <= 17)")
      ->required()
      ->check(CLI::ExistingFile);
}

void ModelOptions::add_shapes(CLI::App& app) {
  app.add_option("--input-shape", input_shapes,
                 "Concrete shape of a model input whose declared shape has unknown dims, "
                 "NAME=D0,D1,... (repeatable); the first extent of the data input is the batch")
      ->allow_extra_args(false);
}

void ModelOptions::add_quantization(CLI::App& app, bool recipe_required) {
  auto* r = app.add_option("--recipe", recipe, "Quantization recipe (JSON, docs/RECIPES.md)")
                ->check(CLI::ExistingFile);
  auto* c = app.add_option("--calibration", calibration,
                           "Calibration data: .npy, .npz[:NAME], a directory of .npy files, or "
                           "an IDX file (gzip'd or not)");
  if (recipe_required) {
    r->required();
    c->required();
  } else {
    r->needs(c);
    c->needs(r);
  }
  app.add_option("--calibration-limit", calibration_limit,
                 "Calibrate on the first N samples only (default: all)")
      ->check(CLI::PositiveNumber);
  app.add_option("--plugins", plugins,
                 "Only these plugins may run the quantized layers, comma-separated "
                 "(e.g. cpu_x86,cpu_scalar; default: every plugin found)");
}

void ModelOptions::add_batch_size(CLI::App& app) {
  app.add_option("--batch-size", batch_size,
                 "Samples per batch for calibration and evaluation (default 64; a model that "
                 "fixes its batch extent uses that)")
      ->check(CLI::PositiveNumber);
}

LoadedModel load_model(const ModelOptions& o) {
  LoadedModel m;
  m.graph = model::import_onnx_file(o.model);
  std::map<std::string, Shape, std::less<>> given;
  for (const std::string& text : o.input_shapes) {
    auto [name, shape] = parse_shape_option(text);
    const bool known = std::any_of(m.graph.inputs.begin(), m.graph.inputs.end(),
                                   [&](const model::ValueInfo& v) { return v.name == name; });
    if (!known)
      throw Error(ErrorCode::invalid_argument, "--input-shape: the model has no input '" + name +
                                                   "'; its inputs: " + input_names(m.graph));
    given[name] = shape;
  }
  if (m.graph.inputs.empty())
    throw Error(ErrorCode::invalid_argument, o.model + ": the model has no inputs to feed");
  const model::ValueInfo& in = m.graph.inputs.front();
  m.input = in.name;
  if (const auto it = given.find(in.name); it != given.end()) {
    m.dims = it->second;
  } else if (in.has_shape) {
    for (const auto& d : in.dims) m.dims.push_back(d.known() ? d.value : -1);
  }
  for (auto& [name, shape] : given)
    if (name != m.input) m.other_shapes[name] = shape;
  if (!m.dims.empty() && m.dims[0] > 0) m.fixed_batch = m.dims[0];
  return m;
}

std::future<void> start_onnx_schemas(bool plugin_thread) {
  // Only with a core for it: the main thread (loading OpenBLAS, reading the model) takes one and
  // the plugin thread, where there is one, another; on two cores a third thread made the plugins
  // spill into calibration, costing more than the import gained (docs/PERFORMANCE.md, branch
  // cal2t). Without the thread the import registers the schemas itself, as it always could.
  cpu_set_t allowed;
  const bool known = sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
  const int cores =
      known ? CPU_COUNT(&allowed) : static_cast<int>(std::thread::hardware_concurrency());
  if (cores < (plugin_thread ? 3 : 2)) {
    std::promise<void> none;
    none.set_value();
    return none.get_future();
  }
  return std::async(std::launch::async, model::register_onnx_schemas);
}

void require_single_input(const LoadedModel& m, const std::string& what) {
  if (m.graph.inputs.size() != 1)
    throw Error(ErrorCode::unsupported, what + " feeds one model input; this model has " +
                                            std::to_string(m.graph.inputs.size()) + ": " +
                                            input_names(m.graph));
}

Tensor fit_batch(const LoadedModel& m, Tensor data) {
  return fit_shape(m.input, m.dims, std::move(data));
}

Tensor fit_shape(const std::string& input, const std::vector<std::int64_t>& dims, Tensor data) {
  if (dims.empty()) return data;
  const Shape& s = data.shape();
  const std::int64_t k = s.empty() ? 1 : s[0];
  bool fits = s.size() == dims.size();
  for (std::size_t i = 1; fits && i < s.size(); ++i)
    if (dims[i] >= 0 && dims[i] != s[i]) fits = false;
  if (fits) return data;
  // Same elements per sample, another layout: a flatten the model expects (IDX images into an
  // MLP's [batch, 784]).
  Shape want{k};
  std::int64_t per_sample = 1;
  bool known = true;
  for (std::size_t i = 1; i < dims.size(); ++i) {
    known = known && dims[i] >= 0;
    want.push_back(dims[i]);
    per_sample *= std::max<std::int64_t>(dims[i], 0);
  }
  if (known && k > 0 && per_sample * k == data.size()) {
    data.reshape(want);
    return data;
  }
  Shape sample(s.begin() + (s.empty() ? 0 : 1), s.end());
  std::string declared = "[";
  for (std::size_t i = 0; i < dims.size(); ++i)
    declared += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  declared += "]";
  throw Error(ErrorCode::shape_mismatch,
              "data samples of shape " + to_string(sample) + " do not fit model input '" + input +
                  "' " + declared +
                  " (neither the same shape nor the same number of elements per sample)");
}

ModelCache::ModelCache(const LoadedModel& m, const model::Recipe* recipe,
                       const model::CalibrationResult* calibration, Accelerator* accelerator)
    : m_(m), recipe_(recipe), calibration_(calibration), accelerator_(accelerator) {}

const model::Executor& ModelCache::float_model(const Shape& input) {
  auto& slot = float_[input];
  if (!slot) {
    model::ResolveOptions r;
    r.input_shapes = m_.other_shapes;
    r.input_shapes[m_.input] = input;
    slot = std::make_unique<model::Executor>(m_.graph, r);
  }
  return *slot;
}

const model::QuantizedModel& ModelCache::quantized(const Shape& input) {
  if (!recipe_ || !calibration_ || !accelerator_)
    throw Error(ErrorCode::internal, "ModelCache: no recipe for a quantized model");
  auto& slot = quantized_[input];
  if (!slot) {
    const model::Executor& f = float_model(input);
    const auto nodes = model::node_refs(f.graph());
    const model::RecipeResolution res = model::resolve(*recipe_, nodes);
    slot = std::make_unique<model::QuantizedModel>(f, *recipe_, res, *calibration_, *accelerator_);
  }
  return *slot;
}

std::unique_ptr<Accelerator> make_accelerator(const ModelOptions& o) {
  AcceleratorOptions a = AcceleratorOptions::from_environment();
  a.policy.plugins = split(o.plugins, ',');
  if (a.policy.plugins.empty()) return std::make_unique<Accelerator>(a);
  // Only the plugins asked for are loaded (the others' libraries are opened for their names
  // only). Never destroyed, like PluginRegistry::global(): plans and buffers of its plugins
  // may outlive the accelerator. A name no plugin has is reported by the accelerator, with
  // what each loaded plugin said, when no candidate is left.
  static PluginRegistry* const registry = [&] {
    auto* r = new PluginRegistry();
    r->restrict_to(a.policy.plugins);
    r->load_default();
    return r;
  }();
  return std::make_unique<Accelerator>(*registry, a);
}

void load_openblas() {
  // The schema thread may run meanwhile: libonnx reads no environment variable.
  openblas_get_num_threads();
}

std::future<std::unique_ptr<Accelerator>> start_accelerator(const ModelOptions& o) {
  // OpenBLAS loads here, on this thread, before the plugin thread starts: its loader sets
  // OPENBLAS_CORETYPE with setenv as it loads (blas/openblas_loader.cpp), and a setenv while
  // another thread reads the environment (plugins and their libraries call getenv) is a data
  // race in glibc. With the variable set, the model library's loader finds it and sets nothing.
  load_openblas();
  return std::async(std::launch::async, [o] { return make_accelerator(o); });
}

Calibrated calibrate_model(const LoadedModel& m, const ModelOptions& o, StageTimes* stages,
                           ModelCache* cache) {
  require_single_input(m, "--calibration");
  Calibrated c;
  c.recipe = model::load_recipe(o.recipe);
  auto reader = DataReader::open(o.calibration, DataRole::samples);
  c.data_description = reader->description();
  const std::int64_t n =
      o.calibration_limit > 0 ? std::min(reader->count(), o.calibration_limit) : reader->count();
  if (n == 0)
    throw Error(ErrorCode::invalid_argument, o.calibration + ": no samples to calibrate on");
  if (m.fixed_batch && n < *m.fixed_batch)
    throw Error(ErrorCode::invalid_argument, o.calibration + ": " + std::to_string(n) +
                                                 " samples, fewer than the batch of " +
                                                 std::to_string(*m.fixed_batch) +
                                                 " the model fixes for input '" + m.input + "'");
  c.batch = m.fixed_batch.value_or(std::min(o.batch_size, n));
  c.batches = n / c.batch;
  c.left_out = n - c.batches * c.batch;
  // The first batch fixes the input shape (extents the model leaves open come from the data).
  std::optional<model::Tensor> first = fit_batch(m, *reader->next(c.batch));
  c.batch_shape = first->shape();
  // The other batches are read on a thread while the model runs on the ones before.
  BatchPrefetcher rest(*reader, c.batch, c.batches - 1);
  if (stages) stages->mark("recipe, data, first batch");
  ModelCache own_cache(m, nullptr, nullptr, nullptr);
  const model::Executor& f = (cache ? *cache : own_cache).float_model(c.batch_shape);
  const auto nodes = model::node_refs(f.graph());
  const model::RecipeResolution res = model::resolve(c.recipe, nodes);
  if (stages) stages->mark("float executor, recipe match");
  ProgressLine progress("calibrating", c.batches * c.batch);
  std::int64_t done = 0;
  const model::BatchSource next = [&]() -> std::optional<model::TensorMap> {
    if (done == c.batches) return std::nullopt;
    model::TensorMap batch;
    if (first) {
      batch.emplace(m.input, std::move(*first));
      first.reset();
    } else {
      batch.emplace(m.input, fit_batch(m, rest.next()));
    }
    ++done;
    progress.update(done * c.batch);
    return batch;
  };
  c.calibration = model::calibrate(f, res, next);
  if (stages) stages->mark("calibration batches");
  return c;
}

std::string file_name_for(const std::string& tensor) {
  std::string out;
  for (char ch : tensor) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
    out += ok ? ch : '_';
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out;
}

}  // namespace qforge::cli
