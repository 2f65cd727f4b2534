#include "ops/spatial.h"

namespace qforge::model::ops {

void check_window_attributes(const Node& node) {
  const std::string ap = node.attr_string_or("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "SAME_UPPER" && ap != "SAME_LOWER" && ap != "VALID")
    fail(node, ErrorCode::invalid_argument,
         "auto_pad '" + ap + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  if (ap != "NOTSET" && node.has_attribute("pads"))
    fail(node, ErrorCode::invalid_argument, "pads and auto_pad " + ap + " cannot be used together");
}

WindowGeometry window_geometry(const Node& node, const Shape& in_spatial,
                               const std::vector<std::int64_t>& kernel, bool allow_dilations,
                               bool allow_ceil) {
  const std::size_t r = in_spatial.size();
  WindowGeometry g;
  g.in = in_spatial;
  g.kernel = kernel;
  auto per_axis = [&](std::string_view key, std::int64_t fallback, std::size_t count) {
    auto v = node.attr_ints_or(key, std::vector<std::int64_t>(count, fallback));
    if (v.size() != count)
      fail(node, ErrorCode::invalid_argument,
           std::string(key) + " has " + std::to_string(v.size()) + " values; the input has " +
               std::to_string(r) + " spatial axes, so " + std::to_string(count) + " are expected");
    return v;
  };
  if (kernel.size() != r)
    fail(node, ErrorCode::invalid_argument,
         "kernel_shape has " + std::to_string(kernel.size()) + " values for " + std::to_string(r) +
             " spatial axes");
  g.strides = per_axis("strides", 1, r);
  g.dilations = allow_dilations ? per_axis("dilations", 1, r) : std::vector<std::int64_t>(r, 1);
  const auto pads = per_axis("pads", 0, 2 * r);
  const bool ceil = allow_ceil && node.attr_int_or("ceil_mode", 0) != 0;
  const std::string ap = node.attr_string_or("auto_pad", "NOTSET");
  g.pad_begin.assign(r, 0);
  g.pad_end.assign(r, 0);
  g.out.assign(r, 0);
  for (std::size_t i = 0; i < r; ++i) {
    if (g.kernel[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1)
      fail(node, ErrorCode::invalid_argument, "kernel, strides and dilations must be >= 1");
    const std::int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      // Output ceil(in / stride); the padding that needs goes to the end (UPPER) or begin.
      g.out[i] = (in_spatial[i] + g.strides[i] - 1) / g.strides[i];
      const std::int64_t total =
          std::max<std::int64_t>(0, (g.out[i] - 1) * g.strides[i] + span - in_spatial[i]);
      g.pad_begin[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (ap == "NOTSET") {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + r];
      if (g.pad_begin[i] < 0 || g.pad_end[i] < 0)
        fail(node, ErrorCode::invalid_argument, "pads must be >= 0");
    }
    const std::int64_t room = in_spatial[i] + g.pad_begin[i] + g.pad_end[i] - span;
    if (room < 0)
      fail(node, ErrorCode::shape_mismatch,
           "the window (" + std::to_string(span) + ") is larger than the padded input (" +
               std::to_string(in_spatial[i] + g.pad_begin[i] + g.pad_end[i]) +
               ") on spatial axis " + std::to_string(i));
    g.out[i] = (ceil ? (room + g.strides[i] - 1) / g.strides[i] : room / g.strides[i]) + 1;
    // With ceil_mode a last window that would start inside the end padding is dropped
    // (PyTorch and ONNX Runtime).
    if (ceil && (g.out[i] - 1) * g.strides[i] >= in_spatial[i] + g.pad_begin[i]) --g.out[i];
  }
  return g;
}

}  // namespace qforge::model::ops
