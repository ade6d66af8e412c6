// ldmatrix: four 8x8 b16 matrices from shared memory into the A-operand fragment of mma.sync.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/ptx/cp_async.cuh"

namespace humming {

HM_DEVICE void ldmatrix_x4(u32 (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}

}  // namespace humming
