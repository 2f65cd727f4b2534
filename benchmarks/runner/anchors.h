// Anchors measured in the same run (DESIGN.md, "Performance method"): memcpy moving the same
// bytes for memory-bound ops (on every core when the copy is large enough to gain from it); for
// matmuls won by a GPU plugin cuBLASLt's int8 GEMM (when built with the CUDA toolkit and a GPU
// is there), otherwise the onednn plugin when it loaded (its time comes from the tuning itself)
// and otherwise OpenBLAS sgemm on the same M, N, K when qforge-bench was built with it.
// Convolutions take OpenBLAS's float im2col + sgemm of the same geometry (what model/'s float
// Conv does for non-depthwise layers), unless the onednn plugin served them.
#pragma once

#include <optional>

#include "results.h"

namespace qforge::bench {

// memcpy of amount/2 bytes (a copy reads and writes each byte: the same traffic), split over
// every core from 512 KiB on.
Anchor memcpy_anchor(double bytes_moved);
// sgemm of [m, k] x [k, n] floats; nullopt when built without OpenBLAS.
std::optional<Anchor> sgemm_anchor(std::int64_t m, std::int64_t n, std::int64_t k);

// float im2col + sgemm (one per image and group, Caffe's NCHW layout) of d's geometry, im2col
// included in the time; nullopt when built without OpenBLAS.
std::optional<Anchor> conv_sgemm_anchor(const ConvDesc& d);

// Picks and measures the anchor for one workload result (report filled in).
void add_anchor(WorkloadResult& r, const OpDesc& op);

}  // namespace qforge::bench
