// Warp-level 4-bit tensor-core MMA, D(16x8) += A(16x64) * B(64x8), for the W4A4 GEMM.
//
// Fragments (PTX ISA "Matrix Fragments for mma.m16n8k64", same for .s4 and .e2m1): each register
// holds eight 4-bit elements, element 0 in bits [0, 4). With g = lane / 4 and t = lane % 4, A holds
// a0 = row g, K 8t..8t+7; a1 = row g+8, same K; a2 = row g, K 32+8t..; a3 = row g+8, K 32+8t..;
// B holds b0 = column g, K 8t..8t+7 and b1 = column g, K 32+8t... Read as 32-bit words of a
// K-contiguous row these are exactly the words the 8-bit m16n8k32 fragments read (word t and word
// t+4 of a 32-byte K step), so the W8A8 byte tile loader and ldmatrix addressing serve unchanged.
//
// Block-scaled fp4 (sm_120a / sm_121a): the scale matrices are M x SV (A) and SV x N (B), SV = K / V
// scale vectors of V elements each. With selector {byte-id 0, thread-id 0}, lanes t = 0 and t = 1
// of each quad supply the scales of rows g and g+8, and lane t = 0 those of column g; scale i of a
// row / column sits in byte i of the register (V = 16, ue4m3: four bytes; V = 32, ue8m0: two bytes,
// the low half). Other lanes' scale registers are ignored.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

enum W4a4Path : int { kW4Int4 = 0, kW4Nvfp4 = 1, kW4Mxfp4 = 2 };

template <int PATH>
struct Mma16864;

// int4 x int4 -> s32, exact. Native on sm_80-sm_89 only: later arches accept the instruction but
// ptxas expands it into a multi-instruction sequence, so humming_cuda never renders it there.
template <>
struct Mma16864<kW4Int4> {
  using Acc = int;
  static constexpr bool SCALED = false;
  HM_DEVICE static void run(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, u32, u32) {
    asm volatile(
        "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// NVRTC defines __CUDA_ARCH_SPECIFIC__ (1200 / 1210) for the "a" targets sm_120a / sm_121a.
#if defined(__CUDA_ARCH_SPECIFIC__) && (__CUDA_ARCH_SPECIFIC__ == 1200 || __CUDA_ARCH_SPECIFIC__ == 1210)
#define HUMMING_BLOCK_SCALED_FP4 1
#else
#define HUMMING_BLOCK_SCALED_FP4 0
#endif

// NVFP4: e2m1 x e2m1 with ue4m3 scales per 16 elements, f32 accumulation.
template <>
struct Mma16864<kW4Nvfp4> {
  using Acc = float;
  static constexpr bool SCALED = true;
  static constexpr int kScaleVec = 16;
  HM_DEVICE static void run(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, u32 sa, u32 sb) {
#if HUMMING_BLOCK_SCALED_FP4
    asm volatile(
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1."
        "f32.ue4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, %10, {0, 0}, "
        "%11, {0, 0};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(sa), "r"(sb));
#else
    // block-scaled mma needs sm_120a/sm_121a; the Python side never renders fp4 W4A4 elsewhere.
    __trap();
#endif
  }
};

// MXFP4: e2m1 x e2m1 with ue8m0 scales per 32 elements, f32 accumulation.
template <>
struct Mma16864<kW4Mxfp4> {
  using Acc = float;
  static constexpr bool SCALED = true;
  static constexpr int kScaleVec = 32;
  HM_DEVICE static void run(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, u32 sa, u32 sb) {
#if HUMMING_BLOCK_SCALED_FP4
    asm volatile(
        "mma.sync.aligned.m16n8k64.row.col.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32."
        "ue8m0 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, %10, {0, 0}, %11, "
        "{0, 0};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(sa), "r"(sb));
#else
    __trap();
#endif
  }
};

}  // namespace humming
