// numpy broadcasting as a row walker: the kernels of elementwise ops loop over the last output
// axis with one stride per operand (0 where that operand is broadcast), so the inner loop stays
// a plain strided loop the compiler vectorises when every stride is 1.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "ops/parallel.h"
#include "qforge/shape.h"

namespace qforge::model::ops {

// The strides of a broadcast: per operand, its step along each output axis (0 where broadcast).
template <std::size_t N>
struct BroadcastWalk {
  const Shape* out = nullptr;
  std::array<Shape, N> strides;
  std::array<std::int64_t, N> inner{};  // steps along the last axis
  std::int64_t n = 0;                   // length of the last axis
  std::int64_t rows = 0;                // product of the other axes
};

template <std::size_t N>
BroadcastWalk<N> broadcast_walk(const Shape& out, const std::array<const Shape*, N>& in) {
  BroadcastWalk<N> w;
  w.out = &out;
  const std::size_t rank = out.size();
  for (std::size_t k = 0; k < N; ++k) {
    const Shape& s = *in[k];
    w.strides[k].assign(rank, 0);
    std::int64_t step = 1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::size_t d_in = s.size() - 1 - i;
      const std::size_t d_out = rank - 1 - i;
      w.strides[k][d_out] = s[d_in] == 1 ? 0 : step;
      step *= s[d_in];
    }
    if (rank) w.inner[k] = w.strides[k][rank - 1];
  }
  w.n = rank ? out[rank - 1] : 1;
  w.rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) w.rows *= out[d];
  return w;
}

// f over rows [begin, end) of the walk, each row whole.
template <std::size_t N, class F>
void walk_rows(const BroadcastWalk<N>& w, std::int64_t begin, std::int64_t end, F&& f) {
  const Shape& out = *w.out;
  const std::size_t rank = out.size();
  if (w.n == 0 || begin >= end) return;
  // The outer index of row `begin`, and the operand offsets there.
  Shape index(rank, 0);
  std::array<std::int64_t, N> offsets{};
  std::int64_t r = begin;
  for (std::size_t d = rank >= 1 ? rank - 1 : 0; d-- > 0;) {
    index[d] = r % out[d];
    r /= out[d];
    for (std::size_t k = 0; k < N; ++k) offsets[k] += index[d] * w.strides[k][d];
  }
  for (std::int64_t row = begin; row < end; ++row) {
    f(row * w.n, offsets, w.inner, w.n);
    // Advance the outer index like an odometer, updating operand offsets incrementally.
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < out[d]) {
        for (std::size_t k = 0; k < N; ++k) offsets[k] += w.strides[k][d];
        break;
      }
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= w.strides[k][d] * (out[d] - 1);
      index[d] = 0;
    }
  }
}

// For every run of the last output axis: f(out_offset, in_offsets, in_strides, n), where
// element j of the run is out[out_offset + j] = op(in_k[in_offsets[k] + j * in_strides[k]]).
// Each in[k] must broadcast to `out` (checked by the caller's infer).
template <std::size_t N, class F>
void broadcast_rows(const Shape& out, const std::array<const Shape*, N>& in, F&& f) {
  if (out.empty()) {
    std::array<std::int64_t, N> zero{};
    f(std::int64_t{0}, zero, zero, std::int64_t{1});
    return;
  }
  const BroadcastWalk<N> w = broadcast_walk(out, in);
  walk_rows(w, 0, w.rows, f);
}

// broadcast_rows across the executor's pool (ops/parallel.h): f runs concurrently on disjoint
// parts of the output, whole rows or, where rows are few and long, slices of a row (the same
// call with a shorter n and offsets moved along), so every element is computed as serially.
template <std::size_t N, class F>
void parallel_broadcast_rows(const Shape& out, const std::array<const Shape*, N>& in,
                             std::int64_t grain, F&& f) {
  if (out.empty() || element_count(out) < 2 * grain) {
    broadcast_rows(out, in, f);
    return;
  }
  const BroadcastWalk<N> w = broadcast_walk(out, in);
  if (w.n == 0 || w.rows == 0) return;
  if (w.rows >= 8 || w.n < 2 * grain) {
    parallel_for(w.rows, std::max<std::int64_t>(1, grain / w.n),
                 [&](std::int64_t begin, std::int64_t end) { walk_rows(w, begin, end, f); });
    return;
  }
  walk_rows(w, 0, w.rows,
            [&](std::int64_t o, const std::array<std::int64_t, N>& off,
                const std::array<std::int64_t, N>& st, std::int64_t n) {
              parallel_for(n, grain, [&](std::int64_t begin, std::int64_t end) {
                std::array<std::int64_t, N> moved = off;
                for (std::size_t k = 0; k < N; ++k) moved[k] += begin * st[k];
                f(o + begin, moved, st, end - begin);
              });
            });
}

}  // namespace qforge::model::ops
