// Warp-level 8-bit tensor-core MMA, D(16x8) += A(16x32) * B(32x8): int8 (s32 accumulators, exact,
// sm80+) and fp8 E4M3 (f32 accumulators, sm89+). Fragments: A four registers of 4 codes (rows g and
// g+8, K bytes 4t..4t+3 and 16+4t..), B two registers (K bytes 4t.. and 16+4t.. of column g).
// The PPU dialects add Mma16n16k32 (int8 only: the PPU has no fp8 MMA), below.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/arith/dialect.cuh"
#include "humming/datatype/code8.cuh"

namespace humming {

template <int CODE>
struct Mma16832;

template <>
struct Mma16832<kCode8Int8> {
  using Acc = int;
  HM_DEVICE static void run(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Mma16832<kCode8E4m3> {
  using Acc = float;
  HM_DEVICE static void run(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    // fp8 mma.sync needs sm_89+; the Python side never renders an fp8 kernel for older arches.
    __trap();
#endif
  }
};

#if HM_PPU_LAYOUT
// The PPU's N=16 int8 MMA, D(16x16 s32) += A(16x32) * B(32x16), accumulators in the PPU order of
// mma_n16.cuh: pair q of d is M half q/2 and n8 block q%2; b[0], b[1] are the B registers of n8
// block 0, b[2], b[3] of block 1. HUMMING_DIALECT=1 issues `ppu.mma ... m16n16k32 .satfinite`
// (the PPU's only int8 form; s32 sums of K < 2^31 / 127^2 never saturate); HUMMING_DIALECT=2
// issues two sm80 m16n8k32, one per n8 block, on the PPU-ordered accumulator pairs.
struct Mma16n16k32Int8 {
  HM_DEVICE static void run(int (&d)[8], const u32 (&a)[4], const u32 (&b)[4]) {
#if HUMMING_DIALECT == HM_DIALECT_PPU
    asm volatile(
        "ppu.mma.sync.aligned.m16n16k32.row.col.satfinite.s32.s8.s8.s32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
        "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
          "+r"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
#else
    // sm80 m16n8 fragments list the M halves first: {M0, M1} of block 0 is PPU pairs 0 and 2.
    int lo[4] = {d[0], d[1], d[4], d[5]};
    int hi[4] = {d[2], d[3], d[6], d[7]};
    Mma16832<kCode8Int8>::run(lo, a, b[0], b[1]);
    Mma16832<kCode8Int8>::run(hi, a, b[2], b[3]);
    d[0] = lo[0], d[1] = lo[1], d[4] = lo[2], d[5] = lo[3];
    d[2] = hi[0], d[3] = hi[1], d[6] = hi[2], d[7] = hi[3];
#endif
  }
};
#endif

}  // namespace humming
