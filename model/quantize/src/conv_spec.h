// A Conv node read as core's 2-D convolution (ConvDesc, NCHW): the geometry from the node's
// attributes and shapes, and the float weight (OIHW) and bias.
#pragma once

#include <string>
#include <vector>

#include "qforge/model/graph.h"
#include "qforge/op_desc.h"

namespace qforge::model::quantize {

struct ConvSpec {
  std::string input;   // X, NCHW
  std::string output;  // Y, NCHW
  // Geometry only: the params, bias kind and activation are the layer's to set.
  ConvDesc desc;
  std::vector<float> weight;  // [O, C / groups, KH, KW] as the graph stores it
  std::vector<float> bias;    // [O], empty when none
};

bool is_quantizable_conv(const std::string& op_type);

// Reads a Conv node of a resolved graph (every shape known). Throws unsupported naming the node
// for anything but a 2-D convolution (X of rank 4) with float32 X, an initializer W and an
// initializer B (if any).
ConvSpec conv_spec(const Graph& graph, const Node& node);

}  // namespace qforge::model::quantize
