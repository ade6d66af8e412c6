// Indexed MoE WnA16 GEMM for sm_90a at large M (humming_cuda.kernels.moe_wna16_wgmma): the dense
// register-A kernel (kernel/wna16_wgmma_rs.cuh: out^T = W x^T, the weights dequantized straight
// into wgmma's A fragments) run on routing alignment blocks, with vLLM's fused_moe contract of
// kernel/moe_wna16.cuh: out[id] = epilogue(x[id / top_k] @ W[e]^T) for every routed id of a
// block, e the block's expert.
//
// Why: the mma.sync MoE kernel (moe_wna16.cuh) is the dense mma.sync tile, which runs at a third
// to half of the wgmma kernels' speed once M is large; at large M every expert sees enough rows
// (block_m = 64, 96, 128 or 160 of them) for the wgmma tile.
//
// What differs from the dense kernel:
// - Persistent CTAs: one per SM, each walking the tiles (alignment block t / n_tiles, 256-column
//   tile t % n_tiles) for t = blockIdx.x, + gridDim.x, .. below the blocks num_tokens_post_padded
//   holds (blocks of expert -1 skipped). The ring runs on across a CTA's tiles: the producer
//   copies the next tile's stages while the consumers store the last one, so a tile starts on a
//   full ring. With one tile per CTA (the earlier form) consumer warps spent a quarter (w13) to
//   nearly half (w2, K = 768) of their time outside the K loop at M = 8192 (ncu,
//   notes/session19.md): block setup, ring fill and epilogue, none overlapped.
// - x rows are gathered (TMA needs contiguous rows): the producer warpgroup's 128 threads copy
//   the block's rows with 16-byte cp.async into the same 128B-swizzled layout TMA writes (16-byte
//   chunk q of row r at r * 128 + 16 * (q ^ r % 8) of a 1024-aligned tile). Padding rows and K
//   past the end are zero-filled by the same cp.async (source size 0: no read). Each producer
//   thread ends a step with cp.async.mbarrier.arrive.noinc on the stage's full barrier: its
//   arrival comes when its copies land, and the thread goes on to the next stage without
//   waiting. A full barrier takes the 128 producer threads' arrivals plus thread 0's expect-tx
//   arrival for the weights' bulk copies. cp.async writes through the generic proxy and wgmma
//   reads through the async proxy: the consumers fence the proxies after each full-barrier wait
//   (consume's GATHERED_X). (Waiting on cp.async groups two steps behind and arriving then left
//   the consumers waiting on full barriers for 30% of their stall samples; copying padding from
//   a zero page in global memory made every SM read one L2 line: notes/session13.md.)
// - weights, scales, zero points, channel / global scales and bias are expert e's slices of the
//   [E, ...] tensors (the moe_wna16 layout: the dense wna16 layout per expert, GLU columns
//   reordered so every 64-column layout tile holds 32 gate columns then their 32 up columns).
// - the epilogue stages the fp32 tile in two halves of rows in its own buffer beside the ring
//   (the whole tile and a 4-stage ring do not fit in shared memory) and scatters: row r of the
//   tile goes to out row ids[r] (padding rows nowhere), times the router weight; with a GLU,
//   output column 32 t + i of layout tile t is act(gate 64 t + i) * up(64 t + 32 + i).
// No split-K: a MoE layer has E times the weight tiles of a dense one.
#pragma once
#include "humming/kernel/moe_wna16.cuh"
#include "humming/kernel/wna16_wgmma_rs.cuh"

namespace humming {

// The K steps a tile runs (type), x's element type (X) and the shared memory their tables take
// (TABLE_BYTES, filled by fill_tables at the start): the bf16 register-A steps here;
// kernel/moe_wna16_wgmma_e4m3.cuh specializes it for its tile.
template <class Fmt, class Tile, typename ActT, typename OutT, bool BIAS>
struct MoeRsSteps {
  using type = Wna16WgmmaRsKernel<Fmt, Tile, ActT, OutT, BIAS>;
  using X = ActT;
  static constexpr bool E4M3 = false;
  static constexpr int TABLE_BYTES = 0;
};

template <class Fmt, class Tile, typename ActT, typename OutT, bool BIAS, typename Act>
struct MoeWna16WgmmaKernel {
  using Steps = MoeRsSteps<Fmt, Tile, ActT, OutT, BIAS>;
  using Dense = typename Steps::type;
  using XT = typename Steps::X;
  using DenseArgs = typename Dense::Args;
  static_assert(Tile::PRODUCER, "the producer warpgroup gathers x's rows");
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  static_assert(BM >= 16, "whole 8-row swizzle atoms per x tile");
  static constexpr int CONSUMER_THREADS = 128 * Tile::CONSUMERS;
  static constexpr int PRODUCER_THREADS = 128;
  // The producer keeps a tile's walk state, row table and expert slices in registers. ptxas 13
  // spilled in its step loop at the dense kernel's 40 and up to 72 with zero points (8-bit codes
  // worst) and with row-scaled MXFP4 (moe_wna16_a8: 1.09-1.18x slower at M = 512 / 8192 than at
  // 80, notes/session19.md); those take 80 (consumers 200), the rest 72 (consumers 208: W4A16
  // g128 3% faster at M = 8192 than at 80).
  // Two CTAs per SM (Tile::CTAS) of two consumer warpgroups (the e4m3 form's narrow blocks: one
  // row per producer thread) split the 80 registers per thread their launch reserves
  // (65536 / (2 x 384), in steps of 8): 40 for the producer (32 spilled) and 96 per consumer
  // thread. Two of one consumer warpgroup (the 128-column tile) split 128: the producer keeps
  // its 72 (80) and the consumers get 184 (176), enough for blocks of up to 96 rows.
  static constexpr bool WIDE_PRODUCER = Fmt::ZERO != 0 || Act::kRowScale;
  static constexpr bool PAIR_OF_ONE = Tile::CTAS == 2 && Tile::CONSUMERS == 1;
  static constexpr int PRODUCER_REGS =
      Tile::CTAS == 2 && !PAIR_OF_ONE ? 40 : WIDE_PRODUCER ? 80 : 72;
  static constexpr int CONSUMER_REGS = PAIR_OF_ONE    ? (WIDE_PRODUCER ? 176 : 184)
                                       : Tile::CTAS == 2 ? 96
                                       : WIDE_PRODUCER   ? 200
                                                         : 208;
  // 160-row tiles' 160 accumulators and fragments fit 208 registers, not 200 (ptxas serializes
  // the wgmmas; config.block_ms mirrors this)
  static_assert(!WIDE_PRODUCER || BM <= 128,
                "blocks wider than 128 rows need a 72-register producer");
  static_assert(!PAIR_OF_ONE || BM <= 96, "184 consumer registers hold blocks of up to 96 rows");
  // the registers the launch reserves per thread: 65536 / (CTAS x THREADS), in steps of 8
  static constexpr int RESERVED = 65536 / (Tile::CTAS * Tile::THREADS) / 8 * 8;
  static_assert(PRODUCER_THREADS * PRODUCER_REGS + CONSUMER_THREADS * CONSUMER_REGS <=
                    Tile::THREADS * RESERVED,
                "the registers the launch reserves per CTA");
  static constexpr int RING = STAGES * Dense::STAGE_BYTES;
  static constexpr int PARTS = 2;  // the epilogue stages the tile in halves of rows
  static constexpr int PART_BYTES = BM / PARTS * BN * 4;
  // Per consumer tile, double-buffered by tile parity: the routed id of each row, then its router
  // weight and activation scale (the epilogue's; read by the consumers at the tile's start).
  static constexpr int TABLE_BYTES = BM * 4 + 2 * BM * 4;
  // alignment slack, the ring, the staged half tile, full / empty barriers, the two row tables,
  // the steps' own tables (mirrors moe_wna16_wgmma.config.smem_bytes)
  static constexpr int SMEM_BYTES =
      1024 + RING + PART_BYTES + 16 * STAGES + 2 * TABLE_BYTES + Steps::TABLE_BYTES;

  struct Args {
    const XT* x;
    const u32* qweight;
    const ActT* scales;
    const ActT* zeros;
    const float* channel_scale;
    const float* global_scale;
    const float* bias;
    const float* topk_weights;
    const int* sorted_ids;
    const int* expert_ids;
    const int* num_post_padded;
    OutT* out;
    int N, n_out, K, lda, ldc, n_pad, k_tiles, groups, group_shift, top_k, numel, num_ids,
        num_experts;
    const float* a_scales;  // [M] per-token activation scales (Act::kRowScale only)
    const int* row_exp;     // [E, n_pad] (Steps::E4M3 only)
  };

  // The dense kernel's arguments on expert e's slice of every weight tensor.
  HM_DEVICE static DenseArgs expert_args(const Args& a, int e) {
    const long long words = static_cast<long long>(a.n_pad / 64) * a.k_tiles * 32 * Fmt::BITS;
    const long long group_vals = static_cast<long long>(a.groups) * a.n_pad;
    const int channels = Fmt::EPI_SCALE == kEpiScaleTensor ? 1 : a.n_pad;
    DenseArgs d{};
    d.qweight = a.qweight + e * words;
    d.scales = a.scales == nullptr ? nullptr : a.scales + e * group_vals;
    d.zeros = a.zeros == nullptr ? nullptr : a.zeros + e * group_vals;
    d.channel = a.channel_scale == nullptr ? nullptr : a.channel_scale + e * channels;
    d.global = a.global_scale == nullptr ? nullptr : a.global_scale + e;
    d.bias = a.bias == nullptr ? nullptr : a.bias + static_cast<long long>(e) * a.N;
    d.N = a.N;
    d.K = a.K;
    d.n_pad = a.n_pad;
    d.k_tiles = a.k_tiles;
    d.group_shift = a.group_shift;
    return d;
  }

  // The tiles of this launch: n_tiles column tiles per alignment block below
  // num_tokens_post_padded. Every thread reads the same values, so the roles agree on the walk.
  struct Walk {
    int n_tiles, total, tiles;  // total: sorted ids in use
    HM_DEVICE explicit Walk(const Args& a)
        : n_tiles(ceil_div(a.N, BN)),
          total(min(a.num_post_padded[0], a.num_ids)),
          tiles(ceil_div(total, BM) * n_tiles) {}
    // Tile t's expert, or -1 when its block has no expert here (expert parallelism).
    HM_DEVICE int expert(const Args& a, int t) const {
      const int e = a.expert_ids[t / n_tiles];
      return e < 0 || e >= a.num_experts ? -1 : e;
    }
    // The routed id of row r of tile t's block, -1 for padding and dropped ids.
    HM_DEVICE int id(const Args& a, int t, int r) const {
      const int at = t / n_tiles * BM + r;
      const int id = at < total ? a.sorted_ids[at] : -1;
      return id >= 0 && id < a.numel ? id : -1;
    }
  };

  // Producer thread pt copies 16-byte chunk Q = pt % CHUNKS of rows pt / CHUNKS + ROW_STEP * i,
  // the same rows every step of a tile: their x rows are read once per tile, and as ROW_STEP is a
  // multiple of 8 the rows share one swizzle phase, so chunk i lands ROW_STEP * 128 * i bytes
  // after chunk 0. (Indexing a row table per chunk and step made the gather 2.5x the consumers'
  // instructions per step; the producer issued too slowly to keep the ring filled.)
  static constexpr int CHUNKS = BK * static_cast<int>(sizeof(XT)) / 16;  // 16-byte chunks per x row of a step
  static constexpr int CHUNK_VALUES = 16 / static_cast<int>(sizeof(XT));
  static constexpr int ROW_STEP = PRODUCER_THREADS / CHUNKS;
  static constexpr int ROWS_PER_THREAD = BM / ROW_STEP;
  static_assert(PRODUCER_THREADS % CHUNKS == 0 && ROW_STEP % 8 == 0 && BM % ROW_STEP == 0,
                "each producer thread copies one chunk of whole rows in one swizzle phase");

  // Producer thread pt's share of step `it`'s x tile (columns it * BK ..) into the stage's tile at
  // `tile`: rows[i] is the x row of its i-th row, bit i of `real` says it is not padding. Padding
  // rows and chunks past K are zero-filled.
  HM_DEVICE static void gather_x(const Args& a, const int (&rows)[ROWS_PER_THREAD], u32 real,
                                 unsigned char* tile, int it, int pt) {
    const int q = pt % CHUNKS, r0 = pt / CHUNKS, k = it * BK + q * CHUNK_VALUES;
    unsigned char* dst = tile + r0 * 128 + 16 * (q ^ (r0 % 8));
    const bool in_k = k < a.K;  // K fills whole chunks: a chunk is whole or past the end
    const char* base = reinterpret_cast<const char*>(a.x + (in_k ? k : 0));
    // The row stride, 0 past K (nothing is read there): a factor that depends on the step keeps
    // the rows' 64-bit offsets from being hoisted out of the step loop as loop invariants, which
    // took 8 more register pairs and made the producer spill.
    const int row_bytes = in_k ? a.lda * static_cast<int>(sizeof(XT)) : 0;
#pragma unroll
    for (int i = 0; i < ROWS_PER_THREAD; ++i) {
      cp_async16_zfill(dst + ROW_STEP * 128 * i, base + static_cast<long long>(rows[i]) * row_bytes,
                       in_k && ((real >> i) & 1));
    }
  }

  // The producer warpgroup: for every tile of the CTA, each thread gathers its share of x per
  // step and arrives on the stage's full barrier when its copies land; thread 0 also issues the
  // weights' bulk copies (Dense::produce without x). Ring step q counts on across tiles.
  HM_DEVICE static void produce_all(const Args& a, const typename Dense::Smem& sm,
                                    unsigned char* ring) {
    const Walk walk(a);
    const int pt = threadIdx.x - CONSUMER_THREADS, iters = ceil_div(a.K, BK);
    int q = 0;
    for (int t = blockIdx.x; t < walk.tiles; t += gridDim.x) {
      const int e = walk.expert(a, t);
      if (e < 0) continue;
      const DenseArgs d = expert_args(a, e);
      const int n0 = t % walk.n_tiles * BN;
      int rows[ROWS_PER_THREAD];
      u32 real = 0;
#pragma unroll
      for (int i = 0; i < ROWS_PER_THREAD; ++i) {
        const int id = walk.id(a, t, pt / CHUNKS + ROW_STEP * i);
        rows[i] = id < 0 ? 0 : id / a.top_k;
        real |= static_cast<u32>(id >= 0) << i;
      }
      for (int j = 0; j < iters; ++j, ++q) {
        const int s = q % STAGES;
        mbar_wait(sm.empty_bar(s), ((q / STAGES) & 1) ^ 1);
        if (pt == 0) Dense::template produce<false>(nullptr, d, sm, s, j, 0, n0);
        gather_x(a, rows, real, ring + s * Dense::STAGE_BYTES, j, pt);
        cp_async_mbar_arrive_noinc(sm.full_bar(s));
      }
    }
    // the copies land before the thread leaves
    cp_async_commit();
    cp_async_wait<0>();
  }

  // Eight consecutive output columns c0 .. c0 + 7 of one row (those below n_out).
  HM_DEVICE static void put8(OutT* row, int c0, int n_out, bool vector, const float (&f)[8]) {
    if (vector && c0 + 8 <= n_out) {
      OutT o[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] = convert_out<OutT>(f[e]);
#pragma unroll
      for (int q = 0; q < static_cast<int>(sizeof(OutT)) / 2; ++q) {
        reinterpret_cast<uint4*>(row + c0)[q] = reinterpret_cast<const uint4*>(o)[q];
      }
    } else {
      for (int e = 0; e < 8 && c0 + e < n_out; ++e) row[c0 + e] = convert_out<OutT>(f[e]);
    }
  }

  // Eight consecutive fp32 values of staged row r from column n (a multiple of 8: one swizzled
  // chunk of out_index, two 16-byte reads).
  HM_DEVICE static void chunk8(const float* tile, int r, int n, float (&f)[8]) {
    const float4* src = reinterpret_cast<const float4*>(tile + Dense::out_index(r, n));
    const float4 lo = src[0], hi = src[1];
    f[0] = lo.x, f[1] = lo.y, f[2] = lo.z, f[3] = lo.w, f[4] = hi.x, f[5] = hi.y, f[6] = hi.z,
    f[7] = hi.w;
  }

  // Staged rows r0 .. r0 + BM / PARTS - 1 of the tile (at rows 0 .. of `tile`) to their routed
  // rows: 8 output columns per thread and pass; with a GLU a tile of BN columns yields BN / 2
  // output columns. A thread reads whole swizzled chunks (8 gate and 8 up values of a GLU: scalar
  // reads of them conflicted 4 ways).
  HM_DEVICE static void store(const Args& a, const DenseArgs& d, const float* tile, const int* ids,
                              const float* factors, int r0, int n0) {
    constexpr int CHUNKS = (Act::kGlu ? BN / 2 : BN) / 8;  // 8-column chunks of an output row
    const int ct = threadIdx.x, q = ct % CHUNKS;
    const Epilogue<OutT, Fmt::EPI_SCALE, Fmt::GLOBAL, BIAS> epi{d.channel, d.global, d.bias};
    const float global = Fmt::GLOBAL ? d.global[0] : 1.f;
    const bool vector = ((reinterpret_cast<unsigned long long>(a.out) |
                          static_cast<unsigned long long>(a.ldc) * sizeof(OutT)) & 15) == 0;
    for (int r = ct / CHUNKS; r < BM / PARTS; r += CONSUMER_THREADS / CHUNKS) {
      const int id = ids[r0 + r];
      if (id < 0) continue;
      const float w = factors[r0 + r], s = factors[BM + r0 + r];
      OutT* row = a.out + static_cast<long long>(id) * a.ldc;
      float f[8];
      int c0;
      if constexpr (Act::kGlu) {
        const int t = q / 4, i0 = (q % 4) * 8;  // the tile's layout tile t, its columns i0 ..
        const int gl = 64 * t + i0;  // first gate column in the tile; its up columns are 32 on
        float g[8], u[8];
        chunk8(tile, r, gl, g);
        chunk8(tile, r, gl + 32, u);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          f[e] = Act::combine(epi.apply(moe_row_scaled<Act>(g[e], s), n0 + gl + e, global),
                              epi.apply(moe_row_scaled<Act>(u[e], s), n0 + gl + 32 + e, global)) *
                 w;
        }
        c0 = n0 / 2 + 32 * t + i0;
      } else {
        float v[8];
        chunk8(tile, r, 8 * q, v);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const int n = n0 + 8 * q + e;
          f[e] = n < a.N ? Act::apply(epi.apply(moe_row_scaled<Act>(v[e], s), n, global)) * w : 0.f;
        }
        c0 = n0 + 8 * q;
      }
      if (c0 < a.n_out) put8(row, c0, a.n_out, vector, f);
    }
  }

  // One staged part: wait until every consumer thread is done reading the staging buffer (the
  // previous part's or tile's store), stage rows of part P, store them.
  template <int P>
  HM_DEVICE static void store_part(const Args& a, const DenseArgs& d,
                                   const float (&acc)[2][Dense::ACC], float* tile, const int* ids,
                                   const float* factors, int n0) {
    named_barrier<CONSUMER_THREADS>(1);
    Dense::template stage<P, PARTS>(acc, tile);
    store(a, d, tile, ids, factors, P * BM / PARTS, n0);
  }

  // The consumer warpgroups: every tile of the CTA through the ring (its step count q carrying
  // on), then its epilogue while the producer fills the ring with the next tile's steps.
  // The epilogue's row table: consumer thread r < BM holds row r's routed id (read one tile
  // ahead), its router weight and activation scale (read at the tile's start, written to the
  // table after the K loop), so no global load's latency stalls the consumers between tiles.
  // (Loaded per row inside the store, the router weight's global load was the w2 epilogue's
  // largest stall: ncu at M = 8192, notes/session19.md.)
  HM_DEVICE static void consume_all(const Args& a, const typename Dense::Smem& sm,
                                    const unsigned char* ring, float* tile,
                                    unsigned char* tables, u32 steps_tables) {
    static_assert(BM <= CONSUMER_THREADS, "one table row per consumer thread at most");
    const Walk walk(a);
    const int r = threadIdx.x, iters = ceil_div(a.K, BK);
    int q = 0, parity = 0;
    int next_t = blockIdx.x, next_id = r < BM && next_t < walk.tiles ? walk.id(a, next_t, r) : -1;
    for (int t = blockIdx.x; t < walk.tiles; t += gridDim.x) {
      const int e = walk.expert(a, t);
      if (e < 0) continue;
      const DenseArgs d = expert_args(a, e);
      const int n0 = t % walk.n_tiles * BN;
      const int id = next_t == t ? next_id : r < BM ? walk.id(a, t, r) : -1;
      next_t = t + gridDim.x;
      next_id = r < BM && next_t < walk.tiles ? walk.id(a, next_t, r) : -1;
      const float w = id < 0 || a.topk_weights == nullptr ? 1.f : a.topk_weights[id];
      const float s = id < 0 ? 1.f : moe_row_scale<Act>(a, id / a.top_k);  // once per tile
      // the table of tile t - 2 (same parity) was last read before tile t - 1's staging barrier
      int* ids = reinterpret_cast<int*>(tables + parity * TABLE_BYTES);
      float* factors = reinterpret_cast<float*>(ids + BM);
      if (r < BM) ids[r] = id;
      float acc[2][Dense::ACC];
#pragma unroll
      for (int i = 0; i < Dense::ACC; ++i) acc[0][i] = acc[1][i] = 0.f;
      if constexpr (Steps::E4M3) {
        const auto rows = Dense::rows(a.row_exp + static_cast<long long>(e) * a.n_pad, n0,
                                      a.n_pad, steps_tables);
        Dense::consume(d, sm, ring, iters, rows, acc, q);
        Dense::rescale(acc, rows);
      } else {
        Dense::template consume<true, true>(nullptr, d, sm, ring, 0, iters, 0, n0, acc, q);
      }
      q += iters;
      if (r < BM) factors[r] = w, factors[BM + r] = s;
      store_part<0>(a, d, acc, tile, ids, factors, n0);
      store_part<1>(a, d, acc, tile, ids, factors, n0);
      parity ^= 1;
    }
  }

  HM_DEVICE static void run(const Args& a) {
    static_assert(PARTS == 2, "consume_all stores parts 0 and 1");
    extern __shared__ uint4 smem_u4[];
    const u32 raw = smem_addr(smem_u4), base = (raw + 1023u) & ~1023u;  // swizzle atom alignment
    unsigned char* ring = reinterpret_cast<unsigned char*>(smem_u4) + (base - raw);
    const typename Dense::Smem sm{base, base + RING + PART_BYTES,
                                  base + RING + PART_BYTES + 8 * STAGES};
    float* tile = reinterpret_cast<float*>(ring + RING);
    unsigned char* tables = ring + RING + PART_BYTES + 16 * STAGES;
    const u32 steps_tables = base + RING + PART_BYTES + 16 * STAGES + 2 * TABLE_BYTES;
    if constexpr (Steps::TABLE_BYTES > 0) {
      Steps::fill_tables(reinterpret_cast<u32*>(tables + 2 * TABLE_BYTES), threadIdx.x,
                         Tile::THREADS);
    }
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(sm.full_bar(s), PRODUCER_THREADS + 1);  // gathers, plus the weights' expect-tx
        mbar_init(sm.empty_bar(s), Tile::CONSUMERS * Dense::RELEASES);  // see Dense
      }
      mbar_init_fence();
    }
    __syncthreads();  // the barriers' (and the steps' tables') initialisation
    // Each role reads its walk after setmaxnreg: values live across it were spilled.
    if (threadIdx.x >= CONSUMER_THREADS) {
      setmaxnreg_dec<PRODUCER_REGS>();
      produce_all(a, sm, ring);
      return;
    }
    setmaxnreg_inc<CONSUMER_REGS>();
    consume_all(a, sm, ring, tile, tables, steps_tables);
  }
};

}  // namespace humming

// The C entry point of a rendered MoE WnA16-wgmma translation unit (parameters in the order of
// humming_cuda.kernels.moe_wna16_wgmma.bind.signature: HUMMING_MOE_WNA16_ENTRY's, plus the group
// size's log2 after `groups`).
#define HUMMING_MOE_WNA16_WGMMA_ENTRY(NAME, FMT, TILE, ACT, OUT, BIAS, POLICY)                     \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::CTAS) NAME(                    \
      const ACT* x, const humming::u32* qweight, const ACT* scales, const ACT* zeros,              \
      const float* channel_scale, const float* global_scale, const float* bias,                    \
      const float* topk_weights, const int* sorted_ids, const int* expert_ids,                     \
      const int* num_post_padded, OUT* out, int N, int n_out, int K, int lda, int ldc, int n_pad,  \
      int k_tiles, int groups, int group_shift, int top_k, int numel, int num_ids,                 \
      int num_experts, const float* a_scales) {                                                    \
    using Kern = humming::MoeWna16WgmmaKernel<FMT, TILE, ACT, OUT, BIAS, POLICY>;                   \
    Kern::run(typename Kern::Args{x, qweight, scales, zeros, channel_scale, global_scale, bias,    \
                                  topk_weights, sorted_ids, expert_ids, num_post_padded, out, N,   \
                                  n_out, K, lda, ldc, n_pad, k_tiles, groups, group_shift, top_k,  \
                                  numel, num_ids, num_experts, a_scales});                         \
  }
