// Persistent stream-K form of the register-A WnA16 kernel (kernel/wna16_wgmma_rs.cuh; config
// rs_stream_k): gridDim.x CTAs (the device's resident ones: one per SM, or two of the 128-column
// tile) share the problem's (output tile, K step) iterations evenly, in the tiles' grouped order
// (humming/memory/tile_order.cuh) and K order within a tile: CTA c takes iterations
// [c T / G, (c + 1) T / G) of T.
//
// Why: one CTA per tile (and split) leaves the last wave part empty and pays each CTA's ring fill
// and epilogue with idle tensor cores. H200, dense.json of session 26: 6144x4096 W4A16 g128 at
// M = 1024 runs 384 CTAs of 32 K steps (2.9 waves of 128 x 256 tiles split in two) at 0.70x the
// published humming-kernels, whose sm90 kernel is persistent with stream-K; the cost model fitted
// 6.2 us of fixed time per CTA (heuristics.py) against 0.86 us per K step.
//
// A CTA walks its range as segments (one tile's consecutive K steps); the ring runs on across
// them: the producer thread copies the next segment's stages while the consumers finish the last
// one. A segment that covers its tile's whole K goes to the epilogue. A partial one writes its fp32
// accumulators, in register order, to the CTA's workspace slot for it (slot 0: the CTA's first
// segment, 1: its last) and counts itself on the tile's counter; the last of the tile's segments
// to arrive sums all of them in segment order (the same sum whichever CTA is last) and runs the
// epilogue. No CTA waits for another. Only the segment that starts a tile's K range and does not
// end it can be the last of its CTA's range (later ones start at a tile's first step), so the
// counter is indexed by the CTA holding the tile's first step: G counters serve any M.
// The epilogue stages the tile in parts of at most 64 rows beside the ring (the whole tile does
// not fit next to it) and stores each part's rows as the one-CTA-per-tile kernel does.
#pragma once
#include "humming/kernel/wna16_wgmma_rs.cuh"

namespace humming {

template <class Fmt, class Tile, typename ActT, typename OutT, bool BIAS>
struct Wna16WgmmaStreamKernel {
  using Dense = Wna16WgmmaRsKernel<Fmt, Tile, ActT, OutT, BIAS>;
  using Args = typename Dense::Args;
  static_assert(Tile::PRODUCER && (Tile::CTAS == 1 || Tile::CONSUMERS == 1),
                "stream-K: a producer warpgroup; one CTA per SM, or two of one consumer "
                "warpgroup (the persistent grid: every CTA the device holds at once)");
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  static constexpr int ACC = Dense::ACC;
  static constexpr int THREADS = 128 * Tile::CONSUMERS;  // consumer threads
  static constexpr int RING = STAGES * Dense::STAGE_BYTES;
  // staged parts of at most 64 rows: 64 KB of fp32 beside the ring
  static constexpr int PARTS = (BM / 8) / largest_divisor_at_most(BM / 8, 8);
  static constexpr int PART_BYTES = BM / PARTS * BN * 4;
  // float4s of one partial tile in register order: [i][j][thread], acc[i][4j .. 4j + 3]
  static constexpr int SLOT_VECS = 2 * ACC / 4 * THREADS;
  // alignment slack, the ring, the staged part, full / empty barriers (mirrors
  // WgmmaWna16Config.smem_bytes)
  static constexpr int SMEM_BYTES = 1024 + RING + PART_BYTES + 16 * STAGES;

  // The problem's iterations and the end of this CTA's range of them: CTA c takes `per` of them,
  // and one more when c < extra, from first(c). 32-bit (the host keeps the count below 2^31):
  // 64-bit divisions are calls whose return addresses ptxas counts as spills. Every thread
  // computes the same; the host launches at most one CTA per iteration (per >= 1).
  struct Work {
    int steps, tiles_n, tiles_m, per, extra, end;
    HM_DEVICE explicit Work(const Args& a)
        : steps(ceil_div(a.K, BK)), tiles_n(ceil_div(a.N, BN)), tiles_m(ceil_div(a.M, BM)) {
      const int total = tiles_n * tiles_m * steps;
      per = total / static_cast<int>(gridDim.x);
      extra = total % static_cast<int>(gridDim.x);
      end = first(blockIdx.x + 1);
    }
    HM_DEVICE int first(int c) const { return c * per + min(c, extra); }
    // the CTA whose range holds iteration x
    HM_DEVICE int owner(int x) const {
      const int longer = extra * (per + 1);  // the iterations of the CTAs taking per + 1
      return x < longer ? x / (per + 1) : extra + (x - longer) / per;
    }
    HM_DEVICE TileCoord tile(int x) const {
      return grouped_tile<Tile::GROUP_M>(x / steps, tiles_n, tiles_m);
    }
  };

  // The producer's place in its walk: K step k of the tile `id` in the walk's order (coordinates
  // t). One step at a time it divides only where a tile starts: recomputing (tile, step) from the
  // iteration index took four integer divisions per step (ncu, H100, 57344x8192 M = 64: 280 of the
  // producer's instructions per step against the consumers' ~200; they waited on the full
  // barrier for 27% of their stall samples).
  struct Walk {
    int k, id;
    TileCoord t;
    HM_DEVICE Walk(const Work& w, int x)
        : k(x % w.steps),
          id(x / w.steps),
          t(grouped_tile<Tile::GROUP_M>(id, w.tiles_n, w.tiles_m)) {}
    // past the grid's last tile (a range ending with it) t stays: grouped_tile would divide by
    // the empty last group's zero rows
    HM_DEVICE void next(const Work& w) {
      if (++k == w.steps) {
        k = 0;
        if (++id < w.tiles_n * w.tiles_m) t = grouped_tile<Tile::GROUP_M>(id, w.tiles_n, w.tiles_m);
      }
    }
  };

  // The producer thread: every iteration of the CTA's range into the ring, step q of the ring
  // counting on across segments. PDL: the first stages' codes and scales go out before the
  // previous kernel in the stream has finished, their x tiles after it.
  HM_DEVICE static void produce_all(const TmaDescriptor* tx, const Args& a,
                                    const typename Dense::Smem& sm) {
    const Work w(a);
    const int begin = w.first(blockIdx.x), n = w.end - begin, first = min(STAGES, n);
    const Walk start(w, begin);
    Walk at = start;
    for (int q = 0; q < first; ++q, at.next(w)) {
      Dense::template produce<true, false>(tx, a, sm, q, at.k, at.t.m * BM, at.t.n * BN);
    }
    wait_prior_grid();
    allow_next_grid();
    Walk x = start;
    for (int q = 0; q < first; ++q, x.next(w)) Dense::load_x(tx, sm, q, x.k, x.t.m * BM);
    for (unsigned q = first; q < static_cast<unsigned>(n); ++q, at.next(w)) {
      mbar_wait(sm.empty_bar(q % STAGES), ((q / STAGES) & 1) ^ 1);
      Dense::produce(tx, a, sm, q % STAGES, at.k, at.t.m * BM, at.t.n * BN);
    }
  }

  // Workspace slot of CTA c for the tile whose iterations start at t0: 0 when the tile is the
  // CTA's first segment, 1 when it is its last (the CTA started before the tile).
  HM_DEVICE static float4* slot(float* workspace, const Work& w, int c, int t0) {
    const int which = w.first(c) >= t0 ? 0 : 1;
    return reinterpret_cast<float4*>(workspace) + (2LL * c + which) * SLOT_VECS;
  }

  // The partial segments of one tile (the one whose iterations start at t0): `segments` of them,
  // held by CTAs c0, c0 + 1, ..; segments = 0: the accumulators are the whole tile.
  struct Partials {
    float* workspace;
    int t0, c0, segments;
  };

  // This CTA's partial segment of a tile: write its accumulators, count it. Returns true in the
  // tile's last segment to arrive, which then sums them all (store_parts).
  HM_DEVICE static bool arrive(const Work& w, int* counters, const Partials& p,
                               const float (&acc)[2][ACC]) {
    const int t = threadIdx.x;
    float4* own = slot(p.workspace, w, blockIdx.x, p.t0);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < ACC / 4; ++j) {
        __stcg(own + (i * ACC / 4 + j) * THREADS + t,
               make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]));
      }
    }
    __threadfence();
    named_barrier<THREADS>(1);
    bool last = false;
    if (t == 0) {
      last = atomicAdd(counters + p.c0, 1) == p.segments - 1;
      if (last) counters[p.c0] = 0;  // every segment has arrived: ready for the next launch
    }
    // The barrier's predicate is the same in every thread, but ptxas cannot know it: branching
    // on it made consume_all's loop divergent and the inlined main loop moved every wgmma
    // descriptor from vector to uniform registers per slice (16 R2UR per K step). A warp vote's
    // result is uniform by construction.
    if (!__any_sync(0xffffffffu, named_barrier_any<THREADS>(1, last))) return false;
    __threadfence();
    return true;
  }

  // Part P's accumulator groups (those stage<P, PARTS> writes) as the sum of the tile's partial
  // segments in segment order, read back from the workspace (this CTA's own included, so the
  // order never depends on which CTA is last). Part by part: the whole tile's loads at once made
  // ptxas spill.
  template <int P>
  HM_DEVICE static void sum_part(const Work& w, const Partials& p, float (&acc)[2][ACC]) {
    constexpr int C0 = P * ACC / 4 / PARTS, C1 = (P + 1) * ACC / 4 / PARTS;
    const int t = threadIdx.x;
    for (int s = 0; s < p.segments; ++s) {
      const float4* part = slot(p.workspace, w, p.c0 + s, p.t0);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int c = C0; c < C1; ++c) {
          const float4 v = __ldcg(part + (i * ACC / 4 + c) * THREADS + t);
          float* d = &acc[i][4 * c];
          if (s == 0) {
            d[0] = v.x, d[1] = v.y, d[2] = v.z, d[3] = v.w;
          } else {
            d[0] += v.x, d[1] += v.y, d[2] += v.z, d[3] += v.w;
          }
        }
      }
    }
  }

  // The tile's epilogue in PARTS parts of rows staged at `part` (beside the ring): each waits
  // until every consumer thread has read the previous part (or tile) out of it; with partials,
  // each part's accumulators are their sum first.
  template <int P = 0>
  HM_DEVICE static void store_parts(const Args& a, const Work& w, const Partials& p,
                                    float (&acc)[2][ACC], float* part, int m0, int n0) {
    if constexpr (P < PARTS) {
      if (p.segments > 0) sum_part<P>(w, p, acc);
      named_barrier<THREADS>(1);
      Dense::template stage<P, PARTS>(acc, part);
      Dense::template store_rows<BM / PARTS>(a, part, m0 + P * BM / PARTS, n0);
      store_parts<P + 1>(a, w, p, acc, part, m0, n0);
    }
  }

  // The consumer warpgroups: the CTA's segments through the ring, each to the epilogue or the
  // workspace.
  HM_DEVICE static void consume_all(const TmaDescriptor* tx, const Args& a,
                                    const typename Dense::Smem& sm, const unsigned char* ring,
                                    float* part, float* workspace, int* counters) {
    const Work w(a);
    int q = 0;
    for (int x = w.first(blockIdx.x); x < w.end;) {
      const int k0 = x % w.steps, iters = min(w.steps - k0, w.end - x), t0 = x - k0;
      const TileCoord tile = w.tile(x);
      float acc[2][ACC];
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[0][i] = acc[1][i] = 0.f;
      Dense::template consume<false, true>(tx, a, sm, ring, k0, iters, tile.m * BM, tile.n * BN,
                                           acc, q);
      q += iters;
      x += iters;
      Partials p{workspace, t0, 0, 0};
      if (iters < w.steps) {
        p.c0 = w.owner(t0);
        p.segments = w.owner(t0 + w.steps - 1) - p.c0 + 1;
        if (!arrive(w, counters, p, acc)) continue;
      }
      store_parts(a, w, p, acc, part, tile.m * BM, tile.n * BN);
    }
  }

  HM_DEVICE static void run(const TmaDescriptor& tx, const Args& a, float* workspace,
                            int* counters) {
    extern __shared__ uint4 smem_u4[];
    const u32 raw = smem_addr(smem_u4), base = (raw + 1023u) & ~1023u;  // swizzle atom alignment
    unsigned char* ring = reinterpret_cast<unsigned char*>(smem_u4) + (base - raw);
    const u32 bars = base + RING + PART_BYTES;
    const typename Dense::Smem sm{base, bars, bars + 8 * STAGES};
    float* part = reinterpret_cast<float*>(ring + RING);
    init_ring_barriers<STAGES, Tile::CONSUMERS, Dense::RELEASES>(sm.full, sm.empty);
    if (threadIdx.x >= THREADS) {
      // The consumers synchronise on their own named barrier: the producer may exit.
      setmaxnreg_dec<Tile::PRODUCER_REGS>();
      if (threadIdx.x == THREADS) {
        tma_prefetch_descriptor(&tx);
        produce_all(&tx, a, sm);
      }
      return;
    }
    setmaxnreg_inc<Tile::CONSUMER_REGS>();
    wait_prior_grid();  // the epilogue and the workspace read and write global memory
    allow_next_grid();
    consume_all(&tx, a, sm, ring, part, workspace, counters);
  }
};

}  // namespace humming

// The entry of a rendered stream-K translation unit: the register-A form's parameters (its
// `iters_per_split` and `resident` unused: the range of each CTA follows from gridDim.x);
// `workspace` holds two partial tiles per CTA, `counters` one per CTA (zero between launches).
#define HUMMING_WNA16_WGMMA_STREAM_ENTRY(NAME, FMT, TILE, ACT, OUT, BIAS)                       \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::CTAS) NAME(                  \
      HM_WNA16_WGMMA_PARAMS(ACT, OUT), float* workspace, int* counters, int iters_per_split,     \
      int resident) {                                                                            \
    using Kern = humming::Wna16WgmmaStreamKernel<FMT, TILE, ACT, OUT, BIAS>;                    \
    Kern::run(tmap_x, HM_WNA16_WGMMA_ARGS(Kern), workspace, counters);                          \
  }
