// Warp-level 8-bit tensor-core MMA, D(16x8) += A(16x32) * B(32x8): int8 (s32 accumulators, exact,
// sm80+) and fp8 E4M3 (f32 accumulators, sm89+). Fragments: A four registers of 4 codes (rows g and
// g+8, K bytes 4t..4t+3 and 16+4t..), B two registers (K bytes 4t.. and 16+4t.. of column g).
#pragma once
#include "humming/arith/common.cuh"
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

}  // namespace humming
