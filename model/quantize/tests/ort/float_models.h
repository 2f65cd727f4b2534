// The float models the ONNX Runtime comparison runs (ort_cases.cpp): built with ONNX's protobuf
// classes from random weights, so each run checks new values.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "onnx_builder.h"

namespace qforge::model::ort {

struct FloatModel {
  std::string name;
  testing::OnnxBuilder builder;
};

// MLP: Gemm (transB) -> Relu -> MatMul -> Add -> Sigmoid -> Gemm -> Softmax; outputs y and the
// logits.
FloatModel mlp_model(std::mt19937_64& g);
// CNN: Conv -> BatchNormalization -> Relu -> MaxPool -> depthwise Conv (stride 2) ->
// BatchNormalization -> Relu -> AveragePool -> Flatten -> Gemm -> Softmax; outputs y and the
// logits.
FloatModel cnn_model(std::mt19937_64& g);
// Data movement and activations: Transpose, LeakyRelu, Tanh, Erf, Clip, Mul, Concat, Reshape,
// Slice, Gather, ReduceMean, LogSoftmax.
FloatModel misc_model(std::mt19937_64& g);

}  // namespace qforge::model::ort
