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
// CTA: 2 warpgroups over 256 weight columns (N) x 128 activation rows (M), 64 K per step. Thread 0
// also streams, per step, x's 128 x 64 tile (TMA, 128B swizzle: the K-major B operand of wgmma
// m64n128k16), the 4 x 4 layout tiles (64 N x 16 K) of packed codes and the step's group-scale /
// zero-point rows (bulk copies) through a `STAGES`-deep mbarrier ring, refilling a stage once
// every warp has released it. There is no producer warp: with one, 9 warps put 3 on one SM
// sub-partition, whose 16K registers then cap each thread at 168, too few for the 128
// accumulators plus two slices' fragments in flight (ptxas serializes the wgmmas, C7512). Warp w of warpgroup v owns layout-tile column w (weight columns
// n0 + 64w ..) and, of each lane's 16 code pairs, the eight of columns 8j + lane/4 with j in
// 4v .. 4v+3 (the wna16 layout, humming/memory/bitplanes.cuh). Per 16-deep K slice it dequantizes
// them (humming/datatype/dequant.cuh, as the wna16 kernels do) straight into two A fragments and
// issues two wgmma m64n128k16, whose rows 16w + lane/4 (+8) are therefore weight columns
// n0 + 64w + 8(4v + 2i (+1)) + lane/4 of wgmma i: a permutation of N that only the epilogue sees.
// Fragments are double-buffered: slice s+1 is dequantized while the tensor cores run slice s.
// The epilogue scales each column, converts, and transposes through shared memory (the ring's
// space) into coalesced 16-byte row stores.
// Tails: TMA zero-fills x past M and K; layout tiles past the padded N or K are neither copied nor
// used (their fragments are zero); stores are predicated to [M, N].
#pragma once
#include "humming/kernel/wna16_wgmma.cuh"
#include "humming/mma/wgmma_f16.cuh"

namespace humming {

// GROUP_M: M tiles walked down before moving one N tile right (humming/memory/tile_order.cuh).
// PRODUCER: a third warpgroup issues the copies (setmaxnreg moves its registers to the consumers:
// 40 there, 232 here); without it thread 0 refills each stage once both warpgroups released it.
// FRAG_BUFS: A-fragment buffers (2: a slice's are rewritten two slices later, right after its
// group retired; 4: one per slice of a step, rewritten a whole step later).
template <int STAGES_, int GROUP_M_, bool PRODUCER_ = false, int FRAG_BUFS_ = 2>
struct WgmmaWna16RsTile {
  static constexpr int BM = 128, BN = 256, BK = 64, STAGES = STAGES_, GROUP_M = GROUP_M_;
  static constexpr int CONSUMERS = 2;
  static constexpr bool PRODUCER = PRODUCER_;
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

  HM_DEVICE void clear() {
#pragma unroll
    for (int i = 0; i < COUNT; ++i) w[i] = 0u;
  }
};

template <class Fmt, class Tile, typename ActT, typename OutT, bool BIAS>
struct Wna16WgmmaRsKernel {
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  static constexpr int TILES_K = Tile::TILES_K, BITS = Fmt::BITS;
  static constexpr int ACC = 64;  // per wgmma: 64 x 128 fp32 over 128 threads
  static constexpr int TILE_BYTES = 32 * BITS * 4;  // one layout tile of packed codes
  static constexpr int W_BYTES = Tile::TILES_N * TILES_K * TILE_BYTES;
  static constexpr int S_BYTES = Fmt::IN_LOOP ? Tile::SCALE_BYTES : 0;
  static constexpr int Z_BYTES = Fmt::ZERO != 0 ? Tile::SCALE_BYTES : 0;
  static constexpr int STAGE_BYTES = Tile::X_BYTES + W_BYTES + S_BYTES + Z_BYTES;
  static constexpr int OUT_BYTES = BM * BN * 4;  // the fp32 output tile
  // 1024 bytes of slack to align the ring to the 128B-swizzle atom, the ring (reused by the
  // epilogue's transposed tile), then the full / empty barriers (mirrors WgmmaWna16Config)
  static constexpr int SMEM_BYTES = 1024 + Max<STAGES * STAGE_BYTES, OUT_BYTES>::value + 16 * STAGES;
  static_assert(STAGE_BYTES % 1024 == 0, "every stage's x tile starts on a swizzle atom");
  static_assert(Fmt::ZERO == 0 || Fmt::IN_LOOP, "zero points come with in-loop scales");
  using Dq = Dequant<ActT, Fmt::KIND, BITS, Fmt::EXP, Fmt::MAN, Fmt::ZERO, Fmt::IN_LOOP>;
  using Args = typename Wna16WgmmaKernel<Fmt, WgmmaWna16Tile<STAGES, Tile::GROUP_M>, ActT, OutT,
                                         BIAS>::Args;

  struct Smem {
    u32 ring, full, empty;
    HM_DEVICE u32 x(int s) const { return ring + s * STAGE_BYTES; }
    HM_DEVICE u32 w(int s) const { return x(s) + Tile::X_BYTES; }
    HM_DEVICE u32 scales(int s) const { return w(s) + W_BYTES; }
    HM_DEVICE u32 zeros(int s) const { return scales(s) + S_BYTES; }
    HM_DEVICE u32 full_bar(int s) const { return full + 8 * s; }
    HM_DEVICE u32 empty_bar(int s) const { return empty + 8 * s; }
  };

  // First group-scale row of step `it` and how many rows its valid K tiles span.
  HM_DEVICE static int first_row(const Args& a, int it) {
    return (it * TILES_K * 16) >> a.group_shift;
  }

  // Thread 0: load step `it` into its stage (free: never used, or released by every warp).
  HM_DEVICE static void produce(const TmaDescriptor* tx, const Args& a, const Smem& sm, int it,
                                int m0, int n0) {
    const int nt0 = n0 / 64, tiles_n = min(Tile::TILES_N, a.n_pad / 64 - nt0);
    const u32 row_bytes = tiles_n * 64 * 2;  // the valid tiles' scale columns, contiguous
    const int s = it % STAGES, kt0 = it * TILES_K, tiles_k = min(TILES_K, a.k_tiles - kt0);
    int r0 = 0, rows = 0;
    if constexpr (Fmt::IN_LOOP) {
      r0 = first_row(a, it);
      rows = ((((kt0 + tiles_k) * 16) - 1) >> a.group_shift) - r0 + 1;
    }
    const u32 bytes = Tile::X_BYTES + tiles_n * tiles_k * TILE_BYTES +
                      rows * row_bytes * ((S_BYTES ? 1 : 0) + (Z_BYTES ? 1 : 0));
    mbar_arrive_expect_tx(sm.full_bar(s), bytes);
    tma_load_2d(sm.x(s), tx, it * BK, m0, sm.full_bar(s));
    for (int tn = 0; tn < tiles_n; ++tn) {
      const u32* src = a.qweight + (static_cast<long long>(nt0 + tn) * a.k_tiles + kt0) * 32 * BITS;
      bulk_load(sm.w(s) + tn * TILES_K * TILE_BYTES, src, tiles_k * TILE_BYTES, sm.full_bar(s));
    }
    for (int r = 0; r < rows; ++r) {
      const long long at = static_cast<long long>(r0 + r) * a.n_pad + n0;
      if constexpr (S_BYTES != 0) {
        bulk_load(sm.scales(s) + r * BN * 2, a.scales + at, row_bytes, sm.full_bar(s));
      }
      if constexpr (Z_BYTES != 0) {
        bulk_load(sm.zeros(s) + r * BN * 2, a.zeros + at, row_bytes, sm.full_bar(s));
      }
    }
  }

  // Warpgroup v's 4 scales (or zero points) of layout-tile column `warp` for group row `row` of
  // stage area `area`: columns 8j + lane/4, j = 4v .. 4v+3, stored in lane order.
  HM_DEVICE static uint2 group_values(const unsigned char* area, int row, int warp, int lane, int v) {
    return *reinterpret_cast<const uint2*>(area + 2 * (row * BN + 64 * warp + 8 * (lane / 4) + 4 * v));
  }

  HM_DEVICE static ActT act_at(const uint2& v, int j) {
    const auto pair = from_u32<typename ActTraits<ActT>::T2>(j < 2 ? v.x : v.y);
    return j % 2 == 0 ? pair.x : pair.y;
  }

  // The two A fragments of K slice `kk` of the stage at `stage` (generic pointer): fragment i,
  // register r: rows lane/4 (+8 for r = 1, 3) are the warpgroup's pairs j = 2i (2i + 1), K low
  // (r = 0, 1) or high (r = 2, 3) half: pair q = 4i + 2 (r % 2) + r / 2.
  HM_DEVICE static void dequant(const unsigned char* stage, int row, bool valid, int kk, int warp,
                                int lane, int v, u32 (&frag)[2][4]) {
    HalfLaneWords<BITS> hw;
    uint2 s = make_uint2(0u, 0u), z = make_uint2(0u, 0u);
    if (valid) {
      const auto* words = reinterpret_cast<const u32*>(stage + Tile::X_BYTES) +
                          ((warp * TILES_K + kk) * 32 + lane) * BITS;
      hw.load(words, v);
      if constexpr (S_BYTES != 0) {
        s = group_values(stage + Tile::X_BYTES + W_BYTES, row, warp, lane, v);
      }
      if constexpr (Z_BYTES != 0) {
        z = group_values(stage + Tile::X_BYTES + W_BYTES + S_BYTES, row, warp, lane, v);
      }
    } else {
      hw.clear();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const GroupParams<ActT> gp = Dq::prepare(act_at(s, 2 * i + h), act_at(z, 2 * i + h));
        frag[i][h] = valid ? Dq::apply(hw.pair(4 * i + 2 * h), gp) : 0u;
        frag[i][h + 2] = valid ? Dq::apply(hw.pair(4 * i + 2 * h + 1), gp) : 0u;
      }
    }
  }

  HM_DEVICE static void consume(const TmaDescriptor* tx, const Args& a, const Smem& sm,
                                const unsigned char* ring, int iters, int m0, int n0,
                                float (&acc)[2][ACC]) {
    const int v = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const bool column_valid = n0 + 64 * warp < a.n_pad;
    constexpr int BUFS = Tile::FRAG_BUFS;
    u32 frag[BUFS][2][4] = {};
    // iters >= 1 (K >= 1): a loop that may run zero times makes ptxas join the initial zero
    // accumulators with the wgmma results by moves, and then serialize every wgmma (C7515)
    int it = 0;
    do {
      const int s = it % STAGES, kt0 = it * TILES_K;
      const int r0 = Fmt::IN_LOOP ? first_row(a, it) : 0;
      const unsigned char* stage = ring + s * STAGE_BYTES;
      const u64 dx = sw128_kmajor_desc(sm.x(s));
      mbar_wait(sm.full_bar(s), (it / STAGES) & 1);
#pragma unroll
      for (int kk = 0; kk < TILES_K; ++kk) {
        const int b = kk % BUFS, kt = kt0 + kk;
        const int row = Fmt::IN_LOOP ? ((kt * 16) >> a.group_shift) - r0 : 0;
        dequant(stage, row, column_valid && kt < a.k_tiles, kk, warp, lane, v, frag[b]);
        wgmma_fence();
        wgmma_m64n128k16_rs<ActT>(acc[0], frag[b][0], desc_advance(dx, 32 * kk), true);
        wgmma_m64n128k16_rs<ActT>(acc[1], frag[b][1], desc_advance(dx, 32 * kk), true);
        wgmma_commit();
        // the previous slice is done: its fragments may be overwritten, and after slice 0 the
        // previous stage is no longer read
        wgmma_wait<1>();
        fence_registers_u32(frag[(kk + BUFS - 1) % BUFS][0]);
        fence_registers_u32(frag[(kk + BUFS - 1) % BUFS][1]);
        if (kk == 0 && it > 0 && lane == 0) mbar_arrive(sm.empty_bar((it - 1) % STAGES));
        // Refill the stage of step it - 1 with step it - 1 + STAGES late in the step, when the
        // other warpgroup has most likely released it too (the wait blocks warpgroup 0).
        if (!Tile::PRODUCER && kk == TILES_K - 1 && it > 0 && it - 1 + STAGES < iters &&
            threadIdx.x == 0) {
          mbar_wait(sm.empty_bar((it - 1) % STAGES), ((it - 1) / STAGES) & 1);
          produce(tx, a, sm, it - 1 + STAGES, m0, n0);
        }
      }
    } while (++it < iters);
    wgmma_wait<0>();
    fence_registers(acc[0]);
    fence_registers(acc[1]);
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
  HM_DEVICE static void store(const Args& a, const float (&acc)[2][ACC], float* tile, int m0,
                              int n0) {
    const int v = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int nl = 64 * warp + 8 * (4 * v + 2 * i + h) + g;
#pragma unroll
        for (int c = 0; c < ACC / 4; ++c) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            tile[out_index(8 * c + 2 * t + e, nl)] = acc[i][4 * c + 2 * h + e];
          }
        }
      }
    }
    named_barrier<128 * Tile::CONSUMERS>(1);
    // a chunk is 8 columns of a row; a warp stores one row's 32 chunks
    constexpr int CHUNKS = BN / 8;
    const int ct = threadIdx.x, chunk = ct % CHUNKS, n = n0 + 8 * chunk;
    const Epilogue<OutT, Fmt::EPI_SCALE, Fmt::GLOBAL, BIAS> epi{a.channel, a.global, a.bias};
    const float global = Fmt::GLOBAL ? a.global[0] : 1.f;
    const bool vector = ((reinterpret_cast<unsigned long long>(a.out) |
                          static_cast<unsigned long long>(a.ldc) * sizeof(OutT)) & 15) == 0;
#pragma unroll 2
    for (int r = ct / CHUNKS; r < BM; r += 128 * Tile::CONSUMERS / CHUNKS) {
      const int m = m0 + r;
      if (m >= a.M || n >= a.N) continue;
      const float4* src = reinterpret_cast<const float4*>(tile + out_index(r, 8 * chunk));
      const float4 lo = src[0], hi = src[1];
      const float f[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      OutT* dst = a.out + static_cast<long long>(m) * a.ldc + n;
      if (vector && n + 8 <= a.N) {
        OutT o[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[e] = convert_out<OutT>(epi.apply(f[e], n + e, global));
#pragma unroll
        for (int q = 0; q < static_cast<int>(sizeof(OutT)) / 2; ++q) {
          reinterpret_cast<uint4*>(dst)[q] = reinterpret_cast<const uint4*>(o)[q];
        }
      } else {
        for (int e = 0; e < 8 && n + e < a.N; ++e) {
          dst[e] = convert_out<OutT>(epi.apply(f[e], n + e, global));
        }
      }
    }
  }

  HM_DEVICE static void run(const TmaDescriptor& tx, const Args& a) {
    extern __shared__ uint4 smem_u4[];
    const u32 raw = smem_addr(smem_u4), base = (raw + 1023u) & ~1023u;  // swizzle atom alignment
    unsigned char* ring = reinterpret_cast<unsigned char*>(smem_u4) + (base - raw);
    const u32 bars = base + Max<STAGES * STAGE_BYTES, OUT_BYTES>::value;
    const Smem sm{base, bars, bars + 8 * STAGES};
    const TileCoord tile = grouped_tile<Tile::GROUP_M>();
    const int n0 = tile.n * BN, m0 = tile.m * BM, iters = ceil_div(a.K, BK);
    init_ring_barriers<STAGES, Tile::CONSUMERS>(sm.full, sm.empty);
    if constexpr (Tile::PRODUCER) {
      if (threadIdx.x >= 128 * Tile::CONSUMERS) {
        // The consumers synchronise on their own named barrier: the producer may exit.
        setmaxnreg_dec<40>();
        if (threadIdx.x == 128 * Tile::CONSUMERS) {
          tma_prefetch_descriptor(&tx);
          for (int it = 0; it < iters; ++it) {
            mbar_wait(sm.empty_bar(it % STAGES), ((it / STAGES) & 1) ^ 1);
            produce(&tx, a, sm, it, m0, n0);
          }
        }
        return;
      }
      setmaxnreg_inc<232>();
    } else if (threadIdx.x == 0) {
      tma_prefetch_descriptor(&tx);
      for (int it = 0; it < min(STAGES, iters); ++it) produce(&tx, a, sm, it, m0, n0);
    }
    float acc[2][ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[0][i] = acc[1][i] = 0.f;
    consume(&tx, a, sm, ring, iters, m0, n0, acc);
    // both warpgroups' wgmmas are done before the ring turns into the output tile
    named_barrier<128 * Tile::CONSUMERS>(1);
    store(a, acc, reinterpret_cast<float*>(ring), m0, n0);
  }
};

}  // namespace humming

// The entry every rendered register-A-form translation unit instantiates (the same parameters).
#define HUMMING_WNA16_WGMMA_RS_ENTRY(NAME, FMT, TILE, ACT, OUT, BIAS) \
  HM_WNA16_WGMMA_ENTRY_OF(humming::Wna16WgmmaRsKernel, NAME, FMT, TILE, ACT, OUT, BIAS)
