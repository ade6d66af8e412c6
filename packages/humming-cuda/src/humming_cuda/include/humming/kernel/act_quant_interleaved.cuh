// Per-token / static e4m3 or int8 codes with every 16-byte chunk interleaved: byte p of a chunk
// holds the code of K (p >> 1) + 8 (p & 1) of the chunk, the order in which the e4m3 MoE kernel's
// register A bytes hold the weight codes (moe_wna16_wgmma_e4m3.cuh); K % 16 == 0. Scales and
// rounding are act_quant.cuh's (bit-identical codes, only their order differs). Kept apart from
// act_quant.cuh so the W8A8 units that include it stay byte-identical.
#pragma once
#include "humming/kernel/act_quant.cuh"

namespace humming {

// Codes of K 0-7 (lo) and 8-15 (hi) of a chunk -> the chunk in interleaved order.
HM_DEVICE uint4 interleave16(uint2 lo, uint2 hi) {
  u32 r[4];
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(r[0]) : "r"(lo.x), "r"(hi.x));
  asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(r[1]) : "r"(lo.x), "r"(hi.x));
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(r[2]) : "r"(lo.y), "r"(hi.y));
  asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(r[3]) : "r"(lo.y), "r"(hi.y));
  return make_uint4(r[0], r[1], r[2], r[3]);
}

template <typename T, int CODE, int MODE>
struct ActQuantInterleaved {
  static_assert(MODE != kActQuantGroup, "per-token or static scales");
  using Base = ActQuant<T, CODE, MODE, 8>;

  // One CTA per row, as ActQuant::rows.
  HM_DEVICE static void run(const T* x, const float* static_scale, u8* q, float* scales, int M,
                            int K, int lda) {
    allow_next_grid();
    wait_prior_grid();  // as ActQuant::run
    const int m = blockIdx.x;
    const T* row = x + static_cast<long long>(m) * lda;
    u8* qrow = q + static_cast<long long>(m) * K;
    const int chunks = K / 16;
    float scale;
    if constexpr (MODE == kActQuantStatic) {
      scale = static_scale[0];
    } else {
      float amax = 0.f;
      for (int c = threadIdx.x; c < chunks * 2; c += Base::THREADS) {
        float f[8];
        load8<T>(row + c * 8, f);
        amax = fmaxf(amax, amax8(f));
      }
      scale = __fdiv_rn(Base::block_max(amax), Code8Traits<CODE>::kMax);
    }
    if (threadIdx.x == 0) scales[m] = scale;
    const RoundedDivisor<MODE != kActQuantStatic> divisor(scale);
    for (int c = threadIdx.x; c < chunks; c += Base::THREADS) {
      float lo[8], hi[8];
      load8<T>(row + c * 16, lo);
      load8<T>(row + c * 16 + 8, hi);
      *reinterpret_cast<uint4*>(qrow + c * 16) =
          interleave16(encode8<CODE>(lo, divisor), encode8<CODE>(hi, divisor));
    }
  }
};

}  // namespace humming

// The entry: q [M, K] 8-bit codes, each 16-byte chunk interleaved (HUMMING_ACT_QUANT_ENTRY's
// parameters; GROUP is unused).
#define HUMMING_ACT_QUANT_INTERLEAVED_ENTRY(NAME, T, CODE, MODE, GROUP)                          \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                       \
      NAME(const T* x, const float* static_scale, humming::u8* q, float* scales, int M, int K,  \
           int lda) {                                                                            \
    humming::ActQuantInterleaved<T, CODE, MODE>::run(x, static_scale, q, scales, M, K, lda);     \
  }
