// Activation quantization: 16-bit x [M, K] -> 8-bit codes q [M, K] (row-major, ld K) and fp32 scales
// [G, M] (G = 1 per token / static per tensor, G = ceil(K / GROUP) per group), the layout the W8A8
// GEMM reads: the scales of one K group for a CTA's consecutive rows are contiguous.
//
// Bit-identical to humming_core.numerics.act.quantize_act: scale = amax / code max and value =
// x / scale, both correctly rounded fp32 divisions (__fdiv_rn, not a reciprocal multiply), then the
// code's own rounding (Code8Traits); an all-zero tile gets scale 0 and codes 0. Static mode divides
// by the given per-tensor scale and writes it as every row's scale. No host synchronisation.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/code8.cuh"

namespace humming {

enum ActQuantMode : int { kActQuantToken = 0, kActQuantGroup = 1, kActQuantStatic = 2 };

constexpr int kActQuantThreads = 256;

template <typename T>
HM_DEVICE void unpack8(const uint4& v, float (&f)[8]) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = ActTraits<T>::to_float(e[i]);
}

HM_DEVICE float amax8(const float (&f)[8]) {
  float a = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) a = fmaxf(a, fabsf(f[i]));
  return a;
}

// Eight values -> eight codes (8 bytes), x / scale correctly rounded; scale 0 gives codes 0.
template <int CODE>
HM_DEVICE uint2 encode8(const float (&f)[8], float scale) {
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = scale > 0.f ? __fdiv_rn(f[i], scale) : 0.f;
  using C = Code8Traits<CODE>;
  return make_uint2(C::encode4(v[0], v[1], v[2], v[3]), C::encode4(v[4], v[5], v[6], v[7]));
}

template <typename T, int CODE, int MODE, int GROUP>
struct ActQuant {
  static constexpr int THREADS = kActQuantThreads;
  static constexpr int kLanes = GROUP / 8;  // lanes sharing one group (8 values per lane)
  static_assert(MODE != kActQuantGroup || (kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0),
                "GROUP must be a power of two from 8 to 256");

  HM_DEVICE static float block_max(float v) {
    __shared__ float partial[THREADS / 32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
    __syncthreads();
    v = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) v = fmaxf(v, partial[w]);
    return v;
  }

  // One CTA per row: amax over the row (dynamic) or the given scale (static), then encode.
  HM_DEVICE static void rows(const T* x, const float* static_scale, u8* q, float* scales, int M,
                             int K, int lda) {
    const int m = blockIdx.x;
    const T* row = x + static_cast<long long>(m) * lda;
    u8* qrow = q + static_cast<long long>(m) * K;
    const int chunks = K / 8;
    float scale;
    if constexpr (MODE == kActQuantStatic) {
      scale = static_scale[0];
    } else {
      float amax = 0.f;
      for (int c = threadIdx.x; c < chunks; c += THREADS) {
        float f[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(row + c * 8), f);
        amax = fmaxf(amax, amax8(f));
      }
      scale = __fdiv_rn(block_max(amax), Code8Traits<CODE>::kMax);
    }
    if (threadIdx.x == 0) scales[m] = scale;
    for (int c = threadIdx.x; c < chunks; c += THREADS) {
      float f[8];
      unpack8<T>(*reinterpret_cast<const uint4*>(row + c * 8), f);
      *reinterpret_cast<uint2*>(qrow + c * 8) = encode8<CODE>(f, scale);
    }
  }

  // kLanes lanes per (row, group); a partial last group reads only up to K (zeros change no amax).
  HM_DEVICE static void groups(const T* x, u8* q, float* scales, int M, int K, int lda) {
    const int groups_k = ceil_div(K, GROUP);
    const int gid = (blockIdx.x * THREADS + threadIdx.x) / kLanes;
    const int lane = threadIdx.x % kLanes;
    const int m = gid / groups_k, g = gid % groups_k;
    const int k = g * GROUP + lane * 8;
    const bool valid = m < M && k < K;
    float f[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (valid) unpack8<T>(*reinterpret_cast<const uint4*>(x + static_cast<long long>(m) * lda + k), f);
    float amax = amax8(f);
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float scale = __fdiv_rn(amax, Code8Traits<CODE>::kMax);
    if (!valid) return;
    if (lane == 0) scales[static_cast<long long>(g) * M + m] = scale;
    *reinterpret_cast<uint2*>(q + static_cast<long long>(m) * K + k) = encode8<CODE>(f, scale);
  }

  HM_DEVICE static void run(const T* x, const float* static_scale, u8* q, float* scales, int M,
                            int K, int lda) {
    if constexpr (MODE == kActQuantGroup) {
      groups(x, q, scales, M, K, lda);
    } else {
      rows(x, static_scale, q, scales, M, K, lda);
    }
  }
};

}  // namespace humming

// Entry point of one quantizer (parameters in the order of humming_cuda.kernels.act_quant's
// signature). Grid: M CTAs (token, static) or ceil(M * ceil(K / GROUP) * GROUP / 8 / 256) (group).
#define HUMMING_ACT_QUANT_ENTRY(NAME, T, CODE, MODE, GROUP)                                      \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                       \
      NAME(const T* x, const float* static_scale, humming::u8* q, float* scales, int M, int K,  \
           int lda) {                                                                            \
    humming::ActQuant<T, CODE, MODE, GROUP>::run(x, static_scale, q, scales, M, K, lda);         \
  }
