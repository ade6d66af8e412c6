// Cross-CTA split-K for kernels that gather their output tile in shared memory (fp32, any layout)
// before the epilogue: every split copies its tile to a workspace slot and bumps the tile's
// counter; the last split to arrive replaces its shared tile by the sum of all slots in split
// order (the same sum whichever CTA is last) and resets the counter to 0, so launches and CUDA
// graph replays need no memset. Run by THREADS threads that synchronise on named barrier BAR
// (warp-specialized kernels whose producer warps have left cannot use __syncthreads).
#pragma once
#include "humming/arith/common.cuh"
#include "humming/mma/wgmma.cuh"  // named_barrier

namespace humming {

// bar.red.or over THREADS threads on barrier `id`: whether any of them passed `pred`.
template <int THREADS>
HM_DEVICE bool named_barrier_any(int id, bool pred) {
  u32 any;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.or.pred p, %2, %3, q;\n"
      " selp.u32 %0, 1, 0, p;\n}"
      : "=r"(any)
      : "r"(static_cast<u32>(pred)), "r"(id), "n"(THREADS)
      : "memory");
  return any != 0;
}

// Sum `vecs` float4s over the `parts` CTAs that share `counter` (zero between launches) and the
// workspace slots at `slots` (part p's `vecs` float4s at slots + p * stride). `own` (16-byte
// aligned shared memory, complete: the caller synchronised) is part `part`'s; every part stores
// it, and the last to arrive replaces it by the sum of all parts in part order (the same sum
// whichever CTA is last), zeroes the counter and returns true (synchronised again); the others
// return false.
template <int THREADS, int BAR>
HM_DEVICE bool sum_parts(float4* own, int vecs, float4* slots, long long stride, int parts,
                         int part, int* counter) {
  // float4s each thread sums at once: the last CTA reads every part's slot alone, and one L2
  // round trip per slot and float4 left it latency-bound (8 independent loads in flight)
  constexpr int BATCH = 8;
  const int t = threadIdx.x % THREADS;
  for (int i = t; i < vecs; i += THREADS) __stcg(slots + part * stride + i, own[i]);
  __threadfence();
  named_barrier<THREADS>(BAR);
  bool last = false;
  if (t == 0) last = atomicAdd(counter, 1) == parts - 1;
  if (!named_barrier_any<THREADS>(BAR, last)) return false;
  __threadfence();
  for (int base = t; base < vecs; base += THREADS * BATCH) {
    float4 sum[BATCH];
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      if (base + b * THREADS < vecs) sum[b] = __ldcg(slots + base + b * THREADS);
    }
    for (int z = 1; z < parts; ++z) {
      float4 v[BATCH];
#pragma unroll
      for (int b = 0; b < BATCH; ++b) {
        if (base + b * THREADS < vecs) v[b] = __ldcg(slots + z * stride + base + b * THREADS);
      }
#pragma unroll
      for (int b = 0; b < BATCH; ++b) {
        sum[b].x += v[b].x, sum[b].y += v[b].y, sum[b].z += v[b].z, sum[b].w += v[b].w;
      }
    }
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      if (base + b * THREADS < vecs) own[base + b * THREADS] = sum[b];
    }
  }
  if (t == 0) *counter = 0;
  named_barrier<THREADS>(BAR);
  return true;
}

template <int FLOATS, int THREADS, int BAR>
struct SplitTileReducer {
  static_assert(FLOATS % 4 == 0, "the tile moves in float4s");
  static constexpr int VECS = FLOATS / 4;

  // `tile` (16-byte aligned shared memory, complete: the caller synchronised) is this split's
  // partial tile `tile_id`; split gridDim.z slots per tile in `workspace`. Returns true in the CTA
  // that must finish the tile, whose `tile` then holds the full sum (synchronised again).
  HM_DEVICE static bool reduce(float* tile, float* workspace, int* counters, int tile_id) {
    const int splits = gridDim.z;
    float4* slots =
        reinterpret_cast<float4*>(workspace) + static_cast<long long>(tile_id) * splits * VECS;
    return sum_parts<THREADS, BAR>(reinterpret_cast<float4*>(tile), VECS, slots, VECS, splits,
                                   blockIdx.z, counters + tile_id);
  }
};

}  // namespace humming
