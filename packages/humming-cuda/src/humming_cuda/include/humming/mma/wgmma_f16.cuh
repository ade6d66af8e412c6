// Hopper warpgroup MMA on 16-bit operands (fp16 / bf16) held in shared memory, for the WnA16 wgmma
// family. Kept apart from wgmma.cuh so the fp8 kernels' translation units stay unchanged.
// sm_90a only.
#pragma once
#include "humming/datatype/act_types.cuh"
#include "humming/mma/wgmma.cuh"

namespace humming {

// d[64x128] (+)= A[64x16] * B[128x16]^T, f16 x f16 -> fp32, both K-major in smem (trans-a = trans-b
// = 0). The accumulator layout is the one of wgmma_m64n128k32_e4m3 (humming/mma/wgmma.cuh).
HM_DEVICE void wgmma_m64n128k16_f16(float (&d)[64], u64 desc_a, u64 desc_b, bool accumulate) {
  HM_WGMMA_M64N128_F32("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", ", 0, 0");
}

// d[64x128] (+)= A[64x16] * B[128x16]^T, bf16 x bf16 -> fp32, both K-major in smem (trans-a = trans-b
// = 0). The accumulator layout is the one of wgmma_m64n128k32_e4m3 (humming/mma/wgmma.cuh).
HM_DEVICE void wgmma_m64n128k16_bf16(float (&d)[64], u64 desc_a, u64 desc_b, bool accumulate) {
  HM_WGMMA_M64N128_F32("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", ", 0, 0");
}

// d[64x128] (+)= A[64x16] * B[128x16]^T, f16 x f16 -> fp32, A from registers (the mma.sync
// m16n8k16 A fragment per warp: a[0] = row g, k 2t..2t+1; a[1] = row g + 8; a[2] / a[3] the same
// at k + 8; g = lane / 4, t = lane % 4, rows of warp w start at 16w), B K-major in smem
// (trans-b = 0).
HM_DEVICE void wgmma_m64n128k16_f16_rs(float (&d)[64], const u32 (&a)[4], u64 desc_b,
                                       bool accumulate) {
  HM_WGMMA_M64N128_F32_RS("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", ", 0");
}

// Dispatch on the activation type (half -> f16, nv_bfloat16 -> bf16); defined for those two only.
template <typename ActT>
HM_DEVICE void wgmma_m64n128k16(float (&d)[64], u64 desc_a, u64 desc_b, bool accumulate);

template <>
HM_DEVICE void wgmma_m64n128k16<half>(float (&d)[64], u64 desc_a, u64 desc_b, bool accumulate) {
  wgmma_m64n128k16_f16(d, desc_a, desc_b, accumulate);
}

template <>
HM_DEVICE void wgmma_m64n128k16<nv_bfloat16>(float (&d)[64], u64 desc_a, u64 desc_b,
                                             bool accumulate) {
  wgmma_m64n128k16_bf16(d, desc_a, desc_b, accumulate);
}

}  // namespace humming
