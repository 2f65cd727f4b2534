// The report's SQNR per layer as an SVG bar chart: one horizontal bar per quantized layer, then
// one per graph output, in graph order, so that the layer where accuracy drops stands out.
// Node names come from the model file, so every text is escaped.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "qforge/model/layer_report.h"

namespace qforge::model {
namespace {

constexpr int kNameWidth = 220;  // left column for the labels
constexpr int kBarArea = 440;    // pixels for the longest bar
constexpr int kRowHeight = 22;
constexpr int kTop = 40;     // title
constexpr int kBottom = 40;  // axis labels
constexpr int kRight = 90;   // value labels

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 refuses most control characters even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

struct Bar {
  std::string label;
  double db;
  bool output;
};

std::string value_text(double db) { return std::isinf(db) ? "exact" : number(db, 1) + " dB"; }

}  // namespace

std::string report_to_svg(const ModelReport& report) {
  std::vector<Bar> bars;
  for (const LayerReport& l : report.layers)
    bars.push_back({l.node + " (" + l.op_type + ", " + l.mode + ")", l.sqnr_db, false});
  for (const OutputReport& o : report.outputs)
    bars.push_back({"output " + o.tensor, o.sqnr_db, true});

  // The axis ends at the next multiple of 10 dB above the largest finite SQNR; an exact layer
  // (+inf) fills the axis, a negative SQNR draws no bar.
  double top = 10;
  for (const Bar& b : bars)
    if (std::isfinite(b.db)) top = std::max(top, b.db);
  top = std::ceil(top / 10) * 10;
  const auto length = [&](double db) {
    if (std::isinf(db)) return db > 0 ? double(kBarArea) : 0.0;
    return std::clamp(db, 0.0, top) / top * kBarArea;
  };

  const int rows = static_cast<int>(std::max<std::size_t>(bars.size(), 1));
  const int width = kNameWidth + kBarArea + kRight;
  const int height = kTop + rows * kRowHeight + kBottom;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"10\" y=\"22\" font-size=\"15\">SQNR per layer against the float model, dB (" +
         std::to_string(report.batches) + " batches)</text>\n";
  const int axis_y = kTop + rows * kRowHeight;
  for (int tick = 0; tick <= static_cast<int>(top); tick += 10) {
    const double x = kNameWidth + tick / top * kBarArea;
    svg += "<line x1=\"" + number(x, 1) + "\" y1=\"" + std::to_string(kTop) + "\" x2=\"" +
           number(x, 1) + "\" y2=\"" + std::to_string(axis_y) + "\" stroke=\"#ddd\"/>\n";
    svg += "<text x=\"" + number(x, 1) + "\" y=\"" + std::to_string(axis_y + 16) +
           "\" text-anchor=\"middle\">" + std::to_string(tick) + "</text>\n";
  }
  if (bars.empty())
    svg += "<text x=\"" + std::to_string(kNameWidth) + "\" y=\"" + std::to_string(kTop + 15) +
           "\">no quantized layer</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = kTop + static_cast<int>(i) * kRowHeight;
    const double w = length(b.db);
    svg += "<text x=\"" + std::to_string(kNameWidth - 8) + "\" y=\"" + std::to_string(y + 15) +
           "\" text-anchor=\"end\">" + escape(b.label) + "</text>\n";
    svg += "<rect x=\"" + std::to_string(kNameWidth) + "\" y=\"" + std::to_string(y + 3) +
           "\" width=\"" + number(w, 1) + "\" height=\"" + std::to_string(kRowHeight - 6) +
           "\" fill=\"" + (b.output ? "#d95f02" : "#1b9e77") + "\"/>\n";
    svg += "<text x=\"" + number(kNameWidth + w + 6, 1) + "\" y=\"" + std::to_string(y + 15) +
           "\">" + value_text(b.db) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace qforge::model
