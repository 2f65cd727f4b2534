#include "eval_command.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "progress.h"
#include "qforge/error.h"

namespace qforge::cli {
namespace {

using model::Tensor;

// The index of each row's largest value (the first on ties, as numpy.argmax; NaN never wins).
std::vector<std::int64_t> top1(const Tensor& logits, std::int64_t rows, const std::string& output,
                               std::int64_t* class_count = nullptr) {
  if (logits.type() != model::ElementType::float32)
    throw Error(ErrorCode::unsupported, "eval: output '" + output + "' is " +
                                            std::string(to_string(logits.type())) +
                                            "; expected float32 scores per class");
  const auto v = logits.values<float>();
  const std::int64_t batch = logits.rank() > 0 ? logits.shape()[0] : 1;
  const std::int64_t classes = batch > 0 ? logits.size() / batch : 0;
  if (classes < 1)
    throw Error(ErrorCode::unsupported,
                "eval: output '" + output + "' " + to_string(logits.tensor_type()) +
                    " has no class scores per sample; expected [batch, classes]");
  if (class_count) *class_count = classes;
  std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = v.data() + r * classes;
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c)
      if (row[c] > row[best] || (std::isnan(row[best]) && !std::isnan(row[c]))) best = c;
    out[static_cast<std::size_t>(r)] = best;
  }
  return out;
}

// Rows [0, k) of `x` in a tensor of `rows` rows, the rest zero: a model that fixes its batch
// extent still sees whole batches, and only the first k results are counted.
Tensor pad_rows(const Tensor& x, std::int64_t rows) {
  Shape shape = x.shape();
  shape[0] = rows;
  Tensor out(x.type(), shape);
  std::memcpy(out.data(), x.data(), x.byte_size());
  return out;
}

std::string percent(std::int64_t n, std::int64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", total ? 100.0 * double(n) / double(total) : 0.0);
  return buf;
}

}  // namespace

CLI::App* EvalCommand::add_to(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "eval",
      "Top-1 accuracy on a labelled data set, of the float model and (with --recipe and "
      "--calibration) of the quantized model with its agreement with float");
  model.add_model(*app);
  app->add_option("--data", data,
                  "Samples: .npy, .npz[:NAME], a directory of .npy files, or an IDX file")
      ->required();
  app->add_option("--labels", labels,
                  "Class indices, one per sample (int64; other integer types "
                  "are converted), in the same formats")
      ->required();
  model.add_quantization(*app, /*recipe_required=*/false);
  model.add_shapes(*app);
  model.add_batch_size(*app);
  app->add_option("--limit", limit, "Evaluate the first N samples only")
      ->check(CLI::PositiveNumber);
  app->add_flag("--json", as_json, "Print the result as JSON on stdout and nothing else");
  app->footer(
      "Examples:\n"
      "  qforge eval cnn.onnx --data /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz "
      "\\\n"
      "      --labels /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz\n"
      "  qforge eval mlp.onnx --data test.npz:x --labels test.npz:y --recipe int8.json \\\n"
      "      --calibration train.npy --limit 1000 --json\n"
      "\nThe first graph output gives the class scores, [batch, classes].");
  return app;
}

int EvalCommand::run() const {
  const auto schemas = start_onnx_schemas(/*plugin_thread=*/!model.recipe.empty());
  std::future<std::unique_ptr<Accelerator>> pending_accelerator;
  if (!model.recipe.empty()) pending_accelerator = start_accelerator(model);
  const LoadedModel m = load_model(model);
  require_single_input(m, "--data");
  std::optional<Calibrated> c;
  std::unique_ptr<Accelerator> accelerator;
  if (!model.recipe.empty()) {
    c = calibrate_model(m, model);
    if (!as_json)
      std::cout << "calibration: " << c->data_description << ", " << c->batches << " x " << c->batch
                << "\n";
    accelerator = pending_accelerator.get();
  }
  ModelCache cache(m, c ? &c->recipe : nullptr, c ? &c->calibration : nullptr, accelerator.get());

  auto x_reader = DataReader::open(data, DataRole::samples);
  auto y_reader = DataReader::open(labels, DataRole::labels);
  if (x_reader->count() != y_reader->count())
    throw Error(ErrorCode::invalid_argument, data + " holds " + std::to_string(x_reader->count()) +
                                                 " samples but " + labels + " holds " +
                                                 std::to_string(y_reader->count()) + " labels");
  const std::int64_t total = limit > 0 ? std::min(limit, x_reader->count()) : x_reader->count();
  if (total == 0) throw Error(ErrorCode::invalid_argument, data + ": no samples to evaluate");
  const std::int64_t batch = m.fixed_batch.value_or(model.batch_size);
  const std::string& output = m.graph.outputs.at(0).name;

  std::int64_t done = 0, float_correct = 0, quant_correct = 0, agree = 0;
  ProgressLine progress("evaluating", total);
  while (done < total) {
    const std::int64_t k = std::min(batch, total - done);
    Tensor x = *x_reader->next(k);
    const Tensor y = *y_reader->next(k);
    const std::int64_t rows = m.fixed_batch ? *m.fixed_batch : k;
    if (rows != k) x = pad_rows(x, rows);
    model::TensorMap in;
    const Shape& shape = in.emplace(m.input, fit_batch(m, std::move(x))).first->second.shape();
    std::int64_t classes = 0;
    const auto f = top1(cache.float_model(shape).run(in).at(output), k, output, &classes);
    std::optional<std::vector<std::int64_t>> q;
    if (c) q = top1(cache.quantized(shape).run(in).at(output), k, output);
    const auto labels_k = y.values<std::int64_t>();
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t label = labels_k[static_cast<std::size_t>(i)];
      if (label < 0 || label >= classes)
        throw Error(ErrorCode::invalid_argument,
                    labels + ": label " + std::to_string(label) + " of sample " +
                        std::to_string(done + i) + " is not a class of output '" + output +
                        "'; expected 0 to " + std::to_string(classes - 1));
      float_correct += f[static_cast<std::size_t>(i)] == label;
      if (q) {
        quant_correct += (*q)[static_cast<std::size_t>(i)] == label;
        agree += (*q)[static_cast<std::size_t>(i)] == f[static_cast<std::size_t>(i)];
      }
    }
    done += k;
    progress.update(done);
  }

  if (as_json) {
    nlohmann::ordered_json j;
    j["model"] = model.model;
    j["samples"] = total;
    j["float"] = {{"top1", double(float_correct) / double(total)}, {"correct", float_correct}};
    if (c)
      j["quantized"] = {{"top1", double(quant_correct) / double(total)},
                        {"correct", quant_correct},
                        {"agreement", double(agree) / double(total)},
                        {"agreeing", agree}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "data: " << x_reader->description() << "\nlabels: " << y_reader->description()
            << "\nsamples: " << total << "\n\n";
  std::cout << "float      top-1 " << percent(float_correct, total) << "  (" << float_correct << "/"
            << total << ")\n";
  if (c)
    std::cout << "quantized  top-1 " << percent(quant_correct, total) << "  (" << quant_correct
              << "/" << total << ")   agreement with float " << percent(agree, total) << "  ("
              << agree << "/" << total << ")\n";
  return 0;
}

}  // namespace qforge::cli
