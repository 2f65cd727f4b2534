// The words every kind's bucket text is built from (workload_bucket, accelerator.h): params,
// extents rounded up to their bucket, and elementwise shapes as rows and columns.
#pragma once

#include <cstdint>
#include <string>

#include "accelerator/workload_key.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"
#include "qforge/shape.h"

namespace qforge::accel {

inline std::string params_text(const QuantizationParams& p) {
  return std::string(name(p.dtype())) + "/" + to_string(p.scheme());
}

inline std::string upto(const char* label, std::int64_t extent) {
  return std::string(" ") + label + "<=" + std::to_string(bucket_extent(extent));
}

inline std::string shape_bucket(const Shape& shape) {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) outer *= shape[i];
  return upto("rows", outer) + upto("cols", shape.empty() ? 1 : shape.back());
}

// The bucket of a workload in words after "<op> <residency>", per descriptor type (defined with
// the other facts of its family in op_table/kinds/*.cpp): fields the kind ignores are left out,
// as they are from its key.
std::string bucket_words(OpKind op, const QuantizeDesc& d);
std::string bucket_words(OpKind op, const RequantizeDesc& d);
std::string bucket_words(OpKind op, const MatmulDesc& d);
std::string bucket_words(OpKind op, const DynamicQuantizeDesc& d);
std::string bucket_words(OpKind op, const LinearDesc& d);
std::string bucket_words(OpKind op, const ConvDesc& d);

}  // namespace qforge::accel
