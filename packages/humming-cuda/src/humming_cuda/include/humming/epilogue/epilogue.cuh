// Epilogue of a dense GEMM tile held in m16n8 accumulator fragments: per-channel / per-tensor fp32
// scales, the second-level global scale, bias, conversion and predicated stores (no write outside
// [M, N]), plus the cross-CTA split-K reduction.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/act_types.cuh"

namespace humming {

enum EpilogueScale : int { kEpiScaleNone = 0, kEpiScaleChannel = 1, kEpiScaleTensor = 2 };

template <typename OutT, int SCALE, bool GLOBAL, bool BIAS>
struct Epilogue {
  const float* channel_scale;  // [n_pad] (channel) or [1] (tensor), fp32
  const float* global_scale;   // [1], fp32
  const float* bias;           // [N], fp32 (added before the output rounding)

  HM_DEVICE float apply(float v, int n, float global) const {
    if constexpr (SCALE == kEpiScaleChannel) v *= channel_scale[n];
    if constexpr (SCALE == kEpiScaleTensor) v *= channel_scale[0];
    if constexpr (GLOBAL) v *= global;
    if constexpr (BIAS) v += bias[n];
    return v;
  }

  // Store one accumulator pair (columns n, n+1 of row m).
  HM_DEVICE void store_pair(OutT* out, int ldc, int M, int N, int m, int n, float v0, float v1,
                            float global) const {
    if (m >= M || n >= N) return;
    OutT* dst = out + static_cast<long long>(m) * ldc + n;
    const float r0 = apply(v0, n, global);
    if (n + 1 < N) {
      const float r1 = apply(v1, n + 1, global);
      if ((ldc & 1) == 0) {
        store2(dst, r0, r1);
        return;
      }
      dst[1] = convert_out<OutT>(r1);
    }
    dst[0] = convert_out<OutT>(r0);
  }

  // A column's factors, loaded ahead of the stores that use them (store_pair below): the output
  // pointer may alias the scales as far as the compiler knows, so a load placed after a store
  // waits for it, and a tile's stores interleaved with their loads make a chain of L2 round trips.
  struct Column {
    float scale, bias;  // 1 and 0 where the format has none, and past N
  };

  HM_DEVICE Column column(int n, int N) const {
    Column c{1.f, 0.f};
    if (n < N) {
      if constexpr (SCALE == kEpiScaleChannel) c.scale = channel_scale[n];
      if constexpr (SCALE == kEpiScaleTensor) c.scale = channel_scale[0];
      if constexpr (BIAS) c.bias = bias[n];
    }
    return c;
  }

  // apply() with the column's factors already loaded (the same operations in the same order).
  HM_DEVICE float apply(float v, const Column& c, float global) const {
    if constexpr (SCALE != kEpiScaleNone) v *= c.scale;
    if constexpr (GLOBAL) v *= global;
    if constexpr (BIAS) v += c.bias;
    return v;
  }

  // store_pair() with columns n and n + 1's factors already loaded.
  HM_DEVICE void store_pair(OutT* out, int ldc, int M, int N, int m, int n, float v0, float v1,
                            const Column& c0, const Column& c1, float global) const {
    if (m >= M || n >= N) return;
    OutT* dst = out + static_cast<long long>(m) * ldc + n;
    const float r0 = apply(v0, c0, global);
    if (n + 1 < N) {
      const float r1 = apply(v1, c1, global);
      if ((ldc & 1) == 0) {
        store2(dst, r0, r1);
        return;
      }
      dst[1] = convert_out<OutT>(r1);
    }
    dst[0] = convert_out<OutT>(r0);
  }

  // Store one value (row m, column n): the PPU-layout emulation, whose pair columns are not adjacent.
  HM_DEVICE void store_one(OutT* out, int ldc, int M, int N, int m, int n, float v,
                           float global) const {
    if (m >= M || n >= N) return;
    out[static_cast<long long>(m) * ldc + n] = convert_out<OutT>(apply(v, n, global));
  }

  HM_DEVICE static void store2(OutT* dst, float r0, float r1) {
    if constexpr (sizeof(OutT) == 4) {
      *reinterpret_cast<float2*>(dst) = make_float2(r0, r1);
    } else {
      OutT pair[2] = {convert_out<OutT>(r0), convert_out<OutT>(r1)};
      *reinterpret_cast<u32*>(dst) = *reinterpret_cast<const u32*>(pair);
    }
  }
};

// Cross-CTA split-K: every split writes its partial (in fragment order, so each thread reads back
// exactly the values it owns) and bumps the tile's counter; the last split to arrive sums the
// partials in split order (deterministic whichever CTA is last), runs the epilogue and resets the
// counter to 0 for the next launch (so a CUDA graph can replay without a memset). V is the partial
// sums' type: fp32, or int for exact s32 sums (the 4-byte workspace holds either).
template <int ACC, int WARPS_N>
struct SplitKReducer {
  static constexpr int kTileFloats = WARPS_N * ACC * 32;

  // Returns true in the CTA that must finish the tile; `acc` then holds the full sum.
  // Only the threads with `owner` set hold accumulators; every thread of the CTA must call this.
  template <typename V>
  HM_DEVICE static bool reduce(V (&acc)[ACC], bool owner, int wn, int lane, float* workspace,
                               int* counters, int tile, int split, int splits, int* flag_smem) {
    static_assert(sizeof(V) == sizeof(float), "the workspace holds 4-byte partial sums");
    V* base = reinterpret_cast<V*>(workspace) + static_cast<long long>(tile) * splits * kTileFloats;
    const int slot = wn * ACC * 32 + lane;
    if (owner) {
      V* mine = base + static_cast<long long>(split) * kTileFloats + slot;
#pragma unroll
      for (int a = 0; a < ACC; ++a) __stcg(mine + a * 32, acc[a]);
      __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const int arrived = atomicAdd(counters + tile, 1);
      *flag_smem = arrived == splits - 1;
    }
    __syncthreads();
    if (!*flag_smem) return false;
    __threadfence();
    if (owner) {
      // Read every partial back, own one included: the sum order is fixed and acc is reused in
      // place (no second accumulator array, which would double the registers).
      const V* part = base + slot;
#pragma unroll
      for (int a = 0; a < ACC; ++a) acc[a] = __ldcg(part + a * 32);
      for (int s = 1; s < splits; ++s) {
        part += kTileFloats;
#pragma unroll
        for (int a = 0; a < ACC; ++a) acc[a] += __ldcg(part + a * 32);
      }
    }
    if (threadIdx.x == 0) counters[tile] = 0;
    return true;
  }
};

}  // namespace humming
