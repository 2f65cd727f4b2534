#include "onnx/guarded_schemas.h"

#include <onnx/defs/shape_inference.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace qforge::model::onnx_io {
namespace {

// The input that holds the weight of the ops whose kernel ONNX reads from it; -1 for others.
int weight_input(const std::string& op, const std::string& domain) {
  if (!domain.empty() && domain != "ai.onnx") return -1;
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") return 1;
  if (op == "QLinearConv") return 3;
  return -1;
}

bool is_gemm(const std::string& op, const std::string& domain) {
  return op == "Gemm" && (domain.empty() || domain == "ai.onnx");
}

// Gemm's inference before version 13 reads dims 0 and 1 of A and B whatever their rank.
void infer_gemm_checked(onnx::InferenceContext& ctx,
                        const onnx::InferenceFunction& onnx_inference) {
  for (std::size_t i = 0; i < 2 && i < ctx.getNumInputs(); ++i)
    if (onnx::hasInputShape(ctx, i)) {
      const int rank = ctx.getInputType(i)->tensor_type().shape().dim_size();
      if (rank != 2)
        fail_shape_inference("input ", i, " (", i == 0 ? "A" : "B", ") has rank ", rank,
                             "; Gemm needs a matrix (rank 2)");
    }
  onnx_inference(ctx);
}

void infer_checked(onnx::InferenceContext& ctx, int weight,
                   const onnx::InferenceFunction& onnx_inference) {
  const auto w = static_cast<std::size_t>(weight);
  if (ctx.getAttribute("kernel_shape") == nullptr) {
    // The kernel comes from the weight's shape: without it there is nothing to infer.
    if (!onnx::hasInputShape(ctx, w)) return;
    if (onnx::hasInputShape(ctx, 0)) {
      const int data_rank = ctx.getInputType(0)->tensor_type().shape().dim_size();
      const int weight_rank = ctx.getInputType(w)->tensor_type().shape().dim_size();
      if (data_rank != weight_rank)
        fail_shape_inference("the weight (input ", weight, ") has rank ", weight_rank,
                             " and the data (input 0) rank ", data_rank,
                             "; a convolution needs them equal");
    }
  }
  onnx_inference(ctx);
}

class GuardedSchemas final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(key, max_inclusive_version, domain);
    const int weight = weight_input(key, domain);
    const bool gemm = is_gemm(key, domain);
    if (schema == nullptr || (weight < 0 && !gemm)) return schema;
    std::lock_guard lock(mutex_);
    std::unique_ptr<onnx::OpSchema>& guarded = guarded_[schema];
    if (!guarded) {
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      auto onnx_inference = schema->GetTypeAndShapeInferenceFunction();
      if (gemm)
        guarded->TypeAndShapeInferenceFunction([onnx_inference](onnx::InferenceContext& ctx) {
          infer_gemm_checked(ctx, onnx_inference);
        });
      else
        guarded->TypeAndShapeInferenceFunction(
            [weight, onnx_inference](onnx::InferenceContext& ctx) {
              infer_checked(ctx, weight, onnx_inference);
            });
    }
    return guarded.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

const onnx::ISchemaRegistry& guarded_schemas() {
  static const GuardedSchemas schemas;
  return schemas;
}

}  // namespace qforge::model::onnx_io
