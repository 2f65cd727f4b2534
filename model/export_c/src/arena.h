// The static arena: every activation tensor gets a byte offset (a multiple of 4); tensors whose
// lifetimes overlap never share bytes. A reshape's output is its input's buffer.
#pragma once

#include <cstdint>
#include <vector>

#include "qforge/model/integer_program.h"

namespace qforge::model::export_c {

struct ArenaPlan {
  std::vector<std::int64_t> offset;  // per tensor
  std::int64_t bytes = 0;
};

ArenaPlan plan_arena(const IntegerProgram& program);

}  // namespace qforge::model::export_c
