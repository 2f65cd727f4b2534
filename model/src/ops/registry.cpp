#include <algorithm>

#include "ops/kernel.h"

namespace qforge::model::ops {

void KernelRegistry::add(OpKernel kernel) {
  if (find(kernel.op_type))
    throw Error(ErrorCode::internal, "kernel for " + kernel.op_type + " registered twice");
  kernels_.push_back(std::move(kernel));
}

const OpKernel* KernelRegistry::find(std::string_view op_type) const {
  for (const OpKernel& k : kernels_)
    if (k.op_type == op_type) return &k;
  return nullptr;
}

const KernelRegistry& kernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_elementwise(r);
    register_activations(r);
    register_matmul(r);
    register_conv(r);
    register_pool(r);
    register_normalization(r);
    register_softmax(r);
    register_reduce(r);
    register_shape_ops(r);
    register_data_movement(r);
    register_misc(r);
    register_quantize_linear(r);
    register_compare(r);
    register_minmax(r);
    register_range(r);
    return r;
  }();
  return registry;
}

std::string supported_ops_text() {
  std::vector<const OpKernel*> sorted;
  for (const OpKernel& k : kernels().all()) sorted.push_back(&k);
  std::sort(sorted.begin(), sorted.end(),
            [](const OpKernel* a, const OpKernel* b) { return a->op_type < b->op_type; });
  std::string s;
  for (const OpKernel* k : sorted) {
    if (!s.empty()) s += ", ";
    s += k->op_type;
  }
  return s;
}

}  // namespace qforge::model::ops
