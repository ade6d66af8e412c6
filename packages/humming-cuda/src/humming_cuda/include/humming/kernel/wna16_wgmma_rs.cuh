// WnA16 GEMM for sm_90a at large M with the weights as wgmma's register A operand: out^T[N, M] =
// W[N, K] @ x[M, K]^T, so the dequantized weights never touch shared memory
// (humming_cuda.kernels.wna16_wgmma, config weights_in_registers).
//
// Why: the shared-memory form (wna16_wgmma.cuh) writes each step's dequantized 128 x 64 B tile to
// shared memory and both consumer warpgroups read all of it back, next to the x tile and its TMA
// write: about 80 KB of shared-memory traffic per 128 x 128 x 64 step, more than the ~550 clocks of
// tensor work per step can hide at 128 bytes per clock. Here a step moves the x tile (TMA write
// plus one read per warpgroup) and the packed codes, about 60 KB per 256 x 128 x 64 step (twice
// the work).
//
// CTA: 2 consumer warpgroups over 256 weight columns (N) x 128 activation rows (M), 64 K per step
// (or, Tile::CONSUMERS = 1, one over 128 columns: see Place).
// Per step, x's 128 x 64 tile (TMA, 128B swizzle: the K-major B operand of wgmma m64n128k16), the
// 4 x 4 layout tiles (64 N x 16 K) of packed codes and the step's group-scale / zero-point rows
// (bulk copies) stream through a `STAGES`-deep mbarrier ring, a stage refilled once every warp has
// released it. Tile::PRODUCER (the heuristic's choice) issues the copies from a third warpgroup
// that hands its registers to the consumers (setmaxnreg 40 / 232): without setmaxnreg, 12 warps
// would cap each thread at 168 registers, too few for the 128 accumulators plus the fragments in
// flight (ptxas serializes the wgmmas, C7512). Without PRODUCER, consumer thread 0 issues them
// (8 warps, 255 registers each). Warp w of warpgroup v owns layout-tile column w (weight columns
// n0 + 64w ..; with one consumer warpgroup, column w / 2 and v = w % 2: Kernel::Place) and, of
// each lane's 16 code pairs, the eight of columns 8j + lane/4 with j in 4v .. 4v+3 (the wna16
// layout, humming/memory/bitplanes.cuh). Per 16-deep K slice it dequantizes
// them (humming/datatype/dequant.cuh, as the wna16 kernels do) straight into two A fragments and
// issues two wgmma m64nBMk16 (BM = 128; 16 / 32 / 64 tokens at small M; 160 / 176 wide), whose
// rows 16w + lane/4 (+8) are therefore weight columns n0 + 64w + 8(4v + 2i (+1)) + lane/4 of
// wgmma i: a permutation of N that only the epilogue sees. Fragments are buffered
// (Tile::FRAG_BUFS): slice s+1 is dequantized while the tensor cores run slice s. (Keeping 3
// slices in flight at small BM measured 0-14% slower on the H200,
// benchmarks/notes/session10_wna16_small_m.md.)
// Split-K (gridDim.z > 1, small grids): each split runs a range of K steps and the epilogue's
// shared tile is summed across splits in a workspace (humming/epilogue/split_tile.cuh), or
// (Tile::CLUSTER_SPLIT) over distributed shared memory by the splits of one cluster, each
// summing and storing a share of the rows (humming/epilogue/cluster_split.cuh), the shares of
// several clusters per tile then summed through the workspace.
// The epilogue scales each column, converts, and transposes through shared memory (the ring's
// space) into coalesced 16-byte row stores.
// Tails: TMA zero-fills x past M and K; a step's layout tiles past K (and the group rows only they
// use) are copied from a page of zeros, so every slice runs the same code; layout tiles past the
// padded N are not copied, and the rows their warps compute are never stored; stores are
// predicated to [M, N].
// Launched with PDL (config pdl): the producer issues the first stages' codes and scales before it
// waits for the previous kernel in the stream, their x tiles after; every other thread waits first.
#pragma once
#include "humming/epilogue/cluster_split.cuh"
#include "humming/epilogue/split_tile.cuh"
#include "humming/kernel/wna16_wgmma.cuh"
#include "humming/mma/wgmma_f16.cuh"
#include "humming/mma/wgmma_narrow.cuh"
#include "humming/mma/wgmma_wide.cuh"
#include "humming/ptx/pdl.cuh"

namespace humming {

// GROUP_M: M tiles walked down before moving one N tile right (humming/memory/tile_order.cuh).
// PRODUCER: a third warpgroup issues the copies (setmaxnreg moves its registers to the consumers:
// 40 there, 232 here); without it thread 0 refills each stage once both warpgroups released it.
// FRAG_BUFS: A-fragment buffers (2: a slice's are rewritten two slices later, right after its
// group retired; 4: one per slice of a step, rewritten a whole step later).
// BM: activation rows per tile, wgmma's N (16, 32, 48, 64 or 96: the narrow forms of
// humming/mma/wgmma_narrow.cuh; 160 or 176: the wide ones of humming/mma/wgmma_wide.cuh; 128
// otherwise).
// CTAS: CTAs resident per SM the registers are split for. With 2 consumer warpgroups, 2 (narrow
// tiles with a producer) gives each scheduler four consumer warps instead of two to hide the
// dequantization's latencies: the launch reserves 80 registers per thread (65536 / (2 x 384), in
// steps of 8), of which the producer keeps 24 and each consumer gets 104.
// CONSUMERS: consumer warpgroups, each over 128 weight columns (BN = 128 x CONSUMERS). One, with
// CTAS = 2, is two CTAs of 256 threads per SM whose consumers keep the one-CTA form's 232
// registers (65536 / (2 x 256) = 128 reserved, the producer keeping 24): any token tile, and one
// CTA's ring fill and epilogue overlap the other's main loop (the published humming-kernels' sm90
// tile at M = 64-128 is this shape, 128 x BM over two CTAs per SM). The producer's 24 registers
// hold its copy loop rolled up (produce); a 32 / 224 split instead costs the consumers' main loop
// 5 instructions per wgmma (ptxas 13, W4A16 g128 at 128 rows: 36.9 against 32.0 per MMA,
// benchmarks/kernel_resources.py --loop).
// CLUSTER_SPLIT: the K splits of a tile are the CTAs of one cluster (launched with cluster dims
// (1, 1, splits)) and sum their partial tiles over distributed shared memory
// (humming/epilogue/cluster_split.cuh) instead of through split-K's workspace; or, launched with
// clusters of fewer CTAs (a divisor of the splits), each cluster sums its splits so, and each
// CTA's share of the rows is then summed over the tile's clusters through the workspace (the
// last of them reads the others' shares of its rows, not every split's whole tile).
// SPLIT_SCATTER: the kernel holds split-K's scatter form (Split::resident; config
// rs_split_scatter), which only such configs launch. Compiled into every kernel it was 1288 of a
// 32-row tile's 3352 SASS instructions and 0.26 of its 0.74 s NVRTC compile (session 49, notes
// §3).
template <int STAGES_, int GROUP_M_, bool PRODUCER_ = false, int FRAG_BUFS_ = 2, int BM_ = 128,
          int CTAS_ = 1, int CONSUMERS_ = 2, bool CLUSTER_SPLIT_ = false,
          bool SPLIT_SCATTER_ = false>
struct WgmmaWna16RsTile {
  static constexpr int CONSUMERS = CONSUMERS_;
  static constexpr bool CLUSTER_SPLIT = CLUSTER_SPLIT_;
  static constexpr bool SPLIT_SCATTER = SPLIT_SCATTER_;
  static_assert(!(CLUSTER_SPLIT && SPLIT_SCATTER), "a tile's splits sum one way");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "128 or 256 weight columns");
  static constexpr int BM = BM_, BN = 128 * CONSUMERS, BK = 64, STAGES = STAGES_;
  static constexpr int GROUP_M = GROUP_M_;
  static_assert(BM == 16 || BM == 32 || BM == 48 || BM == 64 || BM == 96 || BM == 128 ||
                    BM == 160 || BM == 176,
                "wgmma N of the token side");
  static constexpr bool PRODUCER = PRODUCER_;
  static constexpr int CTAS = CTAS_;
  static_assert(CTAS == 1 || (CTAS == 2 && PRODUCER && (BM <= 32 || CONSUMERS == 1)),
                "two CTAs per SM: a producer, and narrow tiles (<= 32 rows of accumulators) or "
                "one consumer warpgroup");
  static constexpr int PRODUCER_REGS = CTAS == 1 ? 40 : 24;
  static constexpr int CONSUMER_REGS = CTAS == 1 || CONSUMERS == 1 ? 232 : 104;
  static_assert((PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) * 128 <= 65536 / CTAS,
                "the setmaxnreg split fits the registers the launch reserves");
  static constexpr int FRAG_BUFS = FRAG_BUFS_;
  static_assert(FRAG_BUFS == 2 || FRAG_BUFS == 4, "buffers cycle within a step's 4 slices");
  static constexpr int THREADS = 128 * (CONSUMERS + (PRODUCER ? 1 : 0));
  static constexpr int TILES_N = BN / 64, TILES_K = BK / 16;  // layout tiles per step
  static constexpr int X_BYTES = BM * BK * 2;
  // group-scale rows a step can span (groups are at least 16 deep) x BN columns of 2 bytes
  static constexpr int SCALE_BYTES = TILES_K * BN * 2;
};

// The 8 code pairs of one warpgroup (pairs 8v .. 8v+7 of a lane's 16, see bitplanes.cuh) in as
// few words as the planes allow: a plane of width w >= 2 keeps its w/2 words that hold them, a
// 1-bit plane its one word shifted down by 8v. Pair q (0..7) then sits at compile-time positions.
__host__ __device__ constexpr int half_plane_words(int width) { return width >= 2 ? width / 2 : 1; }

__host__ __device__ constexpr int half_words_before(int bits, int k) {
  return k == 0 ? 0 : half_plane_words(plane_width(bits, k - 1)) + half_words_before(bits, k - 1);
}

template <int BITS>
struct HalfLaneWords {
  static constexpr int COUNT = half_words_before(BITS, plane_count(BITS));
  u32 w[COUNT];

  // From the lane's BITS words of a layout tile in shared memory (`lane_words`), warpgroup v's.
  template <int K = 0>
  HM_DEVICE void load(const u32* lane_words, int v) {
    if constexpr (K < plane_count(BITS)) {
      constexpr int width = plane_width(BITS, K), off = plane_offset(BITS, K);
      constexpr int n = half_plane_words(width), at = half_words_before(BITS, K);
      if constexpr (width == 1) {
        w[at] = lane_words[off] >> (8 * v);
      } else if constexpr (n == 4 && off % 4 == 0 && BITS % 4 == 0) {
        const uint4 q = *reinterpret_cast<const uint4*>(lane_words + off + 4 * v);
        w[at] = q.x, w[at + 1] = q.y, w[at + 2] = q.z, w[at + 3] = q.w;
      } else if constexpr (n == 2 && off % 2 == 0 && BITS % 2 == 0) {
        const uint2 q = *reinterpret_cast<const uint2*>(lane_words + off + 2 * v);
        w[at] = q.x, w[at + 1] = q.y;
      } else {
#pragma unroll
        for (int i = 0; i < n; ++i) w[at + i] = lane_words[off + n * v + i];
      }
      load<K + 1>(lane_words, v);
    }
  }

  // Codes of pair q: low element in bits [0, BITS), high in [16, 16 + BITS).
  template <int K = 0>
  HM_DEVICE u32 pair(int q) const {
    if constexpr (K == plane_count(BITS)) {
      return 0u;
    } else {
      constexpr int width = plane_width(BITS, K), off = plane_offset(BITS, K);
      constexpr int per = 16 / width, at = half_words_before(BITS, K);
      constexpr u32 mask = ((1u << width) - 1u) * 0x00010001u;
      const u32 word = width == 1 ? w[at] : w[at + q / per];
      const int shift = width == 1 ? q : (q % per) * width;
      return (((word >> shift) & mask) << off) | pair<K + 1>(q);
    }
  }
};

// What the producer copies into a stage for the layout tiles of a step past the last one of K,
// and for the group rows only those tiles would use: zero codes under zero (or the step's own)
// scales decode to finite weights, whose products with x's zero-filled columns past K are 0. The
// consumers then run one loop for every step, with no per-slice check (a second, checked copy of
// the loop took about a quarter of the kernel's compile time). 4 KB: the most one step needs per
// copy (three missing tiles of 8-bit codes, or three group rows of 512 bytes). Zero-initialised
// static device memory.
__device__ __align__(16) u32 rs_zero_page[1024];

template <class Fmt, class Tile, typename ActT, typename OutT, bool BIAS>
struct Wna16WgmmaRsKernel {
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  static constexpr int TILES_K = Tile::TILES_K, BITS = Fmt::BITS;
  static constexpr int ACC = BM / 2;  // per wgmma: 64 x BM fp32 over 128 threads
  static constexpr int TILE_BYTES = 32 * BITS * 4;  // one layout tile of packed codes
  static constexpr int W_BYTES = Tile::TILES_N * TILES_K * TILE_BYTES;
  static constexpr int S_BYTES = Fmt::IN_LOOP ? Tile::SCALE_BYTES : 0;
  static constexpr int Z_BYTES = Fmt::ZERO != 0 ? Tile::SCALE_BYTES : 0;
  static constexpr int STAGE_BYTES = Tile::X_BYTES + W_BYTES + S_BYTES + Z_BYTES;
  static constexpr int OUT_BYTES = BM * BN * 4;  // the fp32 output tile
  // Every consumer thread releases the stages it read: each loads its own code words and group
  // values, and one arrival per warp would order only lane 0's loads before the producer's next
  // copy into the stage (compute-sanitizer racecheck reports the other lanes' as races).
  static constexpr int RELEASES = 128;
  // The slice of step j whose wgmma wait releases step j - 1's stage: slice 1's wait (slice 0's
  // and all before it done) rather than slice 0's, where ptxas 13.5 serializes the 128-row tile's
  // wgmmas (C7513) once every thread arrives there.
  static constexpr int RELEASE_SLICE = 1;
  static_assert(RELEASE_SLICE < TILES_K, "the release falls inside the step");
  // 1024 bytes of slack to align the ring to the 128B-swizzle atom, the ring (reused by the
  // epilogue's transposed tile), then the full / empty barriers (mirrors WgmmaWna16Config)
  static constexpr int SMEM_BYTES = 1024 + Max<STAGES * STAGE_BYTES, OUT_BYTES>::value + 16 * STAGES;
  static_assert(STAGE_BYTES % 1024 == 0, "every stage's x tile starts on a swizzle atom");
  static_assert(Fmt::ZERO == 0 || Fmt::IN_LOOP, "zero points come with in-loop scales");
  using Dq = Dequant<ActT, Fmt::KIND, BITS, Fmt::EXP, Fmt::MAN, Fmt::ZERO, Fmt::IN_LOOP>;
  using Args = typename Wna16WgmmaKernel<Fmt, WgmmaWna16Tile<STAGES, Tile::GROUP_M>, ActT, OutT,
                                         BIAS>::Args;
  // bf16 float codes with group scales: their exponent-bias factor 2^float_shift() rides on each
  // group row's scale (one multiply per row, not one per code pair), less 2^FOLD_DOWN, which stage()
  // puts back on the fp32 accumulators so that scales up to 2^(127 - float_shift() + FOLD_DOWN)
  // stay finite (the layout refuses larger ones and ones small enough to round differently:
  // kernels/wna16/layout.py, FOLD_DOWN there). Every product stays exact: powers of two.
  static constexpr bool FOLD = ActTraits<ActT>::kBias == 127 && Fmt::KIND == kWeightFloat &&
                               Fmt::IN_LOOP && Dq::float_shift() > 0;
  static constexpr int FOLD_DOWN = 16;
  static_assert(!FOLD || Dq::float_shift() > FOLD_DOWN, "the folded factor is a normal bf16");

  // Split-K over gridDim.z: split z runs K steps [z * iters_per_split, + iters_per_split), writes
  // its fp32 tile to `workspace` and bumps the tile's counter; the last to arrive sums the tiles
  // in split order (the same result whichever CTA is last), runs the epilogue and zeroes the
  // counter again (no memset between launches or graph replays). With Tile::SPLIT_SCATTER, when
  // the whole grid is resident at once (at most `resident` CTAs), every split instead sums and
  // stores a share of the tile's rows once all have written theirs (split_tile.cuh's
  // scatter_parts; the same sums).
  struct Split {
    float* workspace = nullptr;  // [tiles][splits][BM * BN]
    int* counters = nullptr;     // [tiles], or [tiles][c] for clusters of c; zero between launches
    int iters_per_split = 0;     // 0: one split over all of K
    int resident = 0;            // CTAs the device holds at once (0: never wait on other CTAs)
  };

  struct Smem {
    u32 ring, full, empty;
    HM_DEVICE u32 x(int s) const { return ring + s * STAGE_BYTES; }
    HM_DEVICE u32 w(int s) const { return x(s) + Tile::X_BYTES; }
    HM_DEVICE u32 scales(int s) const { return w(s) + W_BYTES; }
    HM_DEVICE u32 zeros(int s) const { return scales(s) + S_BYTES; }
    HM_DEVICE u32 full_bar(int s) const { return full + 8 * s; }
    HM_DEVICE u32 empty_bar(int s) const { return empty + 8 * s; }
  };

  // A consumer thread's share of the tile: the layout-tile column its warp reads (weight columns
  // 64 col ..) and which half of each lane's 16 code pairs (pairs 8 half .. 8 half + 7). Two
  // consumer warpgroups: warp w of warpgroup h takes column w, half h. One (BN = 128): warp w takes
  // column w / 2, half w % 2. A warp's wgmma rows are its Place's weight columns (n0 + 64 col +
  // 8 (4 half + 2i (+1)) + lane/4 for wgmma i, as the header has them), which stage() maps back.
  struct Place {
    int col, half;
  };
  HM_DEVICE static Place place() {
    if constexpr (Tile::CONSUMERS == 2) return Place{(threadIdx.x / 32) % 4, threadIdx.x / 128};
    return Place{threadIdx.x / 64, (threadIdx.x / 32) % 2};
  }

  // log2 of the in-loop group: the rendered one (Fmt::GROUP_SHIFT), else the launch's.
  HM_DEVICE static int group_shift(const Args& a) {
    return Fmt::GROUP_SHIFT > 0 ? Fmt::GROUP_SHIFT : a.group_shift;
  }

  // First group-scale row of step `it` and how many rows its valid K tiles span.
  HM_DEVICE static int first_row(const Args& a, int it) {
    return (it * TILES_K * 16) >> group_shift(a);
  }

  // One thread: load K step `it` into stage `s` (free: never used, or released by every consumer
  // thread).
  // WITH_X = false leaves the x tile to the caller (the MoE kernel gathers its rows itself) and
  // expects only the weights' bytes on the stage's full barrier. LOAD_X = false expects the x
  // tile's bytes too but leaves its copy to a later load_x (PDL: after the previous kernel).
  template <bool WITH_X = true, bool LOAD_X = WITH_X>
  HM_DEVICE static void produce(const TmaDescriptor* tx, const Args& a, const Smem& sm, int s,
                                int it, int m0, int n0) {
    const int nt0 = n0 / 64, tiles_n = min(Tile::TILES_N, a.n_pad / 64 - nt0);
    const u32 row_bytes = tiles_n * 64 * 2;  // the valid tiles' scale columns, contiguous
    const int kt0 = it * TILES_K, tiles_k = min(TILES_K, a.k_tiles - kt0);
    // rows: the group rows of the step's tiles inside K; all_rows: of all its TILES_K tiles
    int r0 = 0, rows = 0, all_rows = 0;
    if constexpr (Fmt::IN_LOOP) {
      r0 = first_row(a, it);
      rows = ((((kt0 + tiles_k) * 16) - 1) >> group_shift(a)) - r0 + 1;
      all_rows = ((((kt0 + TILES_K) * 16) - 1) >> group_shift(a)) - r0 + 1;
    }
    const u32 bytes = (WITH_X ? Tile::X_BYTES : 0) + tiles_n * TILES_K * TILE_BYTES +
                      all_rows * row_bytes * ((S_BYTES ? 1 : 0) + (Z_BYTES ? 1 : 0));
    mbar_arrive_expect_tx(sm.full_bar(s), bytes);
    if constexpr (WITH_X && LOAD_X) load_x(tx, sm, s, it, m0);
    if constexpr (Tile::CONSUMERS == 1) {
      // two CTAs per SM leave the producer 24 registers: this loop unrolled spilled two words
#pragma unroll 1
      for (int tn = 0; tn < tiles_n; ++tn) copy_codes(a, sm, s, nt0 + tn, kt0, tiles_k, tn);
    } else {
      for (int tn = 0; tn < tiles_n; ++tn) copy_codes(a, sm, s, nt0 + tn, kt0, tiles_k, tn);
    }
    for (int r = 0; r < all_rows; ++r) {
      const long long at = static_cast<long long>(r0 + r) * a.n_pad + n0;
      if constexpr (S_BYTES != 0) {
        const void* src = r < rows ? static_cast<const void*>(a.scales + at) : rs_zero_page;
        bulk_load(sm.scales(s) + r * BN * 2, src, row_bytes, sm.full_bar(s));
      }
      if constexpr (Z_BYTES != 0) {
        const void* src = r < rows ? static_cast<const void*>(a.zeros + at) : rs_zero_page;
        bulk_load(sm.zeros(s) + r * BN * 2, src, row_bytes, sm.full_bar(s));
      }
    }
  }

  // Layout tiles kt0 .. kt0 + tiles_k - 1 of layout-tile column nt into stage `s`'s column tn, and
  // zeros for those of the step past K.
  HM_DEVICE static void copy_codes(const Args& a, const Smem& sm, int s, int nt, int kt0,
                                   int tiles_k, int tn) {
    const u32* src = a.qweight + (static_cast<long long>(nt) * a.k_tiles + kt0) * 32 * BITS;
    const u32 dst = sm.w(s) + tn * TILES_K * TILE_BYTES;
    bulk_load(dst, src, tiles_k * TILE_BYTES, sm.full_bar(s));
    if (tiles_k < TILES_K) {
      bulk_load(dst + tiles_k * TILE_BYTES, rs_zero_page, (TILES_K - tiles_k) * TILE_BYTES,
                sm.full_bar(s));
    }
  }

  // Step `it`'s x tile into stage `s` (its bytes expected by produce).
  HM_DEVICE static void load_x(const TmaDescriptor* tx, const Smem& sm, int s, int it, int m0) {
    tma_load_2d(sm.x(s), tx, it * BK, m0, sm.full_bar(s));
  }

  // A thread's group parameters from scale (and zero-point) row `row` of a stage: with its Place
  // (col, half v), the 4 columns 8j + lane/4, j = 4v .. 4v+3, of layout-tile column col, stored in
  // lane order at stage + group_off (consume's offsets); gp[i][h] is pair j = 4v + 2i + h's.
  HM_DEVICE static void group_params(const unsigned char* stage, int group_off, int row,
                                     GroupParams<ActT> (&gp)[2][2]) {
    uint2 s = make_uint2(0u, 0u), z = make_uint2(0u, 0u);
    const unsigned char* at = stage + group_off + row * BN * 2;
    if constexpr (S_BYTES != 0) s = *reinterpret_cast<const uint2*>(at);
    if constexpr (Z_BYTES != 0) z = *reinterpret_cast<const uint2*>(at + S_BYTES);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        gp[i][h] = Dq::prepare(act_at(s, 2 * i + h), act_at(z, 2 * i + h));
        if constexpr (FOLD) {
          constexpr u32 kFactor = u32(127 + Dq::float_shift() - FOLD_DOWN) << 7;  // bf16 2^(..)
          gp[i][h].scale = __hmul2(gp[i][h].scale, from_u32<nv_bfloat162>(kFactor * 0x00010001u));
        }
      }
    }
  }

  HM_DEVICE static ActT act_at(const uint2& v, int j) {
    const auto pair = from_u32<typename ActTraits<ActT>::T2>(j < 2 ? v.x : v.y);
    return j % 2 == 0 ? pair.x : pair.y;
  }

  // Fragment I of a slice from 4-bit codes (Dq::apply_in_place): HalfLaneWords<4>'s word I holds
  // pairs 4I .. 4I + 3 at fields 0 .. 3 (fields 2, 3: fields 0, 1 of w >> 8); pair 4I + r goes to
  // register r's slot as in dequant below.
  template <int I>
  HM_DEVICE static void nibbles(const HalfLaneWords<BITS>& hw, const GroupParams<ActT> (&gp)[2][2],
                                u32 (&frag)[2][4], u32 magic2) {
    const u32 hi = hw.w[I] >> 8;
    frag[I][0] = Dq::template apply_in_place<0>(hw.w[I], gp[I][0], magic2);
    frag[I][2] = Dq::template apply_in_place<1>(hw.w[I], gp[I][0], magic2);
    frag[I][1] = Dq::template apply_in_place<0>(hi, gp[I][1], magic2);
    frag[I][3] = Dq::template apply_in_place<1>(hi, gp[I][1], magic2);
  }

  // Fragment I of a slice from 3-bit codes (Dq::apply_in_place3): HalfLaneWords<3> holds pair q
  // of the 2-bit plane at field q of w[0] (fields 4-7: w[0] >> 8) and of the 1-bit plane at bit q
  // of w[1]; pair 4I + r goes to register r's slot as in dequant below.
  template <int I>
  HM_DEVICE static void triples(const HalfLaneWords<BITS>& hw, const GroupParams<ActT> (&gp)[2][2],
                                u32 (&frag)[2][4], u32 magic2) {
    const u32 w0 = I == 1 ? hw.w[0] >> 8 : hw.w[0];
    frag[I][0] = Dq::template apply_in_place3<0, 4 * I>(w0, hw.w[1], gp[I][0], magic2);
    frag[I][2] = Dq::template apply_in_place3<1, 4 * I + 1>(w0, hw.w[1], gp[I][0], magic2);
    frag[I][1] = Dq::template apply_in_place3<2, 4 * I + 2>(w0, hw.w[1], gp[I][1], magic2);
    frag[I][3] = Dq::template apply_in_place3<3, 4 * I + 3>(w0, hw.w[1], gp[I][1], magic2);
  }

  // The two A fragments of one K slice from the lane's code words at `words`: fragment i,
  // register r: rows lane/4 (+8 for r = 1, 3) are the warpgroup's pairs j = 2i (2i + 1), K low
  // (r = 0, 1) or high (r = 2, 3) half: pair q = 4i + 2 (r % 2) + r / 2.
  // magic2: Dq::kMagic2 as a pinned_constant (the in-place 3- and 4-bit forms' operand).
  HM_DEVICE static void dequant(const u32* words, int v, const GroupParams<ActT> (&gp)[2][2],
                                u32 (&frag)[2][4], u32 magic2) {
    HalfLaneWords<BITS> hw;
    hw.load(words, v);
    if constexpr (Dq::kInPlaceNibbles) {
      nibbles<0>(hw, gp, frag, magic2);
      nibbles<1>(hw, gp, frag, magic2);
    } else if constexpr (Dq::kInPlaceTriples) {
      triples<0>(hw, gp, frag, magic2);
      triples<1>(hw, gp, frag, magic2);
    } else if constexpr (Dq::kByteWords && HUMMING_DIALECT == HM_DIALECT_NVIDIA) {
      // pair q = 4i + 2(r % 2) + r / 2 lies in word q / 2, bytes q % 2 and q % 2 + 2
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          frag[i][h] = Dq::apply_word(hw.w[2 * i + h], 0, gp[i][h]);
          frag[i][h + 2] = Dq::apply_word(hw.w[2 * i + h], 1, gp[i][h]);
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if constexpr (FOLD) {
            frag[i][h] = Dq::apply_prefolded(hw.pair(4 * i + 2 * h), gp[i][h]);
            frag[i][h + 2] = Dq::apply_prefolded(hw.pair(4 * i + 2 * h + 1), gp[i][h]);
          } else {
            frag[i][h] = Dq::apply(hw.pair(4 * i + 2 * h), gp[i][h]);
            frag[i][h + 2] = Dq::apply(hw.pair(4 * i + 2 * h + 1), gp[i][h]);
          }
        }
      }
    }
  }

  // acc += A (the fragments) x the x tile's K slice at `dx`, over BM tokens.
  HM_DEVICE static void mma(float (&acc)[ACC], const u32 (&frag)[4], u64 dx) {
    if constexpr (BM == 128) {
      wgmma_m64n128k16_rs<ActT>(acc, frag, dx, true);
    } else if constexpr (BM > 128) {
      WgmmaWideRs<ActT, BM>::run(acc, frag, dx, true);
    } else {
      WgmmaNarrowRs<ActT, BM>::run(acc, frag, dx, true);
    }
  }

  // K steps it0 .. it0 + iters - 1; local step j is the ring's step q0 + j, in stage
  // (q0 + j) % STAGES. GATHERED_X: x's tile was written by threads' cp.async (generic proxy),
  // which wgmma (async proxy) reads only after a proxy fence on this side of the full barrier.
  // PERSISTENT: the ring carries on with another tile of the CTA after this one (the MoE kernel),
  // so the last step's stage is released too, once its wgmmas are done.
  template <bool GATHERED_X = false, bool PERSISTENT = false>
  HM_DEVICE static void consume(const TmaDescriptor* tx, const Args& a, const Smem& sm,
                                const unsigned char* ring, int it0, int iters, int m0, int n0,
                                float (&acc)[2][ACC], int q0 = 0) {
    const Place p = place();
    const int v = p.half, lane = threadIdx.x % 32;
    // the lane's code words of slice 0 (slice kk: + kk * TILE_BYTES) and group values of row 0
    const int words_off = Tile::X_BYTES + (p.col * TILES_K * 32 + lane) * BITS * 4;
    const int group_off = Tile::X_BYTES + W_BYTES + 2 * (64 * p.col + 8 * (lane / 4) + 4 * v);
    // groups of 64 or more: a step's 4 slices share one scale row (BK = 64 = 2^6)
    const bool one_row = !Fmt::IN_LOOP || group_shift(a) >= 6;
    const int group_mask = (1 << group_shift(a)) - 1;
    constexpr int BUFS = Tile::FRAG_BUFS;
    const u32 magic2 = pinned_constant(Dq::kMagic2, a.k_tiles);
    u32 frag[BUFS][2][4] = {};
    GroupParams<ActT> gp[2][2];
    // iters >= 1 (K >= 1): a loop that may run zero times makes ptxas join the initial zero
    // accumulators with the wgmma results by moves, and then serialize every wgmma (C7515)
    int j = 0;
    do {
      // unsigned: the stage and phase are a mask and a shift (signed: four instructions more)
      const unsigned q = q0 + j;
      const int s = q % STAGES, it = it0 + j, kt0 = it * TILES_K;
      const unsigned char* stage = ring + s * STAGE_BYTES;
      const u64 dx = sw128_kmajor_desc(sm.x(s));
      mbar_wait(sm.full_bar(s), (q / STAGES) & 1);
      if constexpr (GATHERED_X) fence_proxy_async_smem();
      if (one_row) group_params(stage, group_off, 0, gp);
      // Every slice alike: tiles past K hold the producer's zeros (rs_zero_page), and a warp
      // whose layout-tile column lies past the padded N computes rows that are never stored.
#pragma unroll
      for (int kk = 0; kk < TILES_K; ++kk) {
        const int b = kk % BUFS, kt = kt0 + kk;
        // groups of 16 or 32: a new scale row where a group starts (every slice, every other)
        if (!one_row && ((kt * 16) & group_mask) == 0) {
          group_params(stage, group_off, ((kt * 16) >> group_shift(a)) - first_row(a, it), gp);
        }
        dequant(reinterpret_cast<const u32*>(stage + words_off + kk * TILE_BYTES), v, gp, frag[b],
                magic2);
        wgmma_fence();
        mma(acc[0], frag[b][0], desc_advance(dx, 32 * kk));
        mma(acc[1], frag[b][1], desc_advance(dx, 32 * kk));
        wgmma_commit();
        // the previous slice is done: its fragments may be overwritten, and after slice 0 the
        // previous stage is no longer read (released at RELEASE_SLICE)
        wgmma_wait<1>();
        fence_registers_u32(frag[(kk + BUFS - 1) % BUFS][0]);
        fence_registers_u32(frag[(kk + BUFS - 1) % BUFS][1]);
        if (kk == RELEASE_SLICE && j > 0) mbar_arrive(sm.empty_bar((q - 1) % STAGES));
        // Refill the stage of step j - 1 with step j - 1 + STAGES late in the step, when the
        // other warpgroup has most likely released it too (the wait blocks warpgroup 0).
        if (!Tile::PRODUCER && kk == TILES_K - 1 && j > 0 && j - 1 + STAGES < iters &&
            threadIdx.x == 0) {
          mbar_wait(sm.empty_bar((j - 1) % STAGES), ((j - 1) / STAGES) & 1);
          produce(tx, a, sm, (j - 1) % STAGES, it - 1 + STAGES, m0, n0);
        }
      }
    } while (++j < iters);
    wgmma_wait<0>();
    fence_registers(acc[0]);
    fence_registers(acc[1]);
    if constexpr (PERSISTENT) mbar_arrive(sm.empty_bar((q0 + iters - 1) % STAGES));
  }

  // Element (m, n) of the transposed fp32 output tile [BM][BN] in shared memory: 8-element
  // chunks of a row XOR-ed with m % 8, so the accumulator writes (8 columns x 4 rows per
  // instruction) and the row reads both spread over all banks.
  HM_DEVICE static int out_index(int m, int n) {
    return m * BN + (((n / 8) ^ (m % 8)) * 8) + n % 8;
  }

  // The accumulators go to shared memory as they are and the epilogue runs on what is read back:
  // ptxas (13.0 and 13.5) schedules F2FP conversions of accumulators (bf16 and fp16 pairs alike)
  // before the final wgmma wait, where they read the last slices' results before they land.
  // The accumulators into the transposed fp32 tile [BM][BN] at `tile` (out_index), then a
  // barrier of the consumer warpgroups: the tile is complete when this returns. PARTS > 1: only
  // rows [PART * BM / PARTS, (PART + 1) * BM / PARTS), at rows from 0 of a [BM / PARTS][BN] tile
  // (the persistent MoE kernel stages its tile in halves, beside the ring). UNFOLD: multiply by
  // the 2^FOLD_DOWN that FOLD took off the scales (steps of other kernels built on this one, which
  // apply the scales their own way, stage with false).
  template <int PART = 0, int PARTS = 1, bool UNFOLD = FOLD>
  HM_DEVICE static void stage(const float (&acc)[2][ACC], float* tile) {
    constexpr int C0 = PART * ACC / 4 / PARTS, C1 = (PART + 1) * ACC / 4 / PARTS;
    constexpr float kFoldUp = float(1 << FOLD_DOWN);  // what FOLD took off the scales
    static_assert(ACC / 4 % PARTS == 0, "whole 8-row accumulator groups per part");
    const Place p = place();
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int nl = 64 * p.col + 8 * (4 * p.half + 2 * i + h) + g;
#pragma unroll
        for (int c = C0; c < C1; ++c) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float v = acc[i][4 * c + 2 * h + e];
            tile[out_index(8 * (c - C0) + 2 * t + e, nl)] = UNFOLD ? v * kFoldUp : v;
          }
        }
      }
    }
    named_barrier<128 * Tile::CONSUMERS>(1);
  }

  HM_DEVICE static void store(const Args& a, const Split& sp, const float (&acc)[2][ACC],
                              float* tile, int m0, int n0) {
    stage(acc, tile);
    if constexpr (Tile::CLUSTER_SPLIT) {
      if (gridDim.z > 1) {
        const int ctas = static_cast<int>(cluster_size());
        // clusters that do not tile the splits, or several per tile and no workspace, would
        // store partial sums
        if (gridDim.z % ctas != 0 || (ctas < gridDim.z && sp.workspace == nullptr)) __trap();
        using Reducer = ClusterSplitReducer<BM, BN, 128 * Tile::CONSUMERS, 1>;
        const typename Reducer::Rows rows = Reducer::reduce(tile);
        if (ctas == gridDim.z || sum_cluster_rows(sp, tile, rows.first, rows.last, ctas)) {
          store_row_range(a, tile, m0, n0, rows.first, rows.last);
        }
        Reducer::done();
        return;
      }
    }
    if constexpr (Tile::SPLIT_SCATTER) {
      if (gridDim.z > 1 && static_cast<u32>(sp.resident) >= gridDim.x * gridDim.y * gridDim.z) {
        // the whole grid is resident: every split sums and stores its share of the rows inside
        // M (the cluster form's shares)
        constexpr int VECS = BM * BN / 4;
        const int rows = min(BM, a.M - m0);
        const auto share = ClusterSplitReducer<BM, BN, 128 * Tile::CONSUMERS, 1>::share(
            blockIdx.z, gridDim.z, rows);
        const int tile_id = blockIdx.y * gridDim.x + blockIdx.x;
        float4* slots = reinterpret_cast<float4*>(sp.workspace) +
                        static_cast<long long>(tile_id) * gridDim.z * VECS;
        scatter_parts<128 * Tile::CONSUMERS, 1>(
            reinterpret_cast<float4*>(tile), rows * BN / 4, share.first * BN / 4,
            share.last * BN / 4, slots, VECS, gridDim.z, blockIdx.z, sp.counters + tile_id);
        store_row_range(a, tile, m0, n0, share.first, share.last);
        return;
      }
    }
    if (gridDim.z > 1 &&
        !SplitTileReducer<BM * BN, 128 * Tile::CONSUMERS, 1>::reduce(
            tile, sp.workspace, sp.counters, blockIdx.y * gridDim.x + blockIdx.x)) {
      return;
    }
    store_rows<BM>(a, tile, m0, n0);
  }

  // Several clusters per tile (launched with clusters of `ctas` < gridDim.z splits): rows first ..
  // last - 1 of `tile`, this CTA's share summed over its cluster, summed again over the tile's
  // clusters through the workspace (split_tile.cuh's sum_parts; each rank's rows have their own
  // counter). Split z's share lies where its whole partial tile would (the workspace form's
  // slot); the sum runs cluster by cluster, each cluster's in rank order: the same sum on every
  // launch. Returns true in the CTA that must store the rows.
  HM_DEVICE static bool sum_cluster_rows(const Split& sp, float* tile, int first, int last,
                                         int ctas) {
    constexpr int VECS = BM * BN / 4;
    const int z = blockIdx.z, rank = z % ctas, tile_id = blockIdx.y * gridDim.x + blockIdx.x;
    float4* slots = reinterpret_cast<float4*>(sp.workspace) +
                    (static_cast<long long>(tile_id) * gridDim.z + rank) * VECS + first * BN / 4;
    return sum_parts<128 * Tile::CONSUMERS, 1>(
        reinterpret_cast<float4*>(tile) + first * BN / 4, (last - first) * BN / 4, slots,
        static_cast<long long>(ctas) * VECS, gridDim.z / ctas, z / ctas,
        sp.counters + tile_id * ctas + rank);
  }

  // Rows 0 .. ROWS - 1 of a staged tile (out_index) through the epilogue to out rows m0 .. and
  // columns n0 .. n0 + BN - 1 (those inside [M, N]).
  template <int ROWS>
  HM_DEVICE static void store_rows(const Args& a, const float* tile, int m0, int n0) {
    store_row_range(a, tile, m0, n0, 0, ROWS);
  }

  // Rows first .. last - 1 of a staged tile to out rows m0 + first ..
  HM_DEVICE static void store_row_range(const Args& a, const float* tile, int m0, int n0,
                                        int first, int last) {
    // a chunk is 8 columns of a row; a warp stores one row's 32 chunks (BN = 256) or two rows' 16
    constexpr int CHUNKS = BN / 8;
    const int ct = threadIdx.x, chunk = ct % CHUNKS, n = n0 + 8 * chunk;
    using Epi = Epilogue<OutT, Fmt::EPI_SCALE, Fmt::GLOBAL, BIAS>;
    const Epi epi{a.channel, a.global, a.bias};
    const float global = Fmt::GLOBAL ? a.global[0] : 1.f;
    // A thread stores the same 8 columns in every row: their factors are loaded once, before the
    // first store (Epilogue::Column says why loads between the stores cost a round trip each).
    typename Epi::Column cols[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) cols[e] = epi.column(n + e, a.N);
    const bool vector = ((reinterpret_cast<unsigned long long>(a.out) |
                          static_cast<unsigned long long>(a.ldc) * sizeof(OutT)) & 15) == 0;
#pragma unroll 2
    for (int r = first + ct / CHUNKS; r < last; r += 128 * Tile::CONSUMERS / CHUNKS) {
      const int m = m0 + r;
      if (m >= a.M || n >= a.N) continue;
      const float4* src = reinterpret_cast<const float4*>(tile + out_index(r, 8 * chunk));
      const float4 lo = src[0], hi = src[1];
      const float f[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      OutT* dst = a.out + static_cast<long long>(m) * a.ldc + n;
      if (vector && n + 8 <= a.N) {
        OutT o[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] = convert_out<OutT>(epi.apply(f[e], cols[e], global));
#pragma unroll
        for (int q = 0; q < static_cast<int>(sizeof(OutT)) / 2; ++q) {
          reinterpret_cast<uint4*>(dst)[q] = reinterpret_cast<const uint4*>(o)[q];
        }
      } else {
        for (int e = 0; e < 8 && n + e < a.N; ++e) {
          dst[e] = convert_out<OutT>(epi.apply(f[e], cols[e], global));
        }
      }
    }
  }

  HM_DEVICE static void run(const TmaDescriptor& tx, const Args& a, const Split& sp) {
    extern __shared__ uint4 smem_u4[];
    const u32 raw = smem_addr(smem_u4), base = (raw + 1023u) & ~1023u;  // swizzle atom alignment
    unsigned char* ring = reinterpret_cast<unsigned char*>(smem_u4) + (base - raw);
    const u32 bars = base + Max<STAGES * STAGE_BYTES, OUT_BYTES>::value;
    const Smem sm{base, bars, bars + 8 * STAGES};
    const TileCoord tile = grouped_tile<Tile::GROUP_M>();
    const int n0 = tile.n * BN, m0 = tile.m * BM, steps = ceil_div(a.K, BK);
    const int it0 = blockIdx.z * sp.iters_per_split;
    const int iters = sp.iters_per_split > 0 ? min(sp.iters_per_split, steps - it0) : steps;
    init_ring_barriers<STAGES, Tile::CONSUMERS, RELEASES>(sm.full, sm.empty);
    if constexpr (Tile::PRODUCER) {
      if (threadIdx.x >= 128 * Tile::CONSUMERS) {
        // The consumers synchronise on their own named barrier: the producer may exit.
        setmaxnreg_dec<Tile::PRODUCER_REGS>();
        if (threadIdx.x == 128 * Tile::CONSUMERS) {
          tma_prefetch_descriptor(&tx);
          // PDL (ptx/pdl.cuh): the free stages' codes and scales go out before the previous
          // kernel in the stream has finished, their x tiles after it
          const int first = min(STAGES, iters);
          for (int j = 0; j < first; ++j) produce<true, false>(&tx, a, sm, j, it0 + j, m0, n0);
          wait_prior_grid();
          allow_next_grid();
          for (int j = 0; j < first; ++j) load_x(&tx, sm, j, it0 + j, m0);
          for (int j = first; j < iters; ++j) {
            mbar_wait(sm.empty_bar(j % STAGES), ((j / STAGES) & 1) ^ 1);
            produce(&tx, a, sm, j % STAGES, it0 + j, m0, n0);
          }
        }
        return;
      }
      setmaxnreg_inc<Tile::CONSUMER_REGS>();
      wait_prior_grid();  // the consumers' epilogue reads and writes global memory
    } else {
      wait_prior_grid();
      if (threadIdx.x == 0) {
        tma_prefetch_descriptor(&tx);
        for (int j = 0; j < min(STAGES, iters); ++j) produce(&tx, a, sm, j, it0 + j, m0, n0);
      }
    }
    allow_next_grid();
    float acc[2][ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[0][i] = acc[1][i] = 0.f;
    consume(&tx, a, sm, ring, it0, iters, m0, n0, acc);
    // both warpgroups' wgmmas are done before the ring turns into the output tile
    named_barrier<128 * Tile::CONSUMERS>(1);
    store(a, sp, acc, reinterpret_cast<float*>(ring), m0, n0);
  }
};

}  // namespace humming

// The entry every rendered register-A-form translation unit instantiates: the shared-memory form's
// parameters, then split-K's workspace, counters, K steps per split and resident CTAs (Split).
#define HUMMING_WNA16_WGMMA_RS_ENTRY(NAME, FMT, TILE, ACT, OUT, BIAS)                           \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::CTAS) NAME(                  \
      HM_WNA16_WGMMA_PARAMS(ACT, OUT), float* workspace, int* counters, int iters_per_split,     \
      int resident) {                                                                            \
    using Kern = humming::Wna16WgmmaRsKernel<FMT, TILE, ACT, OUT, BIAS>;                        \
    Kern::run(tmap_x, HM_WNA16_WGMMA_ARGS(Kern),                                                \
              typename Kern::Split{workspace, counters, iters_per_split, resident});            \
  }
