// Hopper warpgroup MMA on e4m3 with register A fragments and N in {16, 32, 64, 128, 160, 176}: the
// fp8 register-A (out^T) kernels, whose token side is wgmma's N (moe_wna16_wgmma's e4m3 form, the
// w4a8_wgmma register form), cut to the tokens a tile holds, or widened past 128 at large M (more
// tensor work per expanded fragment, stage and barrier; the published humming-kernels runs W4A8
// token tiles of up to 200 on sm90). sm_90a only.
//
// d[64xN] (+)= A[64x32] (e4m3 registers) * B[Nx32]^T (e4m3, K-major smem), `accumulate` false
// overwriting d; layouts as wgmma_narrow.cuh's (fp8 wgmma takes no transpose operands). The
// registers of A must stay unchanged until the wgmma reading them has completed (wgmma_wait).
#pragma once
#include "humming/mma/wgmma.cuh"
#include "humming/mma/wgmma_narrow.cuh"
#include "humming/mma/wgmma_wide.cuh"

namespace humming {

template <int N>
struct WgmmaE4m3Rs;

#define HM_WGMMA_E4M3_RS_CASE(N)                                                                 \
  template <>                                                                                    \
  struct WgmmaE4m3Rs<N> {                                                                        \
    HM_DEVICE static void run(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b, bool accumulate) { \
      asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " HM_WGMMA_N##N##_PRED                     \
                   ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {"            \
                   HM_WGMMA_N##N##_TEXT ", p, 1, 1;\n}"                                          \
                   : HM_WGMMA_N##N##_OUTPUTS                                                     \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),                    \
                     "r"(static_cast<int>(accumulate)));                                          \
    }                                                                                            \
  };

HM_WGMMA_E4M3_RS_CASE(16)
HM_WGMMA_E4M3_RS_CASE(32)
HM_WGMMA_E4M3_RS_CASE(64)

// N = 160 / 176: the accumulator lists D80 / D88 of wgmma.cuh, A and the predicate placed as
// wgmma_wide.cuh's 16-bit forms (fp8 takes no transpose operand).
#define HM_WGMMA_E4M3_WIDE_RS_CASE(N, D)                                                         \
  template <>                                                                                    \
  struct WgmmaE4m3Rs<N> {                                                                        \
    HM_DEVICE static void run(float (&d)[D], const u32 (&a)[4], u64 desc_b, bool accumulate) {   \
      asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " HM_WGMMA_N##N##_PRED                     \
                   ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {"            \
                   HM_WGMMA_D##D##_TEXT "}, " HM_WGMMA_N##N##_A ", p, 1, 1;\n}"                  \
                   : HM_WGMMA_D##D##_OUTPUTS                                                     \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),                    \
                     "r"(static_cast<int>(accumulate)));                                          \
    }                                                                                            \
  };

HM_WGMMA_E4M3_WIDE_RS_CASE(160, 80)
HM_WGMMA_E4M3_WIDE_RS_CASE(176, 88)

template <>
struct WgmmaE4m3Rs<128> {
  HM_DEVICE static void run(float (&d)[64], const u32 (&a)[4], u64 desc_b, bool accumulate) {
    wgmma_m64n128k32_e4m3_rs(d, a, desc_b, accumulate);
  }
};

}  // namespace humming
