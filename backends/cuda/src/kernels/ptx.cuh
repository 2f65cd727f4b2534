// Thin wrappers over the PTX instructions the tensor-core kernels use (sm_80+): asynchronous
// global->shared copies, ldmatrix and the int8 mma.sync. Copies and ldmatrix are volatile with
// a memory clobber so that the compiler keeps them in order with the barriers around them.
#pragma once

#include <cstdint>

namespace qforge::cuda::dev {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes, or zero-fills the destination when src_bytes == 0 (out-of-range tiles).
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
// The same through L1 (.ca): for small operands every CTA reads.
__device__ __forceinline__ void cp_async16_ca(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
// Copies 4 bytes (through L1: .cg takes only 16), or zero-fills them when src_bytes == 0.
__device__ __forceinline__ void cp_async4(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t& r0, std::uint32_t& r1, std::uint32_t& r2,
                                            std::uint32_t& r3, std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}

// c += a * b for one m16n8k32 tile: a row-major 16x32 int8 (4 registers), b column-major
// 32x8 int8 (2 registers), c 16x8 int32 (4 registers). Integer accumulation wraps modulo 2^32.
__device__ __forceinline__ void mma_s8_m16n8k32(int (&c)[4], const std::uint32_t (&a)[4],
                                                const std::uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace qforge::cuda::dev
