// W4A8-fp8 GEMM for sm_90a above decode size: e4m3 activations x 4-bit weights (int4, E2M1) with
// wgmma, TMA and a warp-specialized mbarrier pipeline (humming_cuda.kernels.w4a8_wgmma).
//
// out[M, N] = epilogue(sum over 128-deep K blocks of (A_blk @ W_blk^T) * column factor), where A
// [M, K] holds e4m3 codes and W the w8a8 family's W4A8 layout (humming_cuda.kernels.w8a8.nibbles:
// per row and 128-deep K slab 64 bytes, word 4t + ks = K elements 32ks + 4t + 0..3 and
// 32ks + 16 + 4t + 0..3), so the mma.sync kernels at decode size and this one share one copy.
//
// CTA: 3 warpgroups over a tile of BM tokens x 128 weight rows (BM = 128; in the out^T form also
// 32 / 64 at small M and 160 / 176 at large M). Warpgroup 0 is the producer: one thread streams A
// (BM x 128 bytes, 128B swizzle) and the packed W slab (128 rows x 64 bytes, no swizzle) of every stage through a
// `STAGES`-deep mbarrier ring. In the out^T form (Tile::REG_A, the configs' default; consume_t
// below) each consumer thread expands its two weight rows of the slab straight into wgmma's
// register A fragments, the A tile being wgmma's B operand (m64nBMk32). Otherwise warpgroups 1
// and 2 (rows 0-63 and 64-127) each expand the slab through the 16-entry code table
// (humming/datatype/nibble8.cuh; every int4 and E2M1 value is exact in e4m3) into their own
// 128B-swizzled K-major e4m3 tile, alternating two
// buffers, synchronise on their own named barrier, then run 4 wgmma m64n128k32 and promote the
// block's fp32 sum into the totals times its group's weight scale per column, as the W4A8
// mma.sync kernels do. Per-token / static activation scales and bias are applied in the epilogue.
// Tails: TMA zero-fills A rows past M and K columns past K (the layout pads K with the code of 0);
// columns past N are computed from zero rows of W and never stored.
//
// Split-K (as w8a8_wgmma's): gridDim.z CTAs share a tile, each over a contiguous range of
// iters_per_split whole 128-deep K blocks (so a block's group scale is still one per block); the
// last split to arrive sums the fp32 partials in split order and stores (reduce_wgmma_splits).
// Why: the W4A8 layers' small grids (4096x14336: 32 tiles for 132 SMs) left most SMs idle.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/nibble8.cuh"
#include "humming/epilogue/epilogue.cuh"
#include "humming/kernel/wgmma_cta.cuh"
#include "humming/memory/tile_order.cuh"
#include "humming/mma/wgmma.cuh"
#include "humming/mma/wgmma_e4m3_rs.cuh"
#include "humming/ptx/sm90_tma.cuh"

namespace humming {

// W_GROUP: K depth of a weight scale group (a multiple of 128); T0..T3: the code -> e4m3 table
// (kernels.w8a8.nibbles).
template <int W_GROUP_, u32 T0, u32 T1, u32 T2, u32 T3>
struct WgmmaW4a8Format {
  static constexpr int W_GROUP = W_GROUP_;
  using Lut = NibbleLut<T0, T1, T2, T3>;
  static_assert(W_GROUP > 0 && W_GROUP % 128 == 0, "weight groups are whole 128-deep K blocks");
};

// GROUP_M: M tiles walked down before moving one N tile right (humming/memory/tile_order.cuh).
// REG_A: the out^T form (W4a8WgmmaKernel::consume_t): the weights are wgmma's A operand, expanded
// in registers, and the activations its B operand, so no expanded tiles in shared memory.
// BM: the tile's tokens, wgmma's N in the out^T form: 32 or 64 where M is that small (a 128-token
// tile would multiply mostly TMA-filled zero rows, 4x the tensor work at M = 32); 128 otherwise,
// or 160 / 176 at large M: each expanded fragment, stage and barrier then carries 1.25-1.4x the
// tensor work, and a stage's A tile 1.25-1.4x the tokens per weight byte. 192 does not fit: 2 x 96
// accumulators and totals with two fragment sets exceed the consumers' 232 registers.
// CTAS: CTAs per SM the registers are split for (__launch_bounds__, setmaxnreg); 2 only with
// 32-token tiles, whose consumers then fit 96 registers.
// STAGED (out^T form): 2-byte outputs leave each consumer warpgroup through shared memory, one
// bulk copy per token row of its 64 weight rows (store_t_staged), where the output's alignment
// allows; the register stores write 2 bytes into each of 4 token rows per warp instruction.
// TURNS (out^T form): the two consumer warpgroups issue their K blocks' wgmmas in turns
// (await_issue_turn, kernel/wgmma_cta.cuh), so one promotes while the other's wgmmas run.
// CLUSTER: split-K's splits of a tile sum within a thread-block cluster (launched with cluster
// dims (1, 1, splits); reduce_wgmma_cluster, kernel/wgmma_cta.cuh), the partials staged in the
// ring; the out^T form, stored from registers, each CTA a share of the tile's tokens.
// SCATTER: split-K's splits of a tile sum all at once through the workspace where the launch's
// grid is resident (reduce_wgmma_scatter, kernel/wgmma_cta.cuh), each a share of the tile's
// tokens, else the last split alone; the out^T form, stored from registers. A template flag as
// in WgmmaFp8Tile (w8a8_wgmma.cuh says why).
template <int STAGES_, int GROUP_M_, bool REG_A_ = false, int BM_ = 128, int CTAS_ = 1,
          bool STAGED_ = false, bool TURNS_ = false, bool CLUSTER_ = false, bool SCATTER_ = false>
struct WgmmaW4a8Tile {
  static constexpr int BM = BM_, BN = 128, BK = 128, STAGES = STAGES_, GROUP_M = GROUP_M_;
  static constexpr bool REG_A = REG_A_, STAGED = STAGED_, TURNS = TURNS_, CLUSTER = CLUSTER_;
  static constexpr bool SCATTER = SCATTER_;
  static_assert(!CLUSTER || (REG_A && !STAGED), "cluster split-K: the out^T form's registers");
  static_assert(!SCATTER || (REG_A && !STAGED && !CLUSTER), "scatter: the out^T form's registers");
  static_assert(!STAGED || REG_A, "staged rows: the out^T form's");
  static_assert(!TURNS || REG_A, "issue turns: the out^T form's");
  static constexpr int CTAS = CTAS_;
  static_assert(BM == 128 || (REG_A && (BM == 32 || BM == 64 || BM == 160 || BM == 176)),
                "narrow and wide tiles: the out^T form");
  static_assert(CTAS == 1 || (CTAS == 2 && BM == 32), "two CTAs per SM: 32-token tiles");
  // the registers each producer / consumer thread keeps after setmaxnreg (multiples of 8, within
  // the launch bound's pool of 65536 / CTAS per CTA)
  static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = CTAS == 2 ? 96 : 232;
  static_assert((PRODUCER_REGS + 2 * CONSUMER_REGS) * 128 <= 65536 / CTAS, "the register pool");
  static constexpr int CONSUMERS = 2;  // warpgroups of 64 rows each
  // Arrivals that free a stage, per consumer warpgroup: its 4 warps' lane 0 in the shared-memory
  // form (a named barrier orders the lanes' slab reads first), every thread in the out^T form.
  static constexpr int RELEASES = REG_A ? 128 : 4;
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  static constexpr int A_BYTES = BM * BK, P_BYTES = BN * BK / 2, STAGE_BYTES = A_BYTES + P_BYTES;
  static constexpr int X_BYTES = BN * BK, X_BUFFERS = REG_A ? 0 : 2;  // expanded W per consumer
  // out^T form: per stage, its K block's group scale of each of the tile's BN weight rows
  static constexpr int SCALE_BYTES = REG_A ? 4 * BN : 0;
  // per consumer warpgroup: its 64 weight rows of each of the tile's BM tokens
  using Rows = StagedRows<BM, 64>;
  static constexpr int STAGED_BYTES = STAGED ? CONSUMERS * Rows::BYTES : 0;
  // 1024 bytes of slack to align everything to the 128B-swizzle atom, the ring, the expanded
  // tiles, the stages' scales, the staged rows, then the full / empty barriers, then split-K's
  // "last split" flag (mirrors W4a8WgmmaConfig.smem_bytes)
  static constexpr int SMEM_BYTES = 1024 + STAGES * (STAGE_BYTES + SCALE_BYTES) +
                                    CONSUMERS * X_BUFFERS * X_BYTES + STAGED_BYTES +
                                    16 * STAGES + 4;
  static_assert(STAGE_BYTES % 1024 == 0, "every stage's A tile starts on a swizzle atom");
  static_assert(!CLUSTER || 4 * BM * BN <= STAGES * STAGE_BYTES, "the ring holds a partial tile");
};

template <class Fmt, class Tile, typename OutT, bool BIAS>
struct W4a8WgmmaKernel {
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  // fp32 accumulators per thread: a warpgroup's 64 x BN (shared form: its 64 tokens x 128 weight
  // rows) or 64 weight rows x BM tokens (out^T form), over 128 threads
  static constexpr int ACC = (Tile::REG_A ? BM : BN) / 2;

  struct Args {
    const float* a_scales;  // [1, M] per token (or the static scale broadcast)
    const float* w_scales;  // [ceil(K / W_GROUP), N]
    const float* bias;      // [N]
    OutT* out;              // [M, N], row stride ldc
    int M, N, K, ldc;
    float* workspace;  // split-K partials: [tiles, gridDim.z, BM * BN] (unused when unsplit)
    int* counters;     // split-K arrivals per tile, zero between launches
    int iters_per_split;
    int resident;  // CTAs the device holds at once: split-K sums all at once when the grid fits
  };

  struct Smem {
    u32 data, x, scales, full, empty;  // ring (A, then the packed slab), expanded tiles, barriers
    HM_DEVICE u32 a(int s) const { return data + s * Tile::STAGE_BYTES; }
    HM_DEVICE u32 scale(int s, int row) const { return scales + s * Tile::SCALE_BYTES + 4 * row; }
    HM_DEVICE u32 b(int s) const { return a(s) + Tile::A_BYTES; }  // the packed 4-bit slab
    HM_DEVICE u32 expanded(int wg, int it) const {
      return x + (wg * Tile::X_BUFFERS + it % Tile::X_BUFFERS) * Tile::X_BYTES;
    }
    HM_DEVICE u32 full_bar(int s) const { return full + 8 * s; }
    HM_DEVICE u32 empty_bar(int s) const { return empty + 8 * s; }
  };

  // The warpgroup's 128 threads expand the stage's 128 x 64-byte slab into `dst`: thread (warp w,
  // lane g*4 + t) takes chunk t (words 4t..4t+3) of rows 32i + 8w + g, so a warp reads 512
  // contiguous bytes and its stores hit 32 distinct banks (chunk c of row n lands at chunk c ^ n%8).
  HM_DEVICE static void expand(u32 src, u32 dst) {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32, chunk = lane % 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int n = 32 * i + 8 * warp + lane / 4;
      u32 w[4];
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                   : "r"(src + n * 64 + chunk * 16));
      const u32 row = dst + n * 128 + 4 * chunk;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        u32 b0, b1;
        Fmt::Lut::expand(w[ks], b0, b1);
        st_shared_u32(row + (((2 * ks) ^ (n & 7)) << 4), b0);
        st_shared_u32(row + (((2 * ks + 1) ^ (n & 7)) << 4), b1);
      }
    }
    fence_proxy_async_smem();
  }

  // The weight scale of group `g` for this thread's accumulator column c of block j (column
  // 8j + 2(lane%4) + c of the tile); 0 past N. Read at the promotion (L1 hits after the first
  // warpgroup): holding all 32 in registers across the wgmma spilled.
  HM_DEVICE static float column_scale(const Args& a, int g, int n0, int j, int c) {
    const int n = n0 + 8 * j + 2 * (threadIdx.x % 4) + c;
    return n < a.N ? __ldg(a.w_scales + static_cast<long long>(g) * a.N + n) : 0.f;
  }

  // acc * the group's weight scale per column into total (acc[4j + 2h + c]: column
  // 8j + 2(lane%4) + c, rows +0 / +8 (h)).
  HM_DEVICE static void promote(const Args& a, const float (&acc)[ACC], int g, int n0,
                                float (&total)[ACC]) {
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float ws = column_scale(a, g, n0, j, c);
        total[4 * j + c] += acc[4 * j + c] * ws;
        total[4 * j + 2 + c] += acc[4 * j + 2 + c] * ws;
      }
    }
  }

  // Step it's wgmma runs while the warpgroup expands step it + 1's slab into the other buffer, so
  // the tensor cores no longer wait for the expansion (it used to run between wgmma_wait and the
  // next wgmma). Buffer it % 2 is written by the expansion of step it and read by its wgmma; the
  // expansion of step it + 2 rewrites it only after this thread's wgmma_wait of step it and the
  // named barrier that follows in every thread of the warpgroup.
  HM_DEVICE static void consume(const Args& a, const Smem& sm, int kb0, int iters, int n0, int wg,
                                float (&total)[ACC]) {
    const int lane = threadIdx.x % 32;
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    if (iters > 0) {
      mbar_wait(sm.full_bar(0), 0);
      expand(sm.b(0), sm.expanded(wg, 0));
      named_barrier<128>(1 + wg);
    }
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      static_assert(BK == 128 && ACC == 64, "wgmma_block_e4m3's block");
      wgmma_block_e4m3(acc, sw128_kmajor_desc(sm.a(s) + wg * 64 * BK),
                       sw128_kmajor_desc(sm.expanded(wg, it)));
      if (it + 1 < iters) {
        const int next = (it + 1) % STAGES;
        mbar_wait(sm.full_bar(next), ((it + 1) / STAGES) & 1);
        expand(sm.b(next), sm.expanded(wg, it + 1));
      }
      wgmma_wait<0>();
      fence_registers(acc);
      if (lane == 0) mbar_arrive(sm.empty_bar(s));  // this warp no longer reads the stage
      promote(a, acc, (kb0 + it) * BK / Fmt::W_GROUP, n0, total);
      named_barrier<128>(1 + wg);  // step it + 1's tile is complete, step it's reads are done
    }
  }

  // ---- the out^T form (Tile::REG_A) ----------------------------------------------------------
  // Thread (warp w, lane 4g + t) of consumer warpgroup wg holds weight rows 64wg + 16w + g and
  // that + 8 of the tile. Chunk t (words 4t..4t+3) of a row's 64-byte slab is its A fragment for
  // all four k32 steps: word ks holds K 32ks + 4t..+3 and 32ks + 16 + 4t..+3, which the code
  // table expands to e4m3 as b0 / b1 (wgmma_m64n128k32_e4m3_rs's register layout).
  HM_DEVICE static int tile_row() {
    const int t = threadIdx.x % 128;
    return 16 * (t / 32) + (t % 32) / 4;
  }

  HM_DEVICE static void load_slab_words(u32 slab, int wg, u32 (&raw)[2][4]) {
    const int row = 64 * wg + tile_row(), chunk = threadIdx.x % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(raw[h][0]), "=r"(raw[h][1]), "=r"(raw[h][2]), "=r"(raw[h][3])
                   : "r"(slab + (row + 8 * h) * 64 + chunk * 16));
    }
  }

  using Held = typename Fmt::Lut::Words;  // the code table in registers (NibbleLut::hold)
  HM_DEVICE static void expand_fragments(const u32 (&raw)[2][4], u32 (&frag)[4][4],
                                         const Held& lut) {
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      Fmt::Lut::expand(raw[0][ks], frag[ks][0], frag[ks][2], lut);
      Fmt::Lut::expand(raw[1][ks], frag[ks][1], frag[ks][3], lut);
    }
  }

  // Producer warp 1 (out^T form): each K block's group scale of the tile's BN weight rows (0 past
  // N) into its stage once the consumers have released it; each lane then arrives on the stage's
  // full barrier with the TMA thread. The accumulator rows are weight rows in this form, so a
  // consumer thread reads two scales per block from the stage. Why: loaded by the consumers from
  // global memory between their wgmmas, such per-block factors cost w8a8_wgmma's FP8 block-128 a
  // fifth of its time (kernel/w8a8_wgmma.cuh). The loads are issued before the wait for the stage.
  HM_DEVICE static void produce_row_scales(const Args& a, const Smem& sm, int kb0, int iters,
                                           int n0) {
    const int lane = threadIdx.x % 32;
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      const long long g = (kb0 + it) * BK / Fmt::W_GROUP;
      float w[BN / 32];
#pragma unroll
      for (int i = 0; i < BN / 32; ++i) {
        const int n = n0 + 32 * i + lane;
        w[i] = n < a.N ? __ldg(a.w_scales + g * a.N + n) : 0.f;
      }
      mbar_wait(sm.empty_bar(s), ((it / STAGES) & 1) ^ 1);
#pragma unroll
      for (int i = 0; i < BN / 32; ++i) {
        st_shared_u32(sm.scale(s, 32 * i + lane), __float_as_uint(w[i]));
      }
      mbar_arrive(sm.full_bar(s));  // releases this lane's stores to the consumers' wait
    }
  }

  HM_DEVICE static void promote_rows(const float (&acc)[ACC], const float (&ws)[2],
                                     float (&total)[ACC]) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] += acc[i] * ws[(i / 2) % 2];
  }

  // Block it: its four wgmma read the fragments `cur` from registers and the stage's activation
  // tile (all 128 tokens, K-major, 128B swizzle) from shared memory. While they run, block it + 1's
  // slab words are read and expanded into `nxt`, so only the promotion is left between one
  // block's wgmma and the next. `cur` stays live (fence_registers_u32) until the wgmma_wait: the
  // hardware reads register operands while the wgmma runs. ORDER: the issue turn (0: none).
  // `s` / `phase`: block it's stage and its full barrier's phase, stepped to block it + 1's here;
  // `db0`: stage 0's activation descriptor (stage s's is STAGE_BYTES * s further). Why stepped:
  // w8a8_wgmma's index arithmetic (q % STAGES, q / STAGES, a descriptor per stage) sat before its
  // first wgmma; stepping it there was 1.01-1.13x (H200, session 25).
  template <int ORDER>
  HM_DEVICE static void step_t(const Smem& sm, int it, int iters, int wg, int& s, u32& phase,
                               u64 db0, u32 (&cur)[4][4], u32 (&nxt)[4][4], float (&acc)[ACC],
                               float (&total)[ACC], const Held& lut) {
    const int stage = s;
    float ws[2];  // this thread's two weight rows' group scales (the stage is full)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      ws[h] = __uint_as_float(ld_shared_u32(sm.scale(stage, 64 * wg + tile_row() + 8 * h)));
    }
    const u64 db = desc_advance(db0, stage * Tile::STAGE_BYTES);
    await_issue_turn<ORDER>(it);
    fence_registers(acc);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      WgmmaE4m3Rs<BM>::run(acc, cur[ks], desc_advance(db, 32 * ks), ks > 0);
    }
    wgmma_commit();
    pass_issue_turn<ORDER>(it, iters);
    if (++s == STAGES) s = 0, phase ^= 1;
    if (it + 1 < iters) {
      mbar_wait(sm.full_bar(s), phase);
      u32 raw[2][4];
      load_slab_words(sm.b(s), wg, raw);
      expand_fragments(raw, nxt, lut);
    }
    wgmma_wait<0>();
    fence_registers(acc);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) fence_registers_u32(cur[ks]);
    // Every thread releases its own reads of the stage (slab words, scales): a __syncwarp before
    // lane 0's arrival orders them too, but compute-sanitizer's racecheck does not see it (and
    // ptxas drops it in converged code), so refills raced those reads in its eyes (session 32).
    mbar_arrive(sm.empty_bar(stage));
    promote_rows(acc, ws, total);
  }

  // Two fragment sets in turn (named, not indexed by it % 2, which would put them in local memory).
  // Every consumer computes in this form (rows past N are zeros), so with TURNS both always issue.
  HM_DEVICE static void consume_t(const Smem& sm, int iters, int wg, float (&total)[ACC]) {
    if constexpr (Tile::TURNS) {
      if (wg == 0) {
        consume_blocks_t<1>(sm, iters, wg, total);
      } else {
        consume_blocks_t<2>(sm, iters, wg, total);
      }
    } else {
      consume_blocks_t<0>(sm, iters, wg, total);
    }
  }

  template <int ORDER>
  HM_DEVICE static void consume_blocks_t(const Smem& sm, int iters, int wg, float (&total)[ACC]) {
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    u32 even[4][4], odd[4][4];
    const Held lut = Fmt::Lut::hold();
    if (iters > 0) {
      mbar_wait(sm.full_bar(0), 0);
      u32 raw[2][4];
      load_slab_words(sm.b(0), wg, raw);
      expand_fragments(raw, even, lut);
    }
    const u64 db0 = sw128_kmajor_desc(sm.a(0));
    int s = 0;
    u32 phase = 0;
    for (int it = 0; it < iters; it += 2) {
      step_t<ORDER>(sm, it, iters, wg, s, phase, db0, even, odd, acc, total, lut);
      if (it + 1 < iters) {
        step_t<ORDER>(sm, it + 1, iters, wg, s, phase, db0, odd, even, acc, total, lut);
      }
    }
  }

  using Epi = Epilogue<OutT, kEpiScaleNone, false, BIAS>;

  // This thread's output factors in the out^T form: the scales of its tokens m0 + 8j + 2(lane%4)
  // + c (0 past M) and the columns of its two weight rows `first` + tile_row() + 8h.
  HM_DEVICE static void out_t_factors(const Args& a, const Epi& epi, int m0, int first,
                                      float (&as)[BM / 8][2], typename Epi::Column (&cols)[2]) {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int m = m0 + 8 * j + 2 * t + c;
        as[j][c] = m < a.M ? a.a_scales[m] : 0.f;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) cols[h] = epi.column(first + tile_row() + 8 * h, a.N);
  }

  // total[4j + 2h + c] is weight row n0 + 64wg + tile_row() + 8h, token m0 + 8j + 2(lane%4) + c:
  // out[m, n] = total * a_scales[m] (+ bias[n]).
  // Every token scale and bias is loaded before the first store (Epilogue::Column says why).
  // Tokens [t0, t1) of the tile only (reduce_wgmma_cluster's share); all of them by default.
  HM_DEVICE static void store_t(const Args& a, const float (&total)[ACC], int m0, int n0, int wg,
                                int t0 = 0, int t1 = BM) {
    const Epi epi{nullptr, nullptr, a.bias};
    const int t = threadIdx.x % 4;
    float as[BM / 8][2];
    typename Epi::Column cols[2];
    out_t_factors(a, epi, m0, n0 + 64 * wg, as, cols);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + 64 * wg + tile_row() + 8 * h;
      if (n >= a.N) continue;
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
        if (8 * j < t0 || 8 * j >= t1) continue;
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int m = m0 + 8 * j + 2 * t + c;
          if (m < a.M) {
            a.out[static_cast<long long>(m) * a.ldc + n] = convert_out<OutT>(
                epi.apply(total[4 * j + 2 * h + c] * as[j][c], cols[h], 1.f));
          }
        }
      }
    }
  }

  // store_t through warpgroup wg's staged rows at `staging` (token rows of its 64 weight rows),
  // ordered by named barrier STAGED_ROWS_BAR + wg (acquire / release_staged_rows).
  HM_DEVICE static void store_t_staged(const Args& a, const float (&total)[ACC], int m0, int n0,
                                       int wg, u32 staging) {
    using Rows = typename Tile::Rows;
    const Epi epi{nullptr, nullptr, a.bias};
    const int t = threadIdx.x % 4, first = n0 + 64 * wg;
    // the factors before the shared-memory stores (whose memory clobber would reload them)
    float as[BM / 8][2];
    typename Epi::Column cols[2];
    out_t_factors(a, epi, m0, first, as, cols);
    acquire_staged_rows(BM, STAGED_ROWS_BAR + wg);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = tile_row() + 8 * h;  // the weight row (output column) in the warpgroup's 64
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int m = 8 * j + 2 * t + c;  // the token in the tile: rows past M are not copied
          const OutT v =
              convert_out<OutT>(epi.apply(total[4 * j + 2 * h + c] * as[j][c], cols[h], 1.f));
          st_shared_u16(staging + m * Rows::ROW_BYTES + 2 * row,
                        *reinterpret_cast<const unsigned short*>(&v));
        }
      }
    }
    OutT* const dst = a.out + static_cast<long long>(m0) * a.ldc + first;
    release_staged_rows<BM>(staging, Rows::ROW_BYTES, dst, a.ldc, min(BM, a.M - m0),
                            min(64, a.N - first), STAGED_ROWS_BAR + wg);
  }

  HM_DEVICE static void store(const Args& a, const float (&total)[ACC], int m0, int n0, int wg) {
    const Epi epi{nullptr, nullptr, a.bias};
    store_wgmma_tile<true>(epi, total, a.a_scales, a.out, a.ldc, a.M, a.N, m0, n0, wg, 1.f);
  }

  HM_DEVICE static void run(const TmaDescriptor& ta, const TmaDescriptor& tw, const Args& a) {
    extern __shared__ uint4 smem_u4[];
    const u32 base = (smem_addr(smem_u4) + 1023u) & ~1023u;  // the 128B swizzle atom alignment
    const u32 x = base + STAGES * Tile::STAGE_BYTES;
    const u32 scales = x + Tile::CONSUMERS * Tile::X_BUFFERS * Tile::X_BYTES;
    const u32 staging = scales + STAGES * Tile::SCALE_BYTES;
    const u32 bars = staging + Tile::STAGED_BYTES;
    const Smem sm{base, x, scales, bars, bars + 8 * STAGES};
    const u32 flag = bars + 16 * STAGES;
    const int wg = threadIdx.x / 128;
    const TileCoord tile = grouped_tile<Tile::GROUP_M>();
    const int n0 = tile.n * BN, m0 = tile.m * BM;
    // This split's K blocks (all of them when unsplit); the host leaves no split empty.
    const int kb0 = blockIdx.z * a.iters_per_split;
    const int iters = min(ceil_div(a.K, BK), kb0 + a.iters_per_split) - kb0;
    init_ring_barriers<STAGES, Tile::CONSUMERS, Tile::RELEASES, Tile::REG_A ? 32 : 0>(sm.full, sm.empty);
    if (wg == 0) {
      // The consumers synchronise on their own named barriers: the producer warpgroup may exit.
      // The out^T form hands its registers to the consumers (two fragment sets in flight).
      if constexpr (Tile::REG_A) setmaxnreg_dec<Tile::PRODUCER_REGS>();
      if (Tile::REG_A && threadIdx.x / 32 == 1) produce_row_scales(a, sm, kb0, iters, n0);
      if (threadIdx.x == 0) {
        tma_prefetch_descriptor(&ta);
        tma_prefetch_descriptor(&tw);
        // the slab holds two 4-bit codes per byte: BK / 2 bytes of K per step
        produce_ab_ring<STAGES>(&ta, &tw, sm, Tile::STAGE_BYTES, kb0, iters, BK, BK / 2, m0, n0);
      }
      return;
    }
    if constexpr (Tile::REG_A) setmaxnreg_inc<Tile::CONSUMER_REGS>();
    float total[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] = 0.f;
    if constexpr (Tile::REG_A) {
      consume_t(sm, iters, wg - 1, total);
    } else {
      consume(a, sm, kb0, iters, n0, wg - 1, total);
    }
    // every consumer row is live: weight rows past N (or token rows past M) hold zeros
    static_assert(ACC * 128 * Tile::CONSUMERS == BM * BN, "the host sizes splits as BM * BN");
    if constexpr (Tile::CLUSTER) {
      // out^T: each register group of 4 holds 8 of the tile's tokens (wgmma's N)
      const int2 tokens = reduce_wgmma_cluster<ACC, Tile::CONSUMERS>(sm.data, total);
      store_t(a, total, m0, n0, wg - 1, tokens.x, tokens.y);
      cluster_wait();  // the peers have read this CTA's partial
      return;
    }
    if constexpr (Tile::SCATTER) {
      if (gridDim.z > 1 && static_cast<u32>(a.resident) >= gridDim.x * gridDim.y * gridDim.z) {
        const int2 tokens = reduce_wgmma_scatter<ACC, Tile::CONSUMERS>(a.workspace, a.counters,
                                                                       total, true);
        store_t(a, total, m0, n0, wg - 1, tokens.x, tokens.y);
        return;
      }
    }
    if (gridDim.z > 1 && !reduce_wgmma_splits<ACC, Tile::CONSUMERS>(a.workspace, a.counters,
                                                                     total, true, shared_int(flag))) {
      return;
    }
    if constexpr (Tile::STAGED && sizeof(OutT) == 2) {
      if (staged_rows_fit(a.out, a.ldc, a.N, n0 + 64 * (wg - 1), 64)) {
        store_t_staged(a, total, m0, n0, wg - 1, staging + (wg - 1) * Tile::Rows::BYTES);
        bulk_wait_read<0>();  // the staged rows outlive their copies' reads
        return;
      }
    }
    if constexpr (Tile::REG_A) {
      store_t(a, total, m0, n0, wg - 1);
    } else {
      store(a, total, m0, n0, wg - 1);
    }
  }
};

}  // namespace humming

// The C entry point every rendered W4A8-wgmma translation unit instantiates (parameters in the
// order of humming_cuda.kernels.w4a8_wgmma.bind.signature; the tensor maps come first).
#define HUMMING_W4A8_WGMMA_ENTRY(NAME, FMT, TILE, OUT, BIAS)                                    \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::CTAS) NAME(                 \
      const __grid_constant__ humming::TmaDescriptor tmap_a,                                   \
      const __grid_constant__ humming::TmaDescriptor tmap_w, const float* a_scales,            \
      const float* w_scales, const float* bias, OUT* out, int M, int N, int K, int ldc,        \
      float* workspace, int* counters, int iters_per_split, int resident) {                    \
    using Kern = humming::W4a8WgmmaKernel<FMT, TILE, OUT, BIAS>;                                \
    Kern::run(tmap_a, tmap_w,                                                                   \
              typename Kern::Args{a_scales, w_scales, bias, out, M, N, K, ldc, workspace,       \
                                  counters, iters_per_split, resident});                        \
  }
