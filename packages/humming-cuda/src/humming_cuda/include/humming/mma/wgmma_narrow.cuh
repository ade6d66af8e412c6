// Hopper warpgroup MMA with 16-bit register A fragments (fp16 / bf16) and a narrow N (16, 32, 48, 64
// or 96): the WnA16 register-A form at small M, where the tokens are wgmma's N side (out^T = W x^T)
// and a 128-wide N would compute mostly padding; 96 also where 128-token tiles leave a wave
// mostly empty (6144 x 4096 at M = 1024: 192 tiles of 128 tokens are 1.45 waves of 132 CTAs, 264
// of 96 are 2); 48 for MoE experts of ~32 rows (the Qwen3-30B-A3B layer at M = 512 routes 32 per
// expert under uniform routing: a 64-row block is half padding). Kept apart from wgmma_f16.cuh so
// the large-M kernels' translation units stay unchanged. sm_90a only.
//
// Layouts are those of the m64n128 forms (humming/mma/wgmma.cuh, wgmma_f16.cuh) cut to N columns:
// lane l of warp w holds d[4j + 0/1] = row 16w + l/4, columns 8j + 2(l%4) + 0/1, and d[4j + 2/3]
// the same columns of row + 8 (j < N/8); a[4] is the mma.sync m16n8k16 A fragment of its rows.
#pragma once
#include "humming/datatype/act_types.cuh"
#include "humming/mma/wgmma.cuh"

namespace humming {

// asm text of the accumulators (the first N/2 operands) and then of A, the B descriptor and the
// scale-d predicate's source, per N; the output lists to go with them. Macros: asm text must be a
// string literal.
#define HM_WGMMA_N16_TEXT "%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12"
#define HM_WGMMA_N16_PRED "%13"
#define HM_WGMMA_N16_OUTPUTS                                                                    \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])

#define HM_WGMMA_N32_TEXT                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "                     \
  "{%16, %17, %18, %19}, %20"
#define HM_WGMMA_N32_PRED "%21"
#define HM_WGMMA_N32_OUTPUTS                                                                    \
  HM_WGMMA_N16_OUTPUTS, "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),          \
      "+f"(d[13]), "+f"(d[14]), "+f"(d[15])

#define HM_WGMMA_N48_TEXT                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                      \
  "%16, %17, %18, %19, %20, %21, %22, %23}, {%24, %25, %26, %27}, %28"
#define HM_WGMMA_N48_PRED "%29"
#define HM_WGMMA_N48_OUTPUTS                                                                    \
  HM_WGMMA_N32_OUTPUTS, "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),        \
      "+f"(d[21]), "+f"(d[22]), "+f"(d[23])

#define HM_WGMMA_N64_TEXT                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                      \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "           \
  "{%32, %33, %34, %35}, %36"
#define HM_WGMMA_N64_PRED "%37"
#define HM_WGMMA_N64_OUTPUTS                                                                    \
  HM_WGMMA_N32_OUTPUTS, "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),        \
      "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]),             \
      "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

#define HM_WGMMA_N96_TEXT                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                      \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "            \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "            \
  "{%48, %49, %50, %51}, %52"
#define HM_WGMMA_N96_PRED "%53"
#define HM_WGMMA_N96_OUTPUTS                                                                    \
  HM_WGMMA_N64_OUTPUTS, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),        \
      "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),             \
      "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])

// d[64xN] (+)= A[64x16] (registers) * B[Nx16]^T (K-major smem, trans-b 0) for N in {16, 32, 48, 64,
// 96};
// `accumulate` false overwrites d. The registers must stay unchanged until the wgmma reading them
// has completed (wgmma_wait).
#define HM_WGMMA_NARROW_RS(N, TYPE)                                                             \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " HM_WGMMA_N##N##_PRED                       \
               ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {"      \
               HM_WGMMA_N##N##_TEXT ", p, 1, 1, 0;\n}"                                          \
               : HM_WGMMA_N##N##_OUTPUTS                                                        \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),                       \
                 "r"(static_cast<int>(accumulate)))

template <typename ActT, int N>
struct WgmmaNarrowRs;

#define HM_WGMMA_NARROW_RS_CASE(ACT, TYPE, N)                                                   \
  template <>                                                                                   \
  struct WgmmaNarrowRs<ACT, N> {                                                                \
    HM_DEVICE static void run(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b, bool accumulate) { \
      HM_WGMMA_NARROW_RS(N, TYPE);                                                              \
    }                                                                                           \
  };

HM_WGMMA_NARROW_RS_CASE(half, "f16", 16)
HM_WGMMA_NARROW_RS_CASE(half, "f16", 32)
HM_WGMMA_NARROW_RS_CASE(half, "f16", 64)
HM_WGMMA_NARROW_RS_CASE(nv_bfloat16, "bf16", 16)
HM_WGMMA_NARROW_RS_CASE(nv_bfloat16, "bf16", 32)
HM_WGMMA_NARROW_RS_CASE(nv_bfloat16, "bf16", 64)
HM_WGMMA_NARROW_RS_CASE(half, "f16", 96)
HM_WGMMA_NARROW_RS_CASE(nv_bfloat16, "bf16", 96)
HM_WGMMA_NARROW_RS_CASE(half, "f16", 48)
HM_WGMMA_NARROW_RS_CASE(nv_bfloat16, "bf16", 48)

}  // namespace humming
