// Quantization recipe JSON (load_recipe reads files through it): any text gives a valid recipe
// or a qforge::Error. An accepted recipe must also survive what tools do with it next: written
// back by recipe_to_json and parsed again it is the same recipe (abort otherwise), and its
// user-written RE2 patterns are matched against a small fixed graph by resolve(), which may
// only throw qforge::Error (a rule that decides no node is one).
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include "qforge/error.h"
#include "qforge/model/recipe.h"

namespace {

// Names and op types as PyTorch exports them, plus an empty and a non-ASCII name.
constexpr std::array<qforge::model::NodeRef, 7> kNodes{{
    {"/features/conv1/Conv", "Conv"},
    {"/features/bn1/BatchNormalization", "BatchNormalization"},
    {"/encoder/layer.0/attention/self/MatMul", "MatMul"},
    {"/encoder/layer.0/attention/Softmax", "Softmax"},
    {"/classifier/Gemm", "Gemm"},
    {"", "Relu"},
    {"/d\xc3\xa9"
     "cod\xc3\xa9/Add_1",
     "Add"},
}};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qforge::model;
  Recipe recipe;
  try {
    recipe = recipe_from_json(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const qforge::Error&) {
    return 0;
  }
  const std::string text = recipe_to_json(recipe);
  try {
    if (recipe_from_json(text) != recipe) {
      std::fprintf(stderr, "recipe_json: the recipe read back differs:\n%s\n", text.c_str());
      std::abort();
    }
  } catch (const qforge::Error& e) {
    std::fprintf(stderr, "recipe_json: recipe_to_json wrote a recipe it rejects (%s):\n%s\n",
                 e.what(), text.c_str());
    std::abort();
  }
  try {
    const RecipeResolution resolution = resolve(recipe, kNodes);
    format_report(recipe, resolution, kNodes);
  } catch (const qforge::Error&) {
  }
  return 0;
}
