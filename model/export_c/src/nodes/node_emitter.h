// How each integer op becomes C: one emitter per op kind, each in its own file, so adding an op
// to the exporter is one file here plus its kernel in qforge_nn_int8.c. The orchestrator
// (emit_c.cpp) owns the arena and the files; an emitter writes the op's constant data (into
// weights.c, declared in model_weights.h) and the statement that runs it (into model.c).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "qforge/model/integer_program.h"

namespace qforge::model::export_c {

struct EmitContext {
  const IntegerProgram& program;
  const IntegerOp& op;
  std::string symbol;  // a C identifier prefix unique to this op: "op3"
  std::string input;   // C expressions of the op's buffers: "in" for the float input,
  std::string output;  // "arena + 1024" for the others (arena points to int8_t or int16_t)
  std::string input2;  // add's second operand; empty otherwise
};

struct EmittedOp {
  std::string weights;       // definitions for weights.c
  std::string declarations;  // extern declarations for model_weights.h
  std::string statics;       // file-scope constants in model.c (parameter structs)
  std::string body;          // statements inside model_run_arena
};

class NodeEmitter {
 public:
  virtual ~NodeEmitter() = default;
  virtual EmittedOp emit(const EmitContext& ctx) const = 0;
};

const NodeEmitter& emitter_for(IntegerOpKind kind);

// Whether the program is TFLite's 16x8 variant (int16 activations): its ops call the _s16
// kernels of qforge_nn_int16.h.
inline bool is_16x8(const EmitContext& ctx) { return ctx.program.activations == DType::int16; }

// Shared formatting: a float as an exact C hexadecimal literal ("0x1.8p-3f"), and a const array
// definition with its extern declaration.
std::string float_literal(float v);
void emit_array(EmittedOp& out, const std::string& c_type, const std::string& name,
                const std::vector<long long>& values);

}  // namespace qforge::model::export_c
