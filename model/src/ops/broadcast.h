// numpy broadcasting as a row walker: the kernels of elementwise ops loop over the last output
// axis with one stride per operand (0 where that operand is broadcast), so the inner loop stays
// a plain strided loop the compiler vectorises when every stride is 1.
#pragma once

#include <array>
#include <cstdint>

#include "qforge/shape.h"

namespace qforge::model::ops {

// For every run of the last output axis: f(out_offset, in_offsets, in_strides, n), where
// element j of the run is out[out_offset + j] = op(in_k[in_offsets[k] + j * in_strides[k]]).
// Each in[k] must broadcast to `out` (checked by the caller's infer).
template <std::size_t N, class F>
void broadcast_rows(const Shape& out, const std::array<const Shape*, N>& in, F&& f) {
  const std::size_t rank = out.size();
  std::array<std::int64_t, N> inner{};
  if (rank == 0) {
    std::array<std::int64_t, N> zero{};
    f(std::int64_t{0}, zero, inner, std::int64_t{1});
    return;
  }
  // strides[k][d]: step in operand k when output index d grows by one.
  std::array<Shape, N> strides;
  for (std::size_t k = 0; k < N; ++k) {
    const Shape& s = *in[k];
    strides[k].assign(rank, 0);
    std::int64_t step = 1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::size_t d_in = s.size() - 1 - i;
      const std::size_t d_out = rank - 1 - i;
      strides[k][d_out] = s[d_in] == 1 ? 0 : step;
      step *= s[d_in];
    }
    inner[k] = strides[k][rank - 1];
  }
  const std::int64_t n = out[rank - 1];
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) rows *= out[d];
  if (n == 0 || rows == 0) return;
  Shape index(rank, 0);
  std::array<std::int64_t, N> offsets{};
  for (std::int64_t r = 0; r < rows; ++r) {
    f(r * n, offsets, inner, n);
    // Advance the outer index like an odometer, updating operand offsets incrementally.
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < out[d]) {
        for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
        break;
      }
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * (out[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace qforge::model::ops
