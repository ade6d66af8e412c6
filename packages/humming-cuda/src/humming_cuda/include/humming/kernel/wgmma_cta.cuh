// What the sm_90a wgmma kernels (w8a8_wgmma, w4a8_wgmma, wna16_wgmma) share around their main
// loops (and the split-K reduction of the fp8 ones): one producer and two consumer warpgroups over
// an mbarrier ring, each consumer holding a 64 x 128 fp32 tile in the wgmma m64n128 accumulator
// layout (acc[4j + 2h + c]: row 16 warp + lane/4 + 8h, column 8j + 2(lane%4) + c).
#pragma once
#include "humming/arith/common.cuh"
#include "humming/epilogue/split_tile.cuh"  // meet_parts
#include "humming/mma/wgmma.cuh"
#include "humming/ptx/cluster.cuh"
#include "humming/ptx/sm90_tma.cuh"

namespace humming {

// Thread 0 initialises the ring's barriers, then the CTA syncs: `full` (8 bytes per stage) takes
// the producer's expect_tx arrival and FILLS more (threads that store into the stage themselves),
// `empty` RELEASES arrivals per consumer warpgroup (one per warp where only wgmma reads the stage,
// one per thread where every thread loads from it).
template <int STAGES, int CONSUMERS, int RELEASES = 4, int FILLS = 0>
HM_DEVICE void init_ring_barriers(u32 full, u32 empty) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1 + FILLS);
      mbar_init(empty + 8 * s, CONSUMERS * RELEASES);
    }
    mbar_init_fence();
  }
  __syncthreads();
}

// The producer of a ring whose stages hold an A tile and a B tile (one thread of the producer
// warpgroup runs it): for each of `iters` K steps from step `first` (a split-K CTA's range starts
// past 0), wait for its stage to be free, expect `stage_bytes` (the two tensor maps' box bytes) on
// the stage's full barrier and TMA-load A at (k * a_k, m0) and B at (k * b_k, n0). Stages count
// from ring step q0 (a persistent CTA's ring carries on over its tiles: q0 counts the steps of
// the tiles before). `ring` gives the stage addresses a(s), b(s) and barriers full_bar(s),
// empty_bar(s).
template <int STAGES, class Ring>
HM_DEVICE void produce_ab_ring(const TmaDescriptor* ta, const TmaDescriptor* tb, const Ring& ring,
                               u32 stage_bytes, int first, int iters, int a_k, int b_k, int m0,
                               int n0, int q0 = 0) {
  for (int it = 0; it < iters; ++it) {
    const int q = q0 + it, s = q % STAGES, k = first + it;
    mbar_wait(ring.empty_bar(s), ((q / STAGES) & 1) ^ 1);
    mbar_arrive_expect_tx(ring.full_bar(s), stage_bytes);
    tma_load_2d(ring.a(s), ta, k * a_k, m0, ring.full_bar(s));
    tma_load_2d(ring.b(s), tb, k * b_k, n0, ring.full_bar(s));
  }
}

// One 128-deep K block of a warpgroup's m64n128 (64 accumulators) or m64n192 (96) e4m3 tile: 4
// wgmma k32 from the K-major, 128B-swizzled A (64 rows at `da`) and B (128 or 192 rows at `db`)
// into acc, the first overwriting it, as one commit group.
template <int ACC>
HM_DEVICE void wgmma_block_e4m3(float (&acc)[ACC], u64 da, u64 db) {
  static_assert(ACC == 64 || ACC == 96, "m64n128 or m64n192 accumulators");
  fence_registers(acc);
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const u64 a = desc_advance(da, 32 * k), b = desc_advance(db, 32 * k);
    if constexpr (ACC == 64) {
      wgmma_m64n128k32_e4m3(acc, a, b, k > 0);
    } else {
      wgmma_m64n192k32_e4m3(acc, a, b, k > 0);
    }
  }
  wgmma_commit();
}

// Split-K across gridDim.z CTAs of one output tile: SplitKReducer's protocol
// (epilogue/epilogue.cuh) with named barrier 1 over the CONSUMERS warpgroups in place of
// __syncthreads, which an exited producer warpgroup could never reach. Each split writes its
// partial `total` to its slot of the tile's workspace (register i of consumer thread c at
// i * THREADS + c: a warp's stores are coalesced) and bumps the tile's counter; the last split to
// arrive reads every partial back in split order (the same sum whichever CTA is last), resets the
// counter to 0 (the next launch, CUDA-graph replays included, needs no memset) and returns true,
// holding the full sum in `total`. A warpgroup whose rows all lie outside the output (`live`
// false) writes and reads nothing but still meets the barriers. `flag`: a shared int (the "last
// split" flag). The host sizes the workspace as ACC x 128 x CONSUMERS floats per split and tile.
template <int ACC, int CONSUMERS>
HM_DEVICE bool reduce_wgmma_splits(float* workspace, int* counters, float (&total)[ACC],
                                   bool live, int* flag) {
  constexpr int THREADS = 128 * CONSUMERS, TILE_FLOATS = ACC * THREADS;
  const int c = threadIdx.x - 128;  // consumer thread: the producer is warpgroup 0
  const int tile = blockIdx.y * gridDim.x + blockIdx.x, splits = gridDim.z;
  float* const part = workspace + static_cast<long long>(tile) * splits * TILE_FLOATS + c;
  if (live) {
    float* const mine = part + static_cast<long long>(blockIdx.z) * TILE_FLOATS;
#pragma unroll
    for (int i = 0; i < ACC; ++i) __stcg(mine + i * THREADS, total[i]);
    __threadfence();
  }
  named_barrier<THREADS>(1);
  if (c == 0) *flag = atomicAdd(counters + tile, 1) == splits - 1;
  named_barrier<THREADS>(1);
  if (!*flag) return false;
  __threadfence();
  if (live) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] = __ldcg(part + i * THREADS);
    for (int s = 1; s < splits; ++s) {
      const float* const p = part + static_cast<long long>(s) * TILE_FLOATS;
#pragma unroll
      for (int i = 0; i < ACC; ++i) total[i] += __ldcg(p + i * THREADS);
    }
  }
  if (c == 0) counters[tile] = 0;
  return true;
}

// Split-K summed by all of a tile's splits at once, for launches whose whole grid is resident
// (the host checks: a CTA waiting here for one that cannot start would never finish). Each split
// writes its partial `total` to its slot as reduce_wgmma_splits does, counts itself on the tile's
// counter and waits until every split has (split_tile.cuh's meet_parts); then split r of S sums
// column groups [r G / S, (r + 1) G / S) (G = ACC / 4 groups of 8 columns) of all S partials in
// split order (reduce_wgmma_splits' sum, bit for bit) and returns those columns' range in the
// tile, which `total` then holds; the caller stores them (store_wgmma_columns; in the out^T form
// the columns are tokens, as reduce_wgmma_cluster's). A warpgroup whose rows all lie outside the
// output (`live` false) writes and reads nothing but meets every barrier.
template <int ACC, int CONSUMERS>
HM_DEVICE int2 reduce_wgmma_scatter(float* workspace, int* counters, float (&total)[ACC],
                                    bool live) {
  constexpr int THREADS = 128 * CONSUMERS, TILE_FLOATS = ACC * THREADS, GROUPS = ACC / 4;
  const int c = threadIdx.x - 128;  // consumer thread: the producer is warpgroup 0
  const int tile = blockIdx.y * gridDim.x + blockIdx.x, splits = gridDim.z, z = blockIdx.z;
  float* const part = workspace + static_cast<long long>(tile) * splits * TILE_FLOATS + c;
  if (live) {
    float* const mine = part + static_cast<long long>(z) * TILE_FLOATS;
#pragma unroll
    for (int i = 0; i < ACC; ++i) __stcg(mine + i * THREADS, total[i]);
    __threadfence();
  }
  named_barrier<THREADS>(1);
  if (c == 0) meet_parts(counters + tile, splits);
  named_barrier<THREADS>(1);
  __threadfence();
  const int g0 = z * GROUPS / splits, g1 = (z + 1) * GROUPS / splits;
  if (live) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      if (i / 4 >= g0 && i / 4 < g1) total[i] = -0.f;  // x + -0 is x: the same sum, bit for bit
    }
    // one pointer stepped across the splits: a pointer per split took ptxas past the registers
    const float* p = part;
    for (int s = 0; s < splits; ++s, p += TILE_FLOATS) {
#pragma unroll
      for (int i = 0; i < ACC; ++i) {
        if (i / 4 >= g0 && i / 4 < g1) total[i] += __ldcg(p + i * THREADS);
      }
    }
  }
  return make_int2(8 * g0, 8 * g1);
}

// Split-K within a thread-block cluster: the splits of a tile are the CTAs of one cluster (launch
// cluster dims (1, 1, splits), split = rank), summed over distributed shared memory instead of
// reduce_wgmma_splits' workspace, whose last split reads every partial back alone while the
// others have finished (epilogue/cluster_split.cuh says more). Each CTA's consumers stage their
// partial `total` at shared address `tile` (register i of consumer thread c at i * THREADS + c;
// the ring, free once every stage is consumed: ACC x THREADS floats), then rank r of S sums
// column groups [r G / S, (r + 1) G / S) (G = ACC / 4 groups of 8 columns) of all S partials in
// rank order (the workspace form's sum, bit for bit) and returns those columns' range in the
// tile, which `total` then holds. A warpgroup whose rows lie past M stages zeros and meets every
// barrier. The caller stores the columns and calls cluster_wait() before it exits: its peers may
// still be reading its partial until then. A launch whose clusters are not the splits traps.
template <int ACC, int CONSUMERS>
HM_DEVICE int2 reduce_wgmma_cluster(u32 tile, float (&total)[ACC]) {
  constexpr int THREADS = 128 * CONSUMERS, GROUPS = ACC / 4;
  const u32 splits = cluster_size(), rank = cluster_rank();
  if (splits != gridDim.z) __trap();
  const int c = threadIdx.x - 128;  // consumer thread: the producer is warpgroup 0
  named_barrier<THREADS>(1);        // no consumer warpgroup reads the ring any more
#pragma unroll
  for (int i = 0; i < ACC; ++i) {
    st_shared_u32(tile + 4 * (i * THREADS + c), __float_as_uint(total[i]));
  }
  cluster_arrive();
  cluster_wait();  // every split's partial is staged and visible
  const int g0 = rank * GROUPS / splits, g1 = (rank + 1) * GROUPS / splits;
#pragma unroll
  for (int i = 0; i < ACC; ++i) {
    if (i / 4 >= g0 && i / 4 < g1) total[i] = 0.f;
  }
  for (u32 z = 0; z < splits; ++z) {
    const u32 part = peer_smem(tile, z) + 4 * c;
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      if (i / 4 >= g0 && i / 4 < g1) total[i] += ld_peer_f32(part + 4 * i * THREADS);
    }
  }
  cluster_arrive();  // this CTA has read its columns of every partial
  return make_int2(8 * g0, 8 * g1);
}

// The generic pointer of the shared-memory int at `addr` (a ring's split flag).
HM_DEVICE int* shared_int(u32 addr) {
  return static_cast<int*>(__cvta_shared_to_generic(static_cast<size_t>(addr)));
}

// Consumer warpgroup `wg`'s rows m0 + 64 wg .. +63 of the tile at (m0, n0), through the epilogue
// `epi`'s factors, each row times its row_scales[m] when ROW_SCALED (per-token activation scales):
// put(m, n, v0, v1, c0, c1) per column pair n, n + 1 of each row m < M (v0, v1 row-scaled, c0, c1
// the columns' factors). The factors are loaded ahead of the puts (Epilogue::Column says why):
// the row scales first, then the columns in two halves of 64 (all 128 columns' scales and biases
// at once would take 64 registers and spill).
template <bool ROW_SCALED, class Epi, class Put, int ACC>
HM_DEVICE void walk_wgmma_tile(const Epi& epi, const float (&total)[ACC], const float* row_scales,
                               int M, int N, int m0, int n0, int wg, Put put) {
  constexpr int HALF = 8;  // column groups of 8 per half
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  const int row0 = m0 + wg * 64 + warp * 16 + lane / 4, col0 = n0 + 2 * (lane % 4);
  float as[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int m = row0 + 8 * h;
    as[h] = ROW_SCALED && m < M ? row_scales[m] : 1.f;
  }
#pragma unroll
  for (int j0 = 0; j0 < ACC / 4; j0 += HALF) {
    typename Epi::Column cols[HALF][2];
#pragma unroll
    for (int j = 0; j < HALF; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) cols[j][c] = epi.column(col0 + 8 * (j0 + j) + c, N);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = row0 + 8 * h;
      if (m >= M) continue;
#pragma unroll
      for (int j = 0; j < HALF; ++j) {
        const float* c = &total[4 * (j0 + j) + 2 * h];
        const int n = col0 + 8 * (j0 + j);
        if constexpr (ROW_SCALED) {
          put(m, n, c[0] * as[h], c[1] * as[h], cols[j][0], cols[j][1]);
        } else {
          put(m, n, c[0], c[1], cols[j][0], cols[j][1]);
        }
      }
    }
  }
}

// walk_wgmma_tile storing straight from registers (epi.store_pair: no write outside [M, N]),
// times `global`.
template <bool ROW_SCALED, class Epi, typename OutT, int ACC>
HM_DEVICE void store_wgmma_tile(const Epi& epi, const float (&total)[ACC], const float* row_scales,
                                OutT* out, int ldc, int M, int N, int m0, int n0, int wg,
                                float global) {
  walk_wgmma_tile<ROW_SCALED>(
      epi, total, row_scales, M, N, m0, n0, wg,
      [&](int m, int n, float v0, float v1, const typename Epi::Column& c0,
          const typename Epi::Column& c1) {
        epi.store_pair(out, ldc, M, N, m, n, v0, v1, c0, c1, global);
      });
}

// store_wgmma_tile for the tile's columns [c0, c1) only (reduce_wgmma_cluster's share).
template <bool ROW_SCALED, class Epi, typename OutT, int ACC>
HM_DEVICE void store_wgmma_columns(const Epi& epi, const float (&total)[ACC],
                                   const float* row_scales, OutT* out, int ldc, int M, int N,
                                   int m0, int n0, int wg, int c0, int c1) {
  walk_wgmma_tile<ROW_SCALED>(
      epi, total, row_scales, M, N, m0, n0, wg,
      [&](int m, int n, float v0, float v1, const typename Epi::Column& f0,
          const typename Epi::Column& f1) {
        if (n - n0 >= c0 && n - n0 < c1) {
          epi.store_pair(out, ldc, M, N, m, n, v0, v1, f0, f1, 1.f);
        }
      });
}

// A consumer warpgroup's ROWS x COLS output values (2 bytes each) staged in shared memory for bulk
// copies, one per output row. Why: H200 (same run, session 27): W8A8-fp8 6144x4096 M=4096 took
// 207 us storing from registers, 194 us staged and 172 us with no epilogue at all; each warp's
// register stores write a few bytes into each of 8 rows, and the consumers wait for them before
// the next tile's wgmmas. Rows are 16 bytes longer than the data, so the rows a warp writes at
// once start in different banks.
template <int ROWS, int COLS>
struct StagedRows {
  static constexpr int ROW_BYTES = 2 * COLS + 16, BYTES = ROWS * ROW_BYTES;
};

// Can `cols` output columns from column n of rows ldc apart leave by bulk copies? Both ends need
// 16-byte alignment: out, the row stride and n (each a whole number of 8 columns), and a whole
// number of 16 bytes per row: all `cols`, or an N tail of a multiple of 8 columns. Uniform across
// the warpgroup.
template <typename OutT>
HM_DEVICE bool staged_rows_fit(const OutT* out, int ldc, int N, int n, int cols) {
  static_assert(sizeof(OutT) == 2, "StagedRows holds 2-byte outputs");
  return (reinterpret_cast<u64>(out) & 15) == 0 && ldc % 8 == 0 && n % 8 == 0 &&
         (n + cols <= N || N % 8 == 0);
}

// Named barriers STAGED_ROWS_BAR and + 1: consumer warpgroup 0 / 1's staged rows (the kernels'
// other named barriers take ids 1-3).
constexpr int STAGED_ROWS_BAR = 4;

// Issue turns of a pair of consumer warpgroups (ORDER 1 / 2: consumer 0 / 1; ORDER 0: a warpgroup
// that issues alone) over their K blocks: consumer 0 issues block it, then consumer 1 block it,
// then consumer 0 block it + 1... Why: each warpgroup waits for its block's wgmmas before it
// promotes the sum into fp32 totals; started together the two would run their wgmmas side by
// side, finish together and leave the tensor cores idle while both promote. In turns, one
// promotes while the other's wgmmas run (w8a8_wgmma: 1.02-1.08x at M = 4096, H200, session 25).
// The turn is a named barrier over both warpgroups: TURN_FIRST passes it from consumer 0 to
// consumer 1, TURN_SECOND back. `await_issue_turn` goes before a block's wgmmas, `pass_issue_turn`
// after their commit; both warpgroups run the same `iters` blocks.
constexpr int TURN_FIRST = 2, TURN_SECOND = 3;

template <int ORDER>
HM_DEVICE void await_issue_turn(int it) {
  if (ORDER == 1 && it > 0) named_barrier<256>(TURN_SECOND);
  if (ORDER == 2) named_barrier<256>(TURN_FIRST);
}

template <int ORDER>
HM_DEVICE void pass_issue_turn(int it, int iters) {
  if (ORDER == 1) named_barrier_arrive<256>(TURN_FIRST);
  if (ORDER == 2 && it + 1 < iters) named_barrier_arrive<256>(TURN_SECOND);
}

// Before a warpgroup writes its staged rows: the `copiers` threads that copied rows out of them
// last time wait until those copies have read them (a whole main loop ago), then named barrier
// `bar` (this warpgroup's 128 threads) holds the others until then.
HM_DEVICE void acquire_staged_rows(int copiers, int bar) {
  if (threadIdx.x % 128 < copiers) bulk_wait_read<0>();
  named_barrier<128>(bar);
}

// After a warpgroup wrote its staged rows at `staging` (row_bytes apart): thread r of the
// warpgroup copies rows r, r + 128, .. below `rows` (at most MAX_ROWS) to `dst` + r ldc (`cols`
// values, none when cols <= 0), bulk copies that complete while the warpgroup goes on. A thread
// that copied must bulk_wait_read<0>() before it exits.
template <int MAX_ROWS = 128, typename OutT>
HM_DEVICE void release_staged_rows(u32 staging, int row_bytes, OutT* dst, int ldc, int rows,
                                   int cols, int bar) {
  fence_proxy_async_smem();  // the rows' generic-proxy writes before the bulk copies read them
  named_barrier<128>(bar);
  const int first = threadIdx.x % 128;
  if (first < rows && cols > 0) {
#pragma unroll
    for (int i = 0; i < (MAX_ROWS + 127) / 128; ++i) {
      const int r = first + 128 * i;
      if (r < rows) {
        bulk_store(dst + static_cast<long long>(r) * ldc, staging + r * row_bytes, 2 * cols);
      }
    }
    bulk_commit();
  }
}

// store_wgmma_tile through warpgroup wg's StagedRows<64, 2 ACC> at `staging` (rows m0 + 64 wg ..,
// columns n0 ..: staged_rows_fit(out, ldc, N, n0, 2 ACC) must hold), ordered by named barrier `bar`
// (acquire / release_staged_rows). Every thread of the warpgroup calls it.
template <bool ROW_SCALED, class Epi, typename OutT, int ACC>
HM_DEVICE void store_staged_wgmma_tile(const Epi& epi, const float (&total)[ACC],
                                       const float* row_scales, OutT* out, int ldc, int M, int N,
                                       int m0, int n0, int wg, float global, u32 staging,
                                       int bar) {
  using Rows = StagedRows<64, 2 * ACC>;  // the tile's 2 ACC columns
  const int first = m0 + wg * 64;
  acquire_staged_rows(64, bar);
  walk_wgmma_tile<ROW_SCALED>(
      epi, total, row_scales, M, N, m0, n0, wg,
      [&](int m, int n, float v0, float v1, const typename Epi::Column& c0,
          const typename Epi::Column& c1) {
        const OutT pair[2] = {convert_out<OutT>(epi.apply(v0, c0, global)),
                              convert_out<OutT>(epi.apply(v1, c1, global))};
        st_shared_u32(staging + (m - first) * Rows::ROW_BYTES + 2 * (n - n0),
                      *reinterpret_cast<const u32*>(pair));
      });
  release_staged_rows(staging, Rows::ROW_BYTES, out + static_cast<long long>(first) * ldc + n0,
                      ldc, min(64, M - first), min(2 * ACC, N - n0), bar);
}

}  // namespace humming
