// Hopper warpgroup MMA with 16-bit register A fragments (fp16 / bf16) and a wide N (160 or 176):
// the WnA16 register-A form's token tiles wider than 128 at large M, where the tokens are wgmma's
// N side (out^T = W x^T). A wider N gives each dequantized A fragment, each stage and each
// barrier more tensor work (the published humming-kernels runs 176-token tiles there on sm90).
// 192 is left out: with its 2 x 96 accumulators ptxas 13 serializes the kernel's wgmmas (C7512,
// too few registers). Kept apart from wgmma_f16.cuh so the 128-token kernels' translation units
// stay unchanged. sm_90a only.
//
// Layouts are those of the m64n128 forms (humming/mma/wgmma.cuh, wgmma_f16.cuh) extended to N
// columns: lane l of warp w holds d[4j + 0/1] = row 16w + l/4, columns 8j + 2(l%4) + 0/1, and
// d[4j + 2/3] the same columns of row + 8 (j < N/8); a[4] is the mma.sync m16n8k16 A fragment of
// its rows.
#pragma once
#include "humming/datatype/act_types.cuh"
#include "humming/mma/wgmma.cuh"

namespace humming {

// asm text of A, the B descriptor (after the N/2 accumulators) and the scale-d predicate's source,
// per N. Macros: asm text must be a string literal.
#define HM_WGMMA_N160_A "{%80, %81, %82, %83}, %84"
#define HM_WGMMA_N160_PRED "%85"
#define HM_WGMMA_N176_A "{%88, %89, %90, %91}, %92"
#define HM_WGMMA_N176_PRED "%93"

// d[64xN] (+)= A[64x16] (registers) * B[Nx16]^T (K-major smem, trans-b 0); D: N / 2, the
// accumulator count whose operand lists wgmma.cuh defines. `accumulate` false overwrites d. The
// registers must stay unchanged until the wgmma reading them has completed (wgmma_wait).
#define HM_WGMMA_WIDE_RS(N, D, TYPE)                                                            \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " HM_WGMMA_N##N##_PRED                       \
               ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {"      \
               HM_WGMMA_D##D##_TEXT "}, " HM_WGMMA_N##N##_A ", p, 1, 1, 0;\n}"                  \
               : HM_WGMMA_D##D##_OUTPUTS                                                        \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),                       \
                 "r"(static_cast<int>(accumulate)))

template <typename ActT, int N>
struct WgmmaWideRs;

#define HM_WGMMA_WIDE_RS_CASE(ACT, TYPE, N, D)                                                  \
  template <>                                                                                   \
  struct WgmmaWideRs<ACT, N> {                                                                  \
    HM_DEVICE static void run(float (&d)[D], const u32 (&a)[4], u64 desc_b, bool accumulate) {  \
      HM_WGMMA_WIDE_RS(N, D, TYPE);                                                             \
    }                                                                                           \
  };

HM_WGMMA_WIDE_RS_CASE(half, "f16", 160, 80)
HM_WGMMA_WIDE_RS_CASE(half, "f16", 176, 88)
HM_WGMMA_WIDE_RS_CASE(nv_bfloat16, "bf16", 160, 80)
HM_WGMMA_WIDE_RS_CASE(nv_bfloat16, "bf16", 176, 88)

}  // namespace humming
