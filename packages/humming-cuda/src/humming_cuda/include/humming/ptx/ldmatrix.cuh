// ldmatrix: four 8x8 b16 matrices from shared memory into the A-operand fragment of mma.sync.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/arith/dialect.cuh"
#include "humming/ptx/cp_async.cuh"

namespace humming {

#if HUMMING_DIALECT == HM_DIALECT_PPU
// The PPU's plain (non-swizzled) form reads ordinary cp.async-filled shared memory. Public PPU
// kernels note that its x4 returns the second and third matrices in the opposite register order
// from the MMA's A operand, so those outputs are bound to r[2] / r[1] directly (no moves).
HM_DEVICE void ldmatrix_x4(u32 (&r)[4], const void* smem) {
  asm volatile("ppu.ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[2]), "=r"(r[1]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}
#else
HM_DEVICE void ldmatrix_x4(u32 (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}
#endif

}  // namespace humming
