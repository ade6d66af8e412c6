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

// ld.acquire.gpu: a counter's value, and every write released before it (by other CTAs).
HM_DEVICE int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Run by one thread of each of the `parts` CTAs sharing `counter` (zero between launches): counts
// its CTA in and waits until every part has, then counts it out; the last out zeroes the counter.
// Only for CTAs that all run at once (scatter_parts says why).
HM_DEVICE void meet_parts(int* counter, int parts) {
  atomicAdd(counter, 1);
  while (load_acquire(counter) < parts) __nanosleep(64);
  if (atomicAdd(counter, 1) == 2 * parts - 1) atomicExch(counter, 0);
}

// Split-K summed by all of a tile's parts at once, for launches whose CTAs are all resident
// together (the caller checks; a CTA waiting here for one that cannot start would never finish).
// Every part stores its float4s 0 .. vecs - 1 at its slot but its own share [first, last), counts
// itself on `counter` and waits until every part has; then it sums its share over all parts in
// part order (its own from `own`; the same sum as sum_parts) into `own` (synchronised when this
// returns). Why: sum_parts' last CTA reads every other part's whole tile alone while the others
// have exited (split 8 of a 128 x 128 tile: 448 KB through one SM); here each CTA reads one
// tile's worth, all at once. The counter counts arrivals, then departures past the wait: the
// last to leave (2 x parts) zeroes it.
template <int THREADS, int BAR>
HM_DEVICE void scatter_parts(float4* own, int vecs, int first, int last, float4* slots,
                             long long stride, int parts, int part, int* counter) {
  // float4s of one part a thread loads at once, and parts loaded before their sums: a share of
  // 4 float4s per thread (128 threads, 128 x 128 tile, split 8) is 16 loads in flight
  constexpr int BATCH = 4, AT_ONCE = 4;
  const int t = threadIdx.x % THREADS;
  float4* mine = slots + part * stride;
  for (int i = t; i < first; i += THREADS) __stcg(mine + i, own[i]);
  for (int i = last + t; i < vecs; i += THREADS) __stcg(mine + i, own[i]);
  __threadfence();
  named_barrier<THREADS>(BAR);
  if (t == 0) meet_parts(counter, parts);
  named_barrier<THREADS>(BAR);
  __threadfence();
  for (int base = first + t; base < last; base += THREADS * BATCH) {
    float4 sum[BATCH];
    for (int z0 = 0; z0 < parts; z0 += AT_ONCE) {
      float4 v[AT_ONCE][BATCH];
#pragma unroll
      for (int a = 0; a < AT_ONCE; ++a) {
        const int z = z0 + a;
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
          const int i = base + b * THREADS;
          if (z < parts && i < last) v[a][b] = z == part ? own[i] : __ldcg(slots + z * stride + i);
        }
      }
#pragma unroll
      for (int a = 0; a < AT_ONCE; ++a) {
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
          if (z0 + a >= parts) continue;
          if (z0 + a == 0) {
            sum[b] = v[a][b];
          } else {
            sum[b].x += v[a][b].x, sum[b].y += v[a][b].y, sum[b].z += v[a][b].z,
                sum[b].w += v[a][b].w;
          }
        }
      }
    }
#pragma unroll
    for (int b = 0; b < BATCH; ++b) {
      if (base + b * THREADS < last) own[base + b * THREADS] = sum[b];
    }
  }
  named_barrier<THREADS>(BAR);
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
