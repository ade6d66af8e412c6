// E4M3 x int4 k32 MMA steps as two fp16 m16n8k16 MMAs (sm_90 W4A8).
//
// Why: sm_90 has no fp8 mma.sync in hardware. ptxas lowers each m16n8k32 e4m3 MMA to operand
// conversions, two fp16 MMAs into fresh accumulators and four fp32 adds, and converts the
// activation fragment again for every weight block. On the H200 that made the W4A8 decode kernel
// instruction-bound at 370 warp instructions per KB of weights, 20% of DRAM bandwidth
// (benchmarks/notes/session14.md). Here the activation fragment is converted once per k32 step
// and reused by every weight block, int4 weights become fp16 with two instructions per pair, and
// the MMAs accumulate in place. Exact as the e4m3 MMA: every e4m3 and int4 value is an fp16
// value and their products are exact in the fp32 accumulators. (E2M1 and 8-bit weights measured
// slower in this form: W8a8Kernel::kF16Mma.)
//
// Pairing: word w of the W4A8 layout holds K elements 4t + j (nibble j) and 16 + 4t + j (nibble
// j + 4) of its column; fp16 pair j is (nibble j, nibble j + 4), which the int4 magic-number
// conversion yields without moving nibbles across halves. MMA 0 takes pairs 0 and 1 (k slots 2t,
// 2t + 1 and 2t + 8, 2t + 9), MMA 1 pairs 2 and 3; the activations are paired the same way from
// the 8-bit A fragment's registers a0 (K 4t..4t+3) and a2 (K 16+4t..), so both sides agree on
// which K element sits in each slot.
#pragma once
#include <cuda_fp16.h>
#include "humming/arith/common.cuh"
#include "humming/datatype/code8.cuh"
#include "humming/datatype/dequant.cuh"
#include "humming/datatype/nibble8.cuh"
#include "humming/mma/mma_sync.cuh"

// Where fp8 mma.sync is lowered to fp16 MMAs by ptxas (sm_90), kernels take this path instead.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#define HM_FP8_MMA_AS_F16 1
#else
#define HM_FP8_MMA_AS_F16 0
#endif

namespace humming {

// Registers lo, hi of four e4m3 codes each (K elements e and 16 + e of byte e) -> fp16 pairs
// p[j] = (lo byte j, hi byte j).
HM_DEVICE void e4m3_pairs(u32 lo, u32 hi, u32 (&p)[4]) {
  const u32 x01 = prmt(lo, hi, 0x5140u), x23 = prmt(lo, hi, 0x7362u);
  p[0] = e4m3x2_to_f16x2(x01);
  p[1] = e4m3x2_to_f16x2(x01 >> 16);
  p[2] = e4m3x2_to_f16x2(x23);
  p[3] = e4m3x2_to_f16x2(x23 >> 16);
}

// Offset-binary int4 codes (value = code - 8) of one layout word -> fp16 pairs p[j] = (nibble j,
// nibble j + 4), read in place by the WnA16 dequantizer (Dequant::apply_in_place: 1024 + q under
// the magic number, or 1024 + 16q fixed by one exact hfma2). magic2: Int4::kMagic2 as a
// pinned_constant.
using Int4 = Dequant<half, kWeightInt, 4, 0, 0, kZeroNone, false>;

HM_DEVICE void int4_pairs(u32 w, u32 (&p)[4], u32 magic2) {
  const GroupParams<half> none{};
  const u32 w8 = w >> 8;
  p[0] = Int4::apply_in_place<0>(w, none, magic2);
  p[1] = Int4::apply_in_place<1>(w, none, magic2);
  p[2] = Int4::apply_in_place<0>(w8, none, magic2);
  p[3] = Int4::apply_in_place<1>(w8, none, magic2);
}

// Whether a W4A8 nibble table T0..T3 is int4's (humming_cuda.kernels.w8a8.nibbles.nibble_table(
// "int4", "e4m3")), i.e. the layout holds offset-binary int4 codes that int4_pairs converts.
constexpr bool is_int4_e4m3_table(u32 t0, u32 t1, u32 t2, u32 t3) {
  return t0 == 0xcaccced0u && t1 == 0xb8c0c4c8u && t2 == 0x44403800u && t3 == 0x4e4c4a48u;
}

// The 8-bit A fragment {a0, a1, a2, a3} (rows g, g + 8; K 4t.. and 16 + 4t..) -> the fp16 A
// fragments of MMA 0 (h[0..3]) and MMA 1 (h[4..7]).
HM_DEVICE void e4m3_a_halves(const u32 (&a)[4], u32 (&h)[8]) {
  u32 g[4], g8[4];
  e4m3_pairs(a[0], a[2], g);
  e4m3_pairs(a[1], a[3], g8);
  h[0] = g[0], h[1] = g8[0], h[2] = g[1], h[3] = g8[1];
  h[4] = g[2], h[5] = g8[2], h[6] = g[3], h[7] = g8[3];
}

// d += A(16 x 32) * B(32 x 8) as two fp16 MMAs: A from e4m3_a_halves, B the weight pairs p.
HM_DEVICE void mma_k32_as_f16(float (&d)[4], const u32 (&h)[8], const u32 (&p)[4]) {
  const u32 a0[4] = {h[0], h[1], h[2], h[3]}, a1[4] = {h[4], h[5], h[6], h[7]};
  Mma16816<half>::run(d, a0, p[0], p[1]);
  Mma16816<half>::run(d, a1, p[2], p[3]);
}

}  // namespace humming
