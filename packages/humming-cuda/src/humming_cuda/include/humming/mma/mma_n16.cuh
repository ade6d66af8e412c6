// The PPU's N=16 tensor-core MMA, D(16x16 f32) += A(16x16) * B(16x16), for fp16 and bf16 operands,
// in the PPU accumulator order: pair q of d (d[2q], d[2q+1]) is M half q/2 and n8 block q%2 (N
// before M, where sm80 enumerates M halves first), at row lane/4 + 8*(q/2) and columns
// 8*(q%2) + 2*(lane%4) + {0, 1}. b[0], b[1] are the B registers of n8 block 0, b[2], b[3] of block 1.
//
// HUMMING_DIALECT=1 issues `ppu.mma ... m16n16k16`; HUMMING_DIALECT=2 (emulation on an NVIDIA GPU)
// issues each as two sm80 m16n8k16, one per n8 block, on the PPU-ordered accumulator pairs.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/arith/dialect.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/mma/mma_sync.cuh"

namespace humming {

#if HUMMING_DIALECT == HM_DIALECT_PPU
template <typename T>
struct Mma16n16;

#define HM_PPU_MMA16N16(TYPE, PTX_TYPE)                                                        \
  template <>                                                                                  \
  struct Mma16n16<TYPE> {                                                                      \
    HM_DEVICE static void run(float (&d)[8], const u32 (&a)[4], const u32 (&b)[4]) {           \
      asm volatile("ppu.mma.sync.aligned.m16n16k16.row.col.f32." PTX_TYPE "." PTX_TYPE         \
                   ".f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, "                \
                   "{%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};\n"                  \
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),   \
                     "+f"(d[6]), "+f"(d[7])                                                    \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),         \
                     "r"(b[2]), "r"(b[3]));                                                    \
    }                                                                                          \
  };
HM_PPU_MMA16N16(half, "f16")
HM_PPU_MMA16N16(nv_bfloat16, "bf16")
#undef HM_PPU_MMA16N16

#else
template <typename T>
struct Mma16n16 {
  HM_DEVICE static void run(float (&d)[8], const u32 (&a)[4], const u32 (&b)[4]) {
    // sm80 m16n8 fragments list the M halves first: {M0, M1} of block 0 is PPU pairs 0 and 2.
    float lo[4] = {d[0], d[1], d[4], d[5]};
    float hi[4] = {d[2], d[3], d[6], d[7]};
    Mma16816<T>::run(lo, a, b[0], b[1]);
    Mma16816<T>::run(hi, a, b[2], b[3]);
    d[0] = lo[0], d[1] = lo[1], d[4] = lo[2], d[5] = lo[3];
    d[2] = hi[0], d[3] = hi[1], d[6] = hi[2], d[7] = hi[3];
  }
};
#endif

// Output column (0..7) that B column `c` of an n8 block holds under the PPU weight layout: stored
// row c is canonical row [0,2,4,6,1,3,5,7][c]. On the PPU its MMA undoes this order itself; the
// emulation's sm80 MMA does not, so its epilogue writes through this map.
HM_DEVICE constexpr int ppu_b_row(int c) { return (c & 3) * 2 + (c >> 2); }

}  // namespace humming
