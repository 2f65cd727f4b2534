// The report as a text table and as JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "qforge/model/layer_report.h"

namespace qforge::model {
namespace {

std::string fixed(double v, int decimals) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string kernel_label(const LayerReport& l) {
  return l.kernel.empty() ? l.backend : l.backend + "/" + l.kernel;
}

// JSON has no infinity: an exact match is written as null.
nlohmann::json db(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

std::string format_report(const ModelReport& report) {
  std::size_t name_w = 4, kernel_w = 6;
  for (const LayerReport& l : report.layers) {
    name_w = std::max(name_w, l.node.size());
    kernel_w = std::max(kernel_w, kernel_label(l).size());
  }
  std::size_t path_w = 4;
  for (const LayerReport& l : report.layers) path_w = std::max(path_w, l.path.size());
  std::string out = pad("node", name_w) + "  op      mode      SQNR dB  float B     quant B     " +
                    pad("kernel", kernel_w) + "  " + pad("path", path_w) + "  median us\n";
  for (const LayerReport& l : report.layers) {
    out += pad(l.node, name_w) + "  " + pad(l.op_type, 6) + "  " + pad(l.mode, 8) + "  " +
           pad(fixed(l.sqnr_db, 2), 7) + "  " + pad(std::to_string(l.float_weight_bytes), 10) +
           "  " + pad(std::to_string(l.quantized_weight_bytes), 10) + "  " +
           pad(kernel_label(l), kernel_w) + "  " + pad(l.path, path_w) + "  " +
           fixed(l.median_seconds * 1e6, 1) + "\n";
  }
  for (const OutputReport& o : report.outputs)
    out += "output " + o.tensor + ": SQNR " + fixed(o.sqnr_db, 2) + " dB\n";
  for (const SkippedNode& s : report.skipped) out += "float: " + s.name + ": " + s.reason + "\n";
  out += std::to_string(report.batches) + " batches, median over " +
         std::to_string(report.timed_runs) + " timed runs of each\n";
  return out;
}

std::string report_to_json(const ModelReport& report) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerReport& l : report.layers)
    layers.push_back({{"node", l.node},
                      {"op_type", l.op_type},
                      {"mode", l.mode},
                      {"settings", l.settings},
                      {"sqnr_db", db(l.sqnr_db)},
                      {"float_weight_bytes", l.float_weight_bytes},
                      {"quantized_weight_bytes", l.quantized_weight_bytes},
                      {"backend", l.backend},
                      {"kernel", l.kernel},
                      {"path", l.path},
                      {"median_seconds", l.median_seconds}});
  nlohmann::json outputs = nlohmann::json::array();
  for (const OutputReport& o : report.outputs)
    outputs.push_back({{"tensor", o.tensor}, {"sqnr_db", db(o.sqnr_db)}});
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedNode& s : report.skipped)
    skipped.push_back({{"node", s.name}, {"reason", s.reason}});
  return nlohmann::json{{"batches", report.batches},
                        {"timed_runs", report.timed_runs},
                        {"layers", layers},
                        {"outputs", outputs},
                        {"skipped", skipped}}
             .dump(2) +
         "\n";
}

}  // namespace qforge::model
