// Activation quantization: 16-bit x [M, K] -> 8-bit codes q [M, K] (row-major, ld K) and fp32 scales
// [G, M] (G = 1 per token / static per tensor, G = ceil(K / GROUP) per group), the layout the W8A8
// GEMM reads: the scales of one K group for a CTA's consecutive rows are contiguous.
// WIDE: q holds each code's value as bf16 instead (exact: every int8 and e4m3 value is a bf16
// value), the input of the WnA16 kernels that run 8-bit activations (moe_wna16_a8); one pass
// instead of quantizing and then widening the codes in a second kernel.
//
// Bit-identical to humming_core.numerics.act.quantize_act: scale = amax / code max and value =
// x / scale, both correctly rounded fp32 divisions (a plain reciprocal multiply would not be), then
// the code's own rounding (Code8Traits); an all-zero tile gets scale 0 and codes 0. Static mode
// divides by the given per-tensor scale and writes it as every row's scale. No host
// synchronisation. The scale is one __fdiv_rn; the element quotients come from RoundedDivisor
// (humming/arith/divide.cuh: a reciprocal multiply and one exact correction, the same quotients
// in three instructions each), where __fdiv_rn per element made these kernels compute-bound.
//
// GLU (HUMMING_ACT_QUANT_GLU_ENTRY; ActSpec.input_glu): the quantizer's input is the previous
// layer's [gate | up] output, x [M, 2K], and it quantizes act(gate) * up, computed in fp32 and
// rounded to the 16-bit input type (what a separate activation kernel would store) — one read of
// x instead of an activation kernel writing [M, K] and this kernel reading it back. The gate's
// activation uses the epilogues' fast forms (humming/arith/activation.cuh), so a product within a
// few fp32 ulp of a 16-bit rounding boundary may round the other way than an exact one would.
#pragma once
#include "humming/arith/activation.cuh"
#include "humming/arith/common.cuh"
#include "humming/arith/divide.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/code8.cuh"
#include "humming/ptx/pdl.cuh"

namespace humming {

enum ActQuantMode : int { kActQuantToken = 0, kActQuantGroup = 1, kActQuantStatic = 2 };

constexpr int kActQuantThreads = 256;

// Eight 16-bit values (one 16-byte chunk, in registers) as floats: each word's two halves.
template <typename T>
HM_DEVICE void unpack8(uint4 v, float (&f)[8]) {
  using T2 = typename ActTraits<T>::T2;
  const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const T2 pair = *reinterpret_cast<const T2*>(&w[i]);
    f[2 * i] = __low2float(pair);
    f[2 * i + 1] = __high2float(pair);
  }
}

// The eight values at p (16-byte aligned): one 16-byte load. (Unpacking through a pointer into
// the loaded vector, as this did before, let the compiler split it into eight 2-byte loads.)
template <typename T>
HM_DEVICE void load8(const T* p, float (&f)[8]) {
  unpack8<T>(*reinterpret_cast<const uint4*>(p), f);
}

// With an input GLU (GLU: the gate's activation code): the 8 values act(gate) * up of the gate
// chunk at `gate` and the up chunk K elements after it, in fp32, rounded to T, as 16 bytes of T.
// (The plain quantizer's loads stay written out at each use below: routed through a helper they
// compiled to other register allocations, and the W8A8 identity fixtures pin those cubins.)
template <typename T, int GLU>
HM_DEVICE uint4 glu_chunk(const T* gate, int K) {
  float g[8], u[8];
  load8<T>(gate, g);
  load8<T>(gate + K, u);
  u32 w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = as_u32(ActTraits<T>::from_floats(apply_activation<GLU>(g[2 * i]) * u[2 * i],
                                             apply_activation<GLU>(g[2 * i + 1]) * u[2 * i + 1]));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

HM_DEVICE float amax8(const float (&f)[8]) {
  float a = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) a = fmaxf(a, fabsf(f[i]));
  return a;
}

// Eight values -> eight codes (8 bytes), x / scale correctly rounded; scale 0 gives codes 0.
template <int CODE, bool BOUNDED>
HM_DEVICE uint2 encode8(const float (&f)[8], const RoundedDivisor<BOUNDED>& scale) {
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = scale.d > 0.f ? scale(f[i]) : 0.f;
  using C = Code8Traits<CODE>;
  return make_uint2(C::encode4(v[0], v[1], v[2], v[3]), C::encode4(v[4], v[5], v[6], v[7]));
}

// Eight codes (8 bytes, as encode8 packs them) -> their values as eight bf16 (16 bytes), exactly.
template <int CODE>
HM_DEVICE uint4 widen8(uint2 codes) {
  const u32 w[2] = {codes.x, codes.y};
  u32 out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const u32 pair = (w[i / 2] >> (16 * (i % 2))) & 0xFFFFu;
    float lo, hi;
    if constexpr (CODE == kCode8Int8) {
      lo = static_cast<float>(static_cast<signed char>(pair & 0xFFu));
      hi = static_cast<float>(static_cast<signed char>(pair >> 8));
    } else {
      const u32 h2 = e4m3x2_to_f16x2(pair);
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h2));
      lo = f.x, hi = f.y;
    }
    const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
    out[i] = *reinterpret_cast<const u32*>(&b);
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// Q: u8 (codes) or nv_bfloat16 (their values, WIDE).
template <int CODE, typename Q>
HM_DEVICE void store8(Q* q, uint2 codes) {
  if constexpr (sizeof(Q) == 1) {
    *reinterpret_cast<uint2*>(q) = codes;
  } else {
    *reinterpret_cast<uint4*>(q) = widen8<CODE>(codes);
  }
}

template <typename T, int CODE, int MODE, int GROUP, typename Q = u8, int GLU = kActNone>
struct ActQuant {
  static constexpr int THREADS = kActQuantThreads;
  // Group mode: each lane takes two 16-byte chunks of its group (one where the group has only
  // 8 values), kLanes lanes per group: per-lane work (the scale's division, its reciprocal, the
  // shuffles, the addresses) halves per value and each lane has two loads in flight. H200, FP8
  // block-128's activations, kernel time (two runs, not an A/B): 22.5 -> 18.5 us (6144x4096
  // M = 4096), 116.0 -> 114.0 (8192x28672 M = 4096), unchanged at 4096x14336 M = 1024.
  static constexpr int kPerLane = GROUP < 16 ? 8 : 16;
  static constexpr int kChunks = kPerLane / 8;
  static constexpr int kLanes = GROUP / kPerLane;
  static_assert(MODE != kActQuantGroup ||
                    (kLanes >= 1 && kLanes <= 16 && (kLanes & (kLanes - 1)) == 0),
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

  // 16-byte chunks of its row each thread keeps in shared memory from the amax pass to the
  // encoding pass: rows of up to THREADS * kKept * 8 elements (16384) are read from memory once,
  // longer ones read only the rest again. Why: re-reading every row missed L2 on wide layers
  // (H200, K = 28672, M = 4096: 8 rows of 57 KB in flight per SM, 60 MB in all). Shared memory
  // rather than registers: the unrolled register copy took 80-96 registers (2 CTAs per SM).
  static constexpr int kKept = 8;

  // One CTA per row: amax over the row (dynamic) or the given scale (static), then encode. K: the
  // quantized row's length (x rows hold 2K values with an input GLU).
  HM_DEVICE static void rows(const T* x, const float* static_scale, Q* q, float* scales, int M,
                             int K, int lda) {
    const int m = blockIdx.x;
    const T* row = x + static_cast<long long>(m) * lda;
    Q* qrow = q + static_cast<long long>(m) * K;
    const int chunks = K / 8;
    constexpr bool DYNAMIC = MODE != kActQuantStatic;
    // chunk threadIdx.x + j * THREADS of the row, for j < kKept (thread-major: conflict-free)
    __shared__ uint4 kept[DYNAMIC ? kKept : 1][THREADS];
    const int kept_end = DYNAMIC ? min(chunks, kKept * THREADS) : 0;
    float scale;
    if constexpr (DYNAMIC) {
      float amax = 0.f;
      for (int c = threadIdx.x; c < chunks; c += THREADS) {
        uint4 v;
        if constexpr (GLU == kActNone) {
          v = *reinterpret_cast<const uint4*>(row + c * 8);
        } else {
          v = glu_chunk<T, GLU>(row + c * 8, K);
        }
        if (c < kept_end) kept[c / THREADS][threadIdx.x] = v;
        float f[8];
        unpack8<T>(v, f);
        amax = fmaxf(amax, amax8(f));
      }
      scale = __fdiv_rn(block_max(amax), Code8Traits<CODE>::kMax);  // syncs the CTA
    } else {
      scale = static_scale[0];
    }
    if (threadIdx.x == 0) scales[m] = scale;
    const RoundedDivisor<DYNAMIC> divisor(scale);
    for (int c = threadIdx.x; c < chunks; c += THREADS) {
      float f[8];
      if constexpr (GLU == kActNone) {
        unpack8<T>(c < kept_end ? kept[c / THREADS][threadIdx.x]
                                : *reinterpret_cast<const uint4*>(row + c * 8),
                   f);
      } else {
        unpack8<T>(c < kept_end ? kept[c / THREADS][threadIdx.x] : glu_chunk<T, GLU>(row + c * 8, K),
                   f);
      }
      store8<CODE>(qrow + c * 8, encode8<CODE>(f, divisor));
    }
  }

  // kLanes lanes per (row, group); a partial last group reads only up to K (zeros change no amax).
  HM_DEVICE static void groups(const T* x, Q* q, float* scales, int M, int K, int lda) {
    const int groups_k = ceil_div(K, GROUP);
    const int gid = (blockIdx.x * THREADS + threadIdx.x) / kLanes;
    const int lane = threadIdx.x % kLanes;
    const int m = gid / groups_k, g = gid % groups_k;
    const int k = g * GROUP + lane * kPerLane;
    float f[kChunks][8];
    float amax = 0.f;
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
#pragma unroll
      for (int i = 0; i < 8; ++i) f[j][i] = 0.f;
      if (m < M && k + 8 * j < K) {
        const T* chunk = x + static_cast<long long>(m) * lda + k + 8 * j;
        if constexpr (GLU == kActNone) {
          load8<T>(chunk, f[j]);
        } else {
          unpack8<T>(glu_chunk<T, GLU>(chunk, K), f[j]);
        }
      }
      amax = fmaxf(amax, amax8(f[j]));
    }
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float scale = __fdiv_rn(amax, Code8Traits<CODE>::kMax);
    if (m >= M) return;
    if (lane == 0) scales[static_cast<long long>(g) * M + m] = scale;
    const RoundedDivisor<true> divisor(scale);
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      if (k + 8 * j < K) {
        store8<CODE>(q + static_cast<long long>(m) * K + k + 8 * j, encode8<CODE>(f[j], divisor));
      }
    }
  }

  HM_DEVICE static void run(const T* x, const float* static_scale, Q* q, float* scales, int M,
                            int K, int lda) {
    // the GEMM after it, when launched with PDL, may start issuing its weight copies now; this
    // grid, launched with PDL on sm_90+ (ActQuantizer), reads x only once the grid before it
    // (which may write x, or read what q and scales reuse) has completed
    allow_next_grid();
    wait_prior_grid();
    if constexpr (MODE == kActQuantGroup) {
      groups(x, q, scales, M, K, lda);
    } else {
      rows(x, static_scale, q, scales, M, K, lda);
    }
  }
};

}  // namespace humming

// Entry point of one quantizer (parameters in the order of humming_cuda.kernels.act_quant's
// signature). Grid: M CTAs (token, static) or ceil(M * ceil(K / GROUP) * lanes per group / 256)
// (group; ActQuant::kLanes).
#define HUMMING_ACT_QUANT_ENTRY(NAME, T, CODE, MODE, GROUP)                                      \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                       \
      NAME(const T* x, const float* static_scale, humming::u8* q, float* scales, int M, int K,  \
           int lda) {                                                                            \
    humming::ActQuant<T, CODE, MODE, GROUP>::run(x, static_scale, q, scales, M, K, lda);         \
  }

// With an input GLU (GLU: the gate's activation code, humming::Activation): x [M, 2K] = [gate | up].
#define HUMMING_ACT_QUANT_GLU_ENTRY(NAME, T, CODE, MODE, GROUP, GLU)                             \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                       \
      NAME(const T* x, const float* static_scale, humming::u8* q, float* scales, int M, int K,  \
           int lda) {                                                                            \
    humming::ActQuant<T, CODE, MODE, GROUP, humming::u8, GLU>::run(x, static_scale, q, scales,  \
                                                                  M, K, lda);                   \
  }

// The WIDE form: q [M, K] bf16 (the codes' values).
#define HUMMING_ACT_QUANT_WIDE_ENTRY(NAME, T, CODE, MODE, GROUP)                                 \
  extern "C" __global__ void __launch_bounds__(humming::kActQuantThreads)                       \
      NAME(const T* x, const float* static_scale, nv_bfloat16* q, float* scales, int M, int K,  \
           int lda) {                                                                            \
    humming::ActQuant<T, CODE, MODE, GROUP, nv_bfloat16>::run(x, static_scale, q, scales, M, K, \
                                                             lda);                              \
  }
