// What a recipe asks of the C export (docs/C_EXPORT.md): `qforge export-c --recipe` and the
// Python package's QuantizedModel.export_c() lower a model as its recipe says.
#pragma once

#include "qforge/model/integer_program.h"
#include "qforge/model/recipe.h"

namespace qforge::model {

// The calibration method and activation dtype of the recipe's decisions on `graph`, after
// checking that every node it quantizes asks for what the integer-only export writes: TFLite's
// int8 spec (static int8 affine activations) or its 16x8 variant (static int16 symmetric
// activations), int8 symmetric weights, one method and one dtype for all. Throws qforge::Error
// (unsupported) naming the node and the rule that decided it otherwise.
LowerOptions lower_options_from_recipe(const Recipe& recipe, const Graph& graph);

}  // namespace qforge::model
