// 4-bit activation quantization for the W4A4 GEMM: 16-bit x [M, K] -> packed nibbles q [M, K/2]
// (element k in byte k/2, even k in the low nibble) plus scales in the layout the GEMM reads:
// - int4 (two's complement nibbles): fp32 scales [G, M], G = 1 per token / static per tensor,
//   G = K / GROUP per group; scale = amax / 7.
// - NVFP4 (e2m1 nibbles): ue4m3 codes [M, K/16] = amax / 6 / global rounded to nearest, and the fp32
//   per-tensor global scale [1]: the given static one, or amax(x) / (6 * 448) (1 for a zero
//   tensor) from a first pass (`Act4Amax`) that folds |x| into a zeroed word with atomicMax.
// - MXFP4 (e2m1 nibbles): e8m0 codes [M, K/32], 2^(floor(log2 amax) - 2) (OCP MX rule).
//
// Bit-identical to humming_core.numerics.act.quantize_act: correctly rounded fp32 divisions
// (__fdiv_rn), round half to even, saturation; a zero scale gives zero codes. The e2m1 rounding is
// done with comparisons (no e2m1 conversion instruction exists before sm_100), the ue4m3 rounding
// with cvt.rn.satfinite.e4m3x2 (sm_89+). No host synchronisation.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/code8.cuh"
#include "humming/kernel/act_quant.cuh"

namespace humming {

enum Act4Mode : int {
  kAct4Int4Token = 0,
  kAct4Int4Group = 1,
  kAct4Int4Static = 2,
  kAct4Nvfp4 = 3,
  kAct4Mxfp4 = 4
};

// int4: round half to even, saturate to [-8, 7], two's complement nibble.
HM_DEVICE u32 encode_int4(float v) { return static_cast<u32>(max(-8, min(7, __float2int_rn(v)))) & 0xFu; }

// e2m1 {0, 0.5, 1, 1.5, 2, 3, 4, 6}: nearest, ties to the even code, saturating; the sign bit is
// the input's (so -0 and small negatives keep it, as numerics.codec does).
HM_DEVICE u32 encode_e2m1(float v) {
  const float a = fabsf(v);
  const u32 mag = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) +
                  (a >= 3.5f) + (a > 5.f);
  return mag | ((__float_as_uint(v) >> 31) << 3);
}

// Eight values -> eight nibbles (value i in bits [4i, 4i + 4)); v / scale correctly rounded
// (RoundedDivisor, as the 8-bit quantizers).
template <bool INT4, bool BOUNDED>
HM_DEVICE u32 encode8_nibbles(const float (&f)[8], const RoundedDivisor<BOUNDED>& scale) {
  u32 w = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float v = scale.d > 0.f ? scale(f[i]) : 0.f;
    w |= (INT4 ? encode_int4(v) : encode_e2m1(v)) << (4 * i);
  }
  return w;
}

// Exact value of a non-negative e4m3 / ue4m3 code (subnormals: m * 2^-9).
HM_DEVICE float e4m3_value(u32 c) {
  const u32 e = (c >> 3) & 0xFu, m = c & 7u;
  return e ? __uint_as_float(((e + 120u) << 23) | (m << 20)) : static_cast<float>(m) * 0.001953125f;
}

// MX shared exponent of e2m1 blocks: floor(log2(amax)) - 2 clamped to [-127, 127] (-127 for 0),
// read off the fp32 bits so that subnormal amax (bf16 input can have them) is exact too.
HM_DEVICE int mx_exponent_e2m1(float amax) {
  const u32 bits = __float_as_uint(amax);
  if (amax <= 0.f) return -127;
  const int e = static_cast<int>(bits >> 23);
  const int floor_log2 = e ? e - 127 : (31 - __clz(bits & 0x7FFFFFu)) - 149;
  return max(-127, min(127, floor_log2 - 2));
}

HM_DEVICE float pow2_scale(int x) {
  return x >= -126 ? __uint_as_float(static_cast<u32>(x + 127) << 23) : __uint_as_float(0x00400000u);
}

// Global NVFP4 scale from the folded amax (bits of a non-negative float) or the static scale.
HM_DEVICE float nvfp4_global(const u32* amax_bits, const float* static_scale) {
  if (static_scale != nullptr) return static_scale[0];
  const float g = __fdiv_rn(__uint_as_float(amax_bits[0]), 2688.f);  // 6 * 448
  return g > 0.f ? g : 1.f;
}

template <typename T, int MODE, int GROUP>
struct ActQuant4 {
  static constexpr int THREADS = kActQuantThreads;
  static constexpr bool INT4 = MODE <= kAct4Int4Static;
  static constexpr int kLanes = GROUP / 8;  // lanes sharing one group (8 values per lane)
  static_assert(kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0,
                "GROUP must be a power of two from 8 to 256");

  // One CTA per row (int4 per token / static): reuses the 8-bit quantizer's CTA-wide maximum.
  HM_DEVICE static void rows(const T* x, const float* static_scale, u8* q, float* scales, int K,
                             int lda) {
    const int m = blockIdx.x;
    const T* row = x + static_cast<long long>(m) * lda;
    u32* qrow = reinterpret_cast<u32*>(q + static_cast<long long>(m) * (K / 2));
    float scale;
    if constexpr (MODE == kAct4Int4Static) {
      scale = static_scale[0];
    } else {
      float amax = 0.f;
      for (int c = threadIdx.x; c < K / 8; c += THREADS) {
        float f[8];
        load8<T>(row + c * 8, f);
        amax = fmaxf(amax, amax8(f));
      }
      scale = __fdiv_rn(ActQuant<T, kCode8Int8, kActQuantToken, 8>::block_max(amax), 7.f);
    }
    if (threadIdx.x == 0) scales[m] = scale;
    const RoundedDivisor<MODE != kAct4Int4Static> divisor(scale);
    for (int c = threadIdx.x; c < K / 8; c += THREADS) {
      float f[8];
      load8<T>(row + c * 8, f);
      qrow[c] = encode8_nibbles<true>(f, divisor);
    }
  }

  // kLanes lanes per (row, group); K is a multiple of 64, so every group is whole.
  HM_DEVICE static void groups(const T* x, const float* static_scale, const u32* amax_bits, u8* q,
                               void* scales, float* global_out, int M, int K, int lda) {
    const int groups_k = K / GROUP;
    const int gid = (blockIdx.x * THREADS + threadIdx.x) / kLanes;
    const int lane = threadIdx.x % kLanes;
    const int m = gid / groups_k, g = gid % groups_k;
    const int k = g * GROUP + lane * 8;
    const bool valid = m < M;
    float f[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (valid) load8<T>(x + static_cast<long long>(m) * lda + k, f);
    float amax = amax8(f);
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    float scale;
    u32 code = 0;
    if constexpr (MODE == kAct4Int4Group) {
      scale = __fdiv_rn(amax, 7.f);
    } else if constexpr (MODE == kAct4Nvfp4) {
      const float global = nvfp4_global(amax_bits, static_scale);
      if (blockIdx.x == 0 && threadIdx.x == 0) global_out[0] = global;
      const float target = __fdiv_rn(__fdiv_rn(amax, 6.f), global);
      code = Code8Traits<kCode8E4m3>::encode2(target, 0.f) & 0xFFu;
      scale = e4m3_value(code) * global;
    } else {
      const int e = mx_exponent_e2m1(amax);
      code = static_cast<u32>(e + 127);
      scale = pow2_scale(e);
    }
    if (!valid) return;
    if (lane == 0) {
      if constexpr (INT4) {
        static_cast<float*>(scales)[static_cast<long long>(g) * M + m] = scale;
      } else {
        static_cast<u8*>(scales)[static_cast<long long>(m) * groups_k + g] = static_cast<u8>(code);
      }
    }
    *reinterpret_cast<u32*>(q + static_cast<long long>(m) * (K / 2) + k / 2) =
        encode8_nibbles<INT4>(f, RoundedDivisor<true>(scale));
  }
};

// |x| folded into one word by atomicMax on the bits (non-negative floats order like their bits).
template <typename T>
HM_DEVICE void act4_amax(const T* x, u32* amax_bits, int M, int K, int lda) {
  const int chunks = K / 8;
  float a = 0.f;
  for (long long c = blockIdx.x * kActQuantThreads + threadIdx.x; c < static_cast<long long>(M) * chunks;
       c += static_cast<long long>(gridDim.x) * kActQuantThreads) {
    float f[8];
    load8<T>(x + (c / chunks) * lda + (c % chunks) * 8, f);
    a = fmaxf(a, amax8(f));
  }
  a = ActQuant<T, kCode8Int8, kActQuantToken, 8>::block_max(a);
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(a));
}

}  // namespace humming

// Entry points (parameters in the order of humming_cuda.kernels.act_quant.act4's signatures).
// Grid: M CTAs (int4 per token / static) or ceil(M * K / 8 / 256) (group modes).
#define HUMMING_ACT_QUANT4_ENTRY(NAME, T, MODE, GROUP)                                           \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                        \
      NAME(const T* x, const float* static_scale, const unsigned* amax_bits, humming::u8* q,     \
           void* scales, float* global_out, int M, int K, int lda) {                             \
    using Q = humming::ActQuant4<T, MODE, GROUP>;                                                \
    if constexpr (MODE == humming::kAct4Int4Token || MODE == humming::kAct4Int4Static) {         \
      Q::rows(x, static_scale, q, static_cast<float*>(scales), K, lda);                          \
    } else {                                                                                     \
      Q::groups(x, static_scale, amax_bits, q, scales, global_out, M, K, lda);                   \
    }                                                                                            \
  }

// The NVFP4 global-amax pass: any grid (the binding uses min(ceil(M * K / 8 / 256), 1024) CTAs).
#define HUMMING_ACT_AMAX4_ENTRY(NAME, T)                                                   \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                  \
      NAME(const T* x, unsigned* amax_bits, int M, int K, int lda) {                       \
    humming::act4_amax<T>(x, amax_bits, M, K, lda);                                        \
  }
