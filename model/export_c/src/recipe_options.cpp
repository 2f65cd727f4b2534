#include <optional>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/model/export_c_recipe.h"

namespace qforge::model {

LowerOptions lower_options_from_recipe(const Recipe& recipe, const Graph& graph) {
  std::vector<NodeRef> nodes;
  for (const Node& n : graph.nodes) nodes.push_back({n.name, n.op_type});
  const RecipeResolution res = resolve(recipe, nodes);
  std::optional<calibration::MethodOptions> method;
  std::optional<DType> dtype;
  std::string first;
  for (std::size_t i = 0; i < res.nodes.size(); ++i) {
    const auto& q = res.nodes[i].quantize;
    if (!q) continue;
    const std::string who = graph.nodes[i].describe() + " (decided by " +
                            (res.nodes[i].by_default() ? std::string("the recipe's default")
                                                       : rule_name(recipe, res.nodes[i].rule)) +
                            ")";
    const bool weights_ok = !q->weights || (q->weights->dtype == DType::int8 &&
                                            q->weights->mapping == Mapping::symmetric &&
                                            q->weights->granularity != Granularity::block &&
                                            q->weights->rounding == WeightRounding::nearest);
    const auto& a = q->activations;
    const bool acts_ok = a && a->mode == ActivationMode::static_range &&
                         ((a->dtype == DType::int8 && a->mapping == Mapping::affine) ||
                          (a->dtype == DType::int16 && a->mapping == Mapping::symmetric));
    if (!weights_ok || !acts_ok)
      throw Error(ErrorCode::unsupported,
                  "export-c: " + who + " asks for " + describe(q) +
                      "; the C export writes int8 symmetric weights per channel, rounded to "
                      "nearest, with static int8 affine or int16 symmetric (16x8) activations "
                      "only");
    if (dtype && *dtype != a->dtype)
      throw Error(ErrorCode::unsupported,
                  "export-c: " + who + " asks for " + std::string(name(a->dtype)) +
                      " activations, " + first + " for " + std::string(name(*dtype)) +
                      "; the C export writes every activation in one dtype");
    if (!dtype) dtype = a->dtype;
    if (method && !(*method == q->activations->calibration))
      throw Error(ErrorCode::unsupported, "export-c: " + who +
                                              " calibrates with another method than " + first +
                                              "; the C export calibrates every activation one way");
    if (!method) method = q->activations->calibration, first = who;
  }
  LowerOptions options;
  options.calibration = method.value_or(calibration::MethodOptions{});
  options.activations = dtype.value_or(DType::int8);
  return options;
}

}  // namespace qforge::model
