// W8A8-fp8 GEMM for sm_90a at large M: e4m3 activations x e4m3 weights with wgmma, TMA and a
// warp-specialized mbarrier pipeline (humming_cuda.kernels.w8a8_wgmma).
//
// out[M, N] = epilogue(sum over 128-deep K blocks of (A_blk @ W_blk^T) * block factor), where A
// [M, K] and W [N, K] are e4m3 codes, both K-major (what TMA and fp8 wgmma want).
//
// CTA: 3 warpgroups. Warpgroup 0 is the producer: one thread waits for a free stage, announces its
// bytes on the stage's `full` mbarrier and issues two TMA tile loads (A 128x128, W 128x128, 128B
// swizzle). Warpgroups 1 and 2 consume rows 0-63 and 64-127 of the tile: 4 wgmma m64n128k32 per
// stage into fp32 accumulators, wait, release the stage (one arrival per warp on `empty`), then
// promote the block's sum into fp32 totals. The two take turns issuing their blocks' wgmmas
// (consume_blocks), so one promotes while the other's run. Promoting every 128 K bounds the error
// of the tensor cores' reduced-precision fp8 accumulation to one block and applies group / block
// scales:
//   factor(row, kb) = (A_GROUP ? a_scales[kb, row] : 1) * (BLOCK ? w_scales[n_blk, kb] : 1).
// Formats with such factors (Fmt::FACTORS) have warp 1 of the producer warpgroup load them and
// store each block's BM of them beside its stage; its 32 lanes arrive on the stage's full barrier
// with the TMA thread, so a consumer reads its two rows' factors from shared memory once the
// stage is full. Why: loaded by the consumers from global memory, they cost FP8 block-128 a fifth
// of its time (H200, same run: 4096x14336 M=1024 149 against 117 us with constant factors).
// The epilogue applies per-token / static activation scales, per-channel / per-tensor weight
// scales and bias (humming::Epilogue) and stores straight from registers (no write outside [M,N]),
// every factor loaded before the first store. Persistent configs (Tile::PERSISTENT, what large
// grids run) launch one CTA per SM that walks the tiles, the ring carrying on across them.
// M, N and K tails: TMA fills out-of-bounds rows and K columns with zeros, which add nothing. A
// consumer warpgroup whose 64 rows all lie at or past M (the second one, in a tile of 64 rows of M
// or fewer) would only multiply those zeros: it issues no wgmma, only keeps the ring turning. When
// all of M fits the first warpgroup (M <= 64), the host's activation map loads boxes of a_rows = 64
// rows instead of 128, so TMA fills no rows that nothing reads (rows 64-127 of the A stage stay
// unwritten and unread). The 64-row tile (WgmmaFp8Tile's CONSUMERS = 1, chosen for M <= 64) has
// one consumer warpgroup on 64-row A boxes and runs two CTAs per SM.
//
// Split-K: gridDim.z CTAs share a tile, each over a contiguous range of iters_per_split K blocks
// (whole 128-deep blocks, so block / group factors stay per block). Each promotes and sums its own
// blocks; the partial totals meet in a workspace and the last split to arrive adds them in split
// order and runs the epilogue once, on the full sum (reduce_wgmma_splits, kernel/wgmma_cta.cuh).
// Or (Tile::CLUSTER) the splits of a tile are one thread-block cluster: each stages its partial
// in its ring, and each sums and stores a share of the tile's columns over distributed shared
// memory (reduce_wgmma_cluster): no workspace, no counters.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/epilogue/epilogue.cuh"
#include "humming/kernel/wgmma_cta.cuh"
#include "humming/memory/tile_order.cuh"
#include "humming/mma/wgmma.cuh"
#include "humming/ptx/sm90_tma.cuh"

namespace humming {

// WEIGHT_SCALE: 0 per tensor, 1 per channel, 2 per 128x128 block (kernels.w8a8 WEIGHT_SCALE_CODES);
// A_GROUP: activation scales per (row, 128-deep K group) instead of per row.
template <int WEIGHT_SCALE, bool A_GROUP>
struct WgmmaFp8Format {
  static constexpr int W_SCALE = WEIGHT_SCALE;
  static constexpr bool ACT_GROUP = A_GROUP;
  static constexpr bool BLOCK = WEIGHT_SCALE == 2;
  static constexpr bool FACTORS = BLOCK || A_GROUP;  // a factor per (row, K block)
  static constexpr int EPI_SCALE =
      BLOCK ? kEpiScaleNone : (WEIGHT_SCALE == 1 ? kEpiScaleChannel : kEpiScaleTensor);
};

// GROUP_M: M tiles walked down before moving one N tile right (humming/memory/tile_order.cuh).
// CONSUMERS: warpgroups of 64 rows each. One (a 64-row tile, for M <= 64) runs two CTAs per SM:
// the producer hands its registers to the consumer (setmaxnreg), which keeps the accumulators
// and totals of its m64n128 block, and a second CTA's ring keeps loads in flight while one CTA
// fills its ring or runs its epilogue.
// PERSISTENT: one CTA per SM walks the tiles blockIdx.x, + gridDim.x, ... (grouped order), its
// ring carrying on from one tile to the next: the producer fills the next tile's stages while the
// consumers run the epilogue, where one CTA per tile starts on an empty ring every time.
// STAGED: 2-byte outputs leave through shared memory and bulk copies (store_staged_wgmma_tile)
// where the output's alignment allows, so the consumers do not wait for their global stores.
// BN: 128 or 192 columns (m64nBNk32 wgmmas; 192 only in 128-row tiles of formats without block
// weight scales, whose 128-column blocks a 192-column tile would straddle).
// CLUSTER: split-K's splits of a tile sum within a thread-block cluster (launched with cluster
// dims (1, 1, splits)), the partials staged in the ring; not persistent, stored from registers.
// SCATTER: split-K's splits of a tile sum all at once through the workspace where the launch's
// grid is resident (reduce_wgmma_scatter), else the last split alone; not persistent, stored from
// registers. A template flag, not a run-time branch: both reductions in one kernel took W8A8's
// 128-row split kernel from 149 registers to 168 and 188 bytes of spills (NVRTC 13.5).
template <int STAGES_, int GROUP_M_, int CONSUMERS_ = 2, bool PERSISTENT_ = false,
          bool STAGED_ = false, int BN_ = 128, bool CLUSTER_ = false, bool SCATTER_ = false>
struct WgmmaFp8Tile {
  static constexpr int CONSUMERS = CONSUMERS_;
  static constexpr bool CLUSTER = CLUSTER_, SCATTER = SCATTER_;
  static_assert(!CLUSTER || (!PERSISTENT_ && !STAGED_), "cluster split-K: one tile per CTA");
  static_assert(!SCATTER || (!PERSISTENT_ && !STAGED_ && !CLUSTER_), "scatter: one tile per CTA");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "64- or 128-row tiles");
  static constexpr bool PERSISTENT = PERSISTENT_, STAGED = STAGED_;
  static constexpr int BM = 64 * CONSUMERS, BN = BN_, BK = 128, STAGES = STAGES_;
  static_assert(BN == 128 || (BN == 192 && CONSUMERS == 2), "128 columns, or 192 in 128 rows");
  static constexpr int GROUP_M = GROUP_M_, CTAS = CONSUMERS == 1 ? 2 : 1;
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  // registers per producer / consumer thread after setmaxnreg (multiples of 8 within 65536 /
  // CTAS per CTA): at two CTAs per SM, and for 192 columns' 96 + 96 accumulators and totals; one
  // CTA per SM of 128 columns keeps the launch bound's even split
  static constexpr bool SPLIT_REGS = CTAS == 2 || BN > 128;
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = CTAS == 2 ? 216 : 232;
  static_assert((PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) * 128 <= 65536 / CTAS,
                "the register pool");
  static constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int FACTOR_BYTES = 4 * BM;  // per stage: its block's factor of every tile row
  static constexpr int STAGED_BYTES = STAGED ? CONSUMERS * StagedRows<64, BN>::BYTES : 0;
  // 1024 bytes of slack to align the ring to the 128B-swizzle atom, then the ring, then the
  // stages' factors, then the consumers' staged rows, then the full / empty barriers, then
  // split-K's "last split" flag (mirrors W8a8WgmmaConfig.smem_bytes)
  static constexpr int SMEM_BYTES =
      1024 + STAGES * (STAGE_BYTES + FACTOR_BYTES) + STAGED_BYTES + 16 * STAGES + 4;
  static_assert(!CLUSTER || 4 * BM * BN <= STAGES * STAGE_BYTES, "the ring holds a partial tile");
};

template <class Fmt, class Tile, typename OutT, bool BIAS>
struct W8a8WgmmaKernel {
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  static constexpr int ACC = BN / 2;  // 64 x BN fp32 per warpgroup / 128 threads
  static_assert(!Fmt::BLOCK || BN == 128, "block weight scales: 128-column tiles");

  struct Args {
    const float* a_scales;  // [G, M]: G = 1 (per token / static) or ceil(K / 128) (groups)
    const float* w_scales;  // [1], [N] or [ceil(N/128), ws_ld]
    const float* bias;      // [N]
    OutT* out;              // [M, N], row stride ldc
    int M, N, K, ldc, ws_ld;
    float* workspace;  // split-K partials: [tiles, gridDim.z, BM * BN] (unused when unsplit)
    int* counters;     // split-K arrivals per tile, zero between launches
    int iters_per_split;
    int a_rows;    // rows of the activation map's box: BM, or 64 when M <= 64 (see the top)
    int resident;  // CTAs the device holds at once: split-K sums all at once when the grid fits
  };

  struct Ring {
    u32 data, factors, full, empty;  // smem: stage s holds A at data + s*STAGE_BYTES, then W
    HM_DEVICE u32 a(int s) const { return data + s * Tile::STAGE_BYTES; }
    HM_DEVICE u32 b(int s) const { return a(s) + Tile::A_BYTES; }
    HM_DEVICE u32 factor(int s, int row) const {
      return factors + s * Tile::FACTOR_BYTES + 4 * row;
    }
    HM_DEVICE u32 full_bar(int s) const { return full + 8 * s; }
    HM_DEVICE u32 empty_bar(int s) const { return empty + 8 * s; }
  };

  // Producer warp 1 (Fmt::FACTORS): for ring steps q0 .. q0 + iters - 1 (K blocks kb0 ..), the
  // factor of each of the tile's BM rows (see the header comment) into the step's stage, once the
  // consumers have released it; each lane then arrives on the stage's full barrier. A step's
  // loads are issued before the wait for its stage, so they overlap it.
  HM_DEVICE static void produce_factors(const Args& a, const Ring& r, int kb0, int iters, int m0,
                                        int n0, int q0) {
    const int lane = threadIdx.x % 32;
    for (int it = 0; it < iters; ++it) {
      const int q = q0 + it, s = q % STAGES, kb = kb0 + it;
      const float w = Fmt::BLOCK ? __ldg(a.w_scales + (n0 / BN) * a.ws_ld + kb) : 1.f;
      float f[BM / 32];
#pragma unroll
      for (int i = 0; i < BM / 32; ++i) {
        const int row = m0 + 32 * i + lane;
        f[i] = w;
        if constexpr (Fmt::ACT_GROUP) f[i] *= row < a.M ? __ldg(a.a_scales + kb * a.M + row) : 0.f;
      }
      mbar_wait(r.empty_bar(s), ((q / STAGES) & 1) ^ 1);
#pragma unroll
      for (int i = 0; i < BM / 32; ++i) {
        st_shared_u32(r.factor(s, 32 * i + lane), __float_as_uint(f[i]));
      }
      mbar_arrive(r.full_bar(s));  // releases this lane's stores to the consumers' wait
    }
  }

  // This thread's two rows' factors of the full stage s (rows `tile_row` and + 8 of the tile).
  HM_DEVICE static void stage_factors(const Ring& r, int s, int tile_row, float (&f)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      f[h] = Fmt::FACTORS ? __uint_as_float(ld_shared_u32(r.factor(s, tile_row + 8 * h))) : 1.f;
    }
  }

  // Adds the tile's `iters` K blocks (ring steps q0 .. q0 + iters - 1) of warpgroup wg's rows to
  // `total`, or, when those rows all lie at or past M, only waits for each stage and releases it:
  // the producer needs every warp's arrival on `empty`, and waiting on `full` first keeps this
  // warpgroup's arrivals in the current phase.
  HM_DEVICE static void consume(const Args& a, const Ring& r, int iters, int m0, int wg,
                                float (&total)[ACC], int q0) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int row0 = wg * 64 + warp * 16 + lane / 4;  // in the tile
    if (m0 + wg * 64 >= a.M) {
      for (int q = q0; q < q0 + iters; ++q) {
        mbar_wait(r.full_bar(q % STAGES), (q / STAGES) & 1);
        if (lane == 0) mbar_arrive(r.empty_bar(q % STAGES));
      }
      return;
    }
    // Both warpgroups computing: they take turns issuing (ordered); else one runs alone.
    if (Tile::CONSUMERS == 2 && m0 + 64 < a.M) {
      if (wg == 0) {
        consume_blocks<1>(r, iters, row0, wg, total, q0);
      } else {
        consume_blocks<2>(r, iters, row0, wg, total, q0);
      }
    } else {
      consume_blocks<0>(r, iters, row0, wg, total, q0);
    }
  }

  // consume's K loop. ORDER 0: this warpgroup alone; 1 / 2: consumer 0 / 1 of a pair that issues
  // its blocks in turns (await_issue_turn, wgmma_cta.cuh).
  template <int ORDER>
  HM_DEVICE static void consume_blocks(const Ring& r, int iters, int row0, int wg,
                                       float (&total)[ACC], int q0) {
    const int lane = threadIdx.x % 32;
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    // Stage 0's descriptors; stage s's start STAGE_BYTES * s further (desc_advance). The stage
    // and its phase step along with the loop instead of q % STAGES, q / STAGES per block: the
    // index arithmetic sat between the full barrier's wait and the first wgmma.
    const u64 da0 = sw128_kmajor_desc(r.a(0) + wg * 64 * BK), db0 = sw128_kmajor_desc(r.b(0));
    int s = q0 % STAGES;
    u32 phase = (q0 / STAGES) & 1;
    for (int it = 0; it < iters; ++it) {
      const u32 step = s * Tile::STAGE_BYTES;
      mbar_wait(r.full_bar(s), phase);
      float f[2];
      stage_factors(r, s, row0, f);
      await_issue_turn<ORDER>(it);
      static_assert(BK == 128, "wgmma_block_e4m3's block");
      wgmma_block_e4m3(acc, desc_advance(da0, step), desc_advance(db0, step));
      pass_issue_turn<ORDER>(it, iters);
      wgmma_wait<0>();
      fence_registers(acc);
      if (Fmt::FACTORS) __syncwarp();  // orders the lanes' factor reads before the release
      if (lane == 0) mbar_arrive(r.empty_bar(s));  // this warp no longer reads the stage
      promote(acc, f, total);
      if (++s == STAGES) s = 0, phase ^= 1;
    }
  }

  HM_DEVICE static void promote(const float (&acc)[ACC], const float (&f)[2],
                                float (&total)[ACC]) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] += acc[i] * f[(i / 2) % 2];
  }

  static constexpr bool STAGED = Tile::STAGED && sizeof(OutT) == 2;

  HM_DEVICE static void store(const Args& a, const float (&total)[ACC], int m0, int n0, int wg,
                              u32 staging) {
    const Epilogue<OutT, Fmt::EPI_SCALE, false, BIAS> epi{a.w_scales, nullptr, a.bias};
    if constexpr (STAGED) {
      if (staged_rows_fit(a.out, a.ldc, a.N, n0, BN)) {
        store_staged_wgmma_tile<!Fmt::ACT_GROUP>(epi, total, a.a_scales, a.out, a.ldc, a.M, a.N,
                                                 m0, n0, wg, 1.f,
                                                 staging + wg * StagedRows<64, BN>::BYTES,
                                                 STAGED_ROWS_BAR + wg);
        return;
      }
    }
    store_wgmma_tile<!Fmt::ACT_GROUP>(epi, total, a.a_scales, a.out, a.ldc, a.M, a.N, m0, n0, wg,
                                      1.f);
  }

  HM_DEVICE static void run(const TmaDescriptor& ta, const TmaDescriptor& tb, const Args& a) {
    extern __shared__ uint4 smem_u4[];
    const u32 base = (smem_addr(smem_u4) + 1023u) & ~1023u;  // the 128B swizzle atom alignment
    const u32 factors = base + STAGES * Tile::STAGE_BYTES;
    const u32 staging = factors + STAGES * Tile::FACTOR_BYTES;
    const u32 bars = staging + Tile::STAGED_BYTES;
    const Ring r{base, factors, bars, bars + 8 * STAGES};
    const u32 flag = bars + 16 * STAGES;
    const int wg = threadIdx.x / 128;
    // The tiles this CTA computes: its own (one CTA per tile), or every gridDim.x-th one from
    // blockIdx.x (PERSISTENT, unsplit).
    const int tiles_n = Tile::PERSISTENT ? ceil_div(a.N, BN) : gridDim.x;
    const int tiles_m = Tile::PERSISTENT ? ceil_div(a.M, BM) : gridDim.y;
    const int first = Tile::PERSISTENT ? blockIdx.x : blockIdx.y * gridDim.x + blockIdx.x;
    const int step = Tile::PERSISTENT ? gridDim.x : tiles_n * tiles_m;
    // This split's K blocks (all of them when unsplit); the host leaves no split empty.
    const int kb0 = blockIdx.z * a.iters_per_split;
    const int iters = min(ceil_div(a.K, BK), kb0 + a.iters_per_split) - kb0;
    init_ring_barriers<STAGES, Tile::CONSUMERS, 4, Fmt::FACTORS ? 32 : 0>(r.full, r.empty);
    if (wg == 0) {
      // No barrier follows: the rest of the producer warpgroup may exit.
      if constexpr (Tile::SPLIT_REGS) setmaxnreg_dec<Tile::PRODUCER_REGS>();
      if (Fmt::FACTORS && threadIdx.x / 32 == 1) {
        for (int id = first, q0 = 0; id < tiles_n * tiles_m; id += step, q0 += iters) {
          const TileCoord tile = grouped_tile<Tile::GROUP_M>(id, tiles_n, tiles_m);
          produce_factors(a, r, kb0, iters, tile.m * BM, tile.n * BN, q0);
        }
      }
      if (threadIdx.x == 0) {
        tma_prefetch_descriptor(&ta);
        tma_prefetch_descriptor(&tb);
        const u32 stage_bytes = a.a_rows * BK + Tile::B_BYTES;  // what the two boxes deliver
        for (int id = first, q0 = 0; id < tiles_n * tiles_m; id += step, q0 += iters) {
          const TileCoord tile = grouped_tile<Tile::GROUP_M>(id, tiles_n, tiles_m);
          produce_ab_ring<STAGES>(&ta, &tb, r, stage_bytes, kb0, iters, BK, BK, tile.m * BM,
                                  tile.n * BN, q0);
        }
      }
      return;
    }
    if constexpr (Tile::SPLIT_REGS) setmaxnreg_inc<Tile::CONSUMER_REGS>();
    // This consumer warpgroup (0 or 1) through a warp vote: the same in every lane, and ptxas
    // knows it (from threadIdx it could not, so consume's branches on it were divergent to it and
    // the K loop kept its counters and wgmma descriptors in vector registers: 4 R2UR per wgmma).
    static_assert(Tile::CONSUMERS <= 2, "consumer warpgroups 1 and 2");
    const int cw = __any_sync(0xffffffffu, threadIdx.x >= 256) ? 1 : 0;
    for (int id = first, q0 = 0; id < tiles_n * tiles_m; id += step, q0 += iters) {
      const TileCoord tile = grouped_tile<Tile::GROUP_M>(id, tiles_n, tiles_m);
      const int n0 = tile.n * BN, m0 = tile.m * BM;
      float total[ACC];
#pragma unroll
      for (int i = 0; i < ACC; ++i) total[i] = 0.f;
      consume(a, r, iters, m0, cw, total, q0);
      static_assert(ACC * 128 * Tile::CONSUMERS == BM * BN, "the host sizes splits as BM * BN");
      if constexpr (Tile::CLUSTER) {
        const int2 cols = reduce_wgmma_cluster<ACC, Tile::CONSUMERS>(r.data, total);
        const Epilogue<OutT, Fmt::EPI_SCALE, false, BIAS> epi{a.w_scales, nullptr, a.bias};
        store_wgmma_columns<!Fmt::ACT_GROUP>(epi, total, a.a_scales, a.out, a.ldc, a.M, a.N, m0,
                                             n0, cw, cols.x, cols.y);
        cluster_wait();  // the peers have read this CTA's partial
        return;
      }
      if constexpr (Tile::SCATTER) {
        if (gridDim.z > 1 && static_cast<u32>(a.resident) >= gridDim.x * gridDim.y * gridDim.z) {
          const int2 cols = reduce_wgmma_scatter<ACC, Tile::CONSUMERS>(
              a.workspace, a.counters, total, m0 + cw * 64 < a.M);
          const Epilogue<OutT, Fmt::EPI_SCALE, false, BIAS> epi{a.w_scales, nullptr, a.bias};
          store_wgmma_columns<!Fmt::ACT_GROUP>(epi, total, a.a_scales, a.out, a.ldc, a.M, a.N,
                                               m0, n0, cw, cols.x, cols.y);
          return;
        }
      }
      // a persistent kernel runs every tile over all of K (the config refuses split_k > 1 with
      // it): without the split reduction its SASS is 7-8% shorter (session 50)
      if constexpr (!Tile::PERSISTENT) {
        if (gridDim.z > 1 && !reduce_wgmma_splits<ACC, Tile::CONSUMERS>(
                                 a.workspace, a.counters, total, m0 + cw * 64 < a.M,
                                 shared_int(flag))) {
          return;
        }
      }
      store(a, total, m0, n0, cw, staging);
    }
    if constexpr (STAGED) bulk_wait_read<0>();  // the staged rows outlive their copies' reads
  }
};

}  // namespace humming

// The C entry point every rendered W8A8-wgmma translation unit instantiates (parameters in the
// order of humming_cuda.kernels.w8a8_wgmma.bind.signature; the tensor maps come first).
#define HUMMING_W8A8_WGMMA_ENTRY(NAME, FMT, TILE, OUT, BIAS)                                    \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::CTAS) NAME(                 \
      const __grid_constant__ humming::TmaDescriptor tmap_a,                                   \
      const __grid_constant__ humming::TmaDescriptor tmap_w, const float* a_scales,            \
      const float* w_scales, const float* bias, OUT* out, int M, int N, int K, int ldc,        \
      int ws_ld, float* workspace, int* counters, int iters_per_split, int a_rows,             \
      int resident) {                                                                           \
    using Kern = humming::W8a8WgmmaKernel<FMT, TILE, OUT, BIAS>;                                \
    Kern::run(tmap_a, tmap_w,                                                                   \
              typename Kern::Args{a_scales, w_scales, bias, out, M, N, K, ldc, ws_ld, workspace, \
                                  counters, iters_per_split, a_rows, resident});                \
  }
