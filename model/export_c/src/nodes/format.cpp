// Formatting shared by the node emitters.
#include <cmath>
#include <cstdio>

#include "nodes/node_emitter.h"
#include "qforge/error.h"

namespace qforge::model::export_c {

std::string float_literal(float v) {
  if (!std::isfinite(v))
    throw Error(ErrorCode::invalid_argument,
                "export-c: a float constant is not finite; expected finite constants");
  char text[64];
  std::snprintf(text, sizeof text, "%af", static_cast<double>(v));  // exact in C99
  return text;
}

void emit_array(EmittedOp& out, const std::string& c_type, const std::string& name,
                const std::vector<long long>& values) {
  const std::string size = std::to_string(values.size());
  out.declarations += "extern const " + c_type + " " + name + "[" + size + "];\n";
  std::string& w = out.weights;
  w += "const " + c_type + " " + name + "[" + size + "] = {";
  for (std::size_t i = 0; i < values.size(); ++i) {
    w += i % 16 == 0 ? "\n  " : " ";
    // INT32_MIN has no literal of type int32_t: write it as an expression.
    w += values[i] == -2147483648LL ? std::string("(-2147483647 - 1)") : std::to_string(values[i]);
    w += ",";
  }
  w += "\n};\n\n";
}

}  // namespace qforge::model::export_c
