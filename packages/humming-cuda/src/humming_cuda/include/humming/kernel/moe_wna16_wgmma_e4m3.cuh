// Indexed MoE GEMM for MXFP4 weights x e4m3 activations on sm_90a from 4 rows per expert, on fp8
// tensor cores (humming_cuda.kernels.moe_wna16_a8 with an e4m3 inner config): the persistent MoE
// kernel of kernel/moe_wna16_wgmma.cuh, whose K steps are run by E4m3RsSteps below instead of the
// bf16 register-A steps; 16-row blocks (wgmma n16, two CTAs per SM) up to 16 rows per expert,
// 64- and 128-row blocks above.
//
// Why: moe_wna16_a8 otherwise widens the e4m3 codes to bf16 and runs the bf16 kernel at half the
// fp8 tensor rate; at M >= 512 it took 2.0-2.5x the published humming-kernels' time, which runs
// these layers on fp8 wgmma (benchmarks/results/h200/moe.json, session 19).
//
// The weights stay in the MoE WnA16 layout (one packed copy serves every M bucket of the layer,
// the decode kernels' too). What changes:
// - Each k32 wgmma takes two 16-deep layout tiles. A lane's word of a tile holds, for its two rows
//   g and g + 8 of an m64 block, the codes of K 2t, 8+2t, 2t+1, 9+2t (t = lane % 4) at nibbles
//   0, 1, 4, 5 (row g) and 2, 3, 6, 7 (row g + 8) (humming/memory/bitplanes.cuh, 4-bit codes).
//   One prmt gathers a row's four into the low half; the wgmma's register A byte j = 0..3 of K
//   group 4t.. then holds real K 2t, 8+2t, 2t+1, 9+2t. The activation quantizer writes x in the
//   matching order: byte p of every 16-byte chunk holds K (p >> 1) + 8 (p & 1)
//   (act_quant_interleaved.cuh), so wgmma multiplies matching K.
// - A code becomes an e4m3 operand through a table lookup (one prmt for the magnitude, one for the
//   sign) with its group's scale folded in: e2m1 value x 2^(s - smax + 6), where smax is the
//   largest scale exponent of the weight row over groups with a nonzero code (row_exp, packed by
//   moe_wna16_a8's layout). Within 14 binades of smax every operand is exact (6 x 2^6 = 384 fits
//   e4m3; 0.5 x 2^-8 is its smallest subnormal, and the subnormals' 2^-9 steps hold 1.5 x 2^-8);
//   groups further below round to e4m3 subnormals or 0 (by at most 2^(smax - 16), 2^-15 of the
//   row's largest weight: below the fp8 accumulation's rounding). The fp32 accumulators are
//   multiplied by 2^(smax - 6) per row after the K loop.
// - The tables (21 scale offsets x 8 magnitudes, padded with zeros on both sides so that any
//   exponent pair indexes inside without a clamp: 511 entries of 8 bytes) are built in shared
//   memory at the start; a (row, group) looks up its 8 bytes at row base + 8 x (s + 127).
// - K steps are 128 deep (4 k32 wgmma), so the x tile is still 128-byte rows in the 128B swizzle.
// - No per-block fp32 promotion: wgmma adds each k32 step's products into the fp32 accumulators
//   with the tensor cores' own alignment (DeepSeek-V3 reports ~14 bits kept on Hopper), which the
//   tests bound per k32 step (tests/moe_cases.py). A second accumulator set would not fit.
#pragma once
#include "humming/datatype/code8.cuh"
#include "humming/datatype/nibble8.cuh"
#include "humming/kernel/moe_wna16_wgmma.cuh"
#include "humming/mma/wgmma_e4m3_rs.cuh"

namespace humming {

// STAGES-deep ring of 128-deep K steps over BM tokens x 256 weight rows; the rest as the bf16
// register-A tile with a producer warpgroup (WgmmaWna16RsTile). CTAS: CTAs resident per SM the
// registers are split for (MoeWna16WgmmaKernel): 2 with narrow blocks, whose consumers are bound
// by the latency of their conversions (ncu, notes/session21.md), so twice the warps hide more.
template <int STAGES_, int BM_, int CTAS_ = 1>
struct WgmmaE4m3RsTile {
  static constexpr int BM = BM_, BN = 256, BK = 128, STAGES = STAGES_, GROUP_M = 1;
  static_assert(BM == 16 || BM == 32 || BM == 64 || BM == 128, "wgmma N of the token side");
  static constexpr int CTAS = CTAS_;
  static_assert(CTAS == 1 || (CTAS == 2 && BM == 16), "two CTAs per SM: 16-row blocks");
  static constexpr int CONSUMERS = 2;
  static constexpr bool PRODUCER = true;
  static constexpr int THREADS = 128 * (CONSUMERS + 1);
  static constexpr int TILES_N = BN / 64, TILES_K = BK / 16;  // layout tiles per step
  static constexpr int X_BYTES = BM * BK;                     // e4m3 codes
  static constexpr int SCALE_BYTES = BK / 32 * BN * 2;        // groups are 32 deep or more
};

// e4m3 codes of the e2m1 magnitudes 0..7 times 2^(k - 249) for entry k in [ENTRY0, ENTRY0 + 20]
// (2^-14 .. 2^6: below, every product rounds to 0), zeros elsewhere; 8 bytes per entry, in shared
// memory.
struct E2m1E4m3Tables {
  static constexpr int ENTRIES = 511, ENTRY0 = 235, BYTES = 4096;
  static_assert(ENTRIES * 8 <= BYTES, "the tables fit their buffer");

  // The value of e2m1 magnitude code c (0..7): 0, 0.5, then (1 + m / 2) x 2^(e - 1).
  HM_DEVICE static float magnitude(int c) {
    return c < 2 ? 0.5f * c : ldexpf(1.f + 0.5f * (c & 1), (c >> 1) - 1);
  }

  // Every thread of the CTA: `threads` of them fill the tables at `t`.
  HM_DEVICE static void fill(u32* t, int thread, int threads) {
    for (int i = thread; i < ENTRIES * 2; i += threads) {
      const int k = i / 2, c = 4 * (i % 2);  // entry k, its magnitudes c .. c + 3
      u32 word = 0;
      if (k >= ENTRY0 && k <= ENTRY0 + 20) {
        const float f = __int_as_float((k - 249 + 127) << 23);  // 2^(k - 249), a normal float
        word = Code8Traits<kCode8E4m3>::encode4(magnitude(c) * f, magnitude(c + 1) * f,
                                                magnitude(c + 2) * f, magnitude(c + 3) * f);
      }
      t[i] = word;
    }
  }
};

template <class Fmt, class Tile, typename OutT, bool BIAS>
struct E4m3RsSteps : Wna16WgmmaRsKernel<Fmt, Tile, nv_bfloat16, OutT, BIAS> {
  using Base = Wna16WgmmaRsKernel<Fmt, Tile, nv_bfloat16, OutT, BIAS>;
  using typename Base::Args;
  using typename Base::Smem;
  using Base::ACC;
  using Base::STAGE_BYTES;
  using Base::TILE_BYTES;
  using Base::W_BYTES;
  static constexpr int BM = Tile::BM, BK = Tile::BK, BN = Tile::BN, STAGES = Tile::STAGES;
  static constexpr int TILES_K = Tile::TILES_K, BLOCKS = BK / 32;  // k32 wgmma per step
  // k32 blocks whose wgmma may still run when the next block's are issued, and the fragment sets
  // that takes (a set is rewritten IN_FLIGHT blocks after its wgmma; the count divides BLOCKS so
  // a block's set is a compile-time index). H200, the MoE bench's layer, same process
  // (moe_header_ab.py, notes/session20.md and session21.md): 2 in flight took 0.98x the time of 1
  // with 64-row blocks (M = 512) but 1.07x with 128-row blocks (M = 2048, 8192); with 16-row
  // blocks on two CTAs per SM 1 took 0.99x the time of 2 (M = 128, 256) and 3 took 1.12x (M = 32,
  // 128).
  static constexpr int IN_FLIGHT = BM == 64 ? 2 : 1;
  static constexpr int FRAG_SETS = IN_FLIGHT == 1 ? 2 : BLOCKS;
  static_assert(IN_FLIGHT < BLOCKS && BLOCKS % FRAG_SETS == 0 && FRAG_SETS > IN_FLIGHT,
                "a step's stage is released within the next step; sets cycle within a step");
  static_assert(Fmt::BITS == 4 && Fmt::IN_LOOP && Fmt::ZERO == 0, "4-bit codes, group scales");

  // This thread's four weight rows (pairs j = 4v + 2i + h of the lane, i: m64 block, h: +8):
  // table base addresses and the factor 2^(smax - 6) of each.
  struct Rows {
    u32 base[4];
    float factor[4];
  };

  // row_exp: the expert's smax + 127 per packed column (lane order, like the scales). A warp
  // whose layout-tile column lies past the padded N computes rows that are never stored: they
  // take 2^0 (its four columns are all past, or all inside: n_pad is a multiple of 64).
  HM_DEVICE static Rows rows(const int* row_exp, int n0, int n_pad, u32 tables) {
    const int v = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int col = n0 + 64 * warp + 8 * (lane / 4) + 4 * v;
    const int4 e = col < n_pad ? __ldg(reinterpret_cast<const int4*>(row_exp + col))
                               : make_int4(127, 127, 127, 127);
    const int ex[4] = {e.x, e.y, e.z, e.w};
    Rows r;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // a group's scale 2^s (bf16 exponent field e = s + 127) reads entry k = e - ex + 255, the
      // table of 2^(s - smax + 6); e in [0, 255] and ex in [0, 254] keep k inside [1, 510]
      r.base[j] = tables + 8u * static_cast<u32>(255 - ex[j]);
      r.factor[j] = ldexpf(1.f, ex[j] - 133);
    }
    return r;
  }

  // Four codes -> four e4m3 bytes through one row's table (mag: the magnitudes 0..7, 8 bytes).
  // idx: the codes' magnitudes in the selector nibbles 0..3; neg: 0xFF in byte j where code j is
  // negative (its top bit is the only one kept).
  HM_DEVICE static u32 to_e4m3(u32 idx, u32 neg, uint2 mag) {
    return prmt(mag.x, mag.y, idx) | (neg & 0x80808080u);
  }

  // One word of a layout tile (row g's codes at nibbles 0, 1, 4, 5, row g + 8's at 2, 3, 6, 7)
  // -> the two rows' e4m3 operands, bytes j = 0..3 from nibbles (0, 1, 4, 5) and (2, 3, 6, 7).
  // One prmt gathers a row's magnitudes into selector nibbles; the signs come from prmt's
  // sign-replicate mode (selector bit 3) on w and w << 4: an odd nibble's sign is the top bit of
  // its byte of w, an even one's that of w << 4. The mask and the shift serve both rows: 5
  // instructions an operand, where a sign prmt on the gathered codes, its shift and the per-row
  // mask took 6 (ptxas kept all of them, SASS of the 128-row kernel).
  HM_DEVICE static void to_e4m3_rows(u32 w, uint2 mag_g, uint2 mag_g8, u32& a_g, u32& a_g8) {
    const u32 up = w << 4, m = w & 0x77777777u;
    a_g = to_e4m3(prmt(m, m, 0x2020u), prmt(w, up, 0xAE8Cu), mag_g);
    a_g8 = to_e4m3(prmt(m, m, 0x3131u), prmt(w, up, 0xBF9Du), mag_g8);
  }

  // The register A fragments of k32 block c of a stage for both m64 blocks.
  // scale_off: the offset of the block's scales in a stage.
  HM_DEVICE static void build(const unsigned char* stage, int words_off, int scale_off, int c,
                              const Rows& rw, int v, u32 (&frag)[2][4]) {
    const uint2 s = *reinterpret_cast<const uint2*>(stage + scale_off);
    // 8 x the exponent field of each bf16 scale: masked in place, then shifted (ptxas folds the
    // shift into the address add)
    const u32 ex8[4] = {(s.x & 0x7F80u) >> 4, (s.x & 0x7F800000u) >> 20, (s.y & 0x7F80u) >> 4,
                        (s.y & 0x7F800000u) >> 20};
    uint2 tab[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                   : "=r"(tab[j].x), "=r"(tab[j].y)
                   : "r"(rw.base[j] + ex8[j]));
    }
    HalfLaneWords<4> lo, hi;  // the K tiles 2c (K 0-15 of the block) and 2c + 1 (16-31)
    lo.load(reinterpret_cast<const u32*>(stage + words_off + 2 * c * TILE_BYTES), v);
    hi.load(reinterpret_cast<const u32*>(stage + words_off + (2 * c + 1) * TILE_BYTES), v);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      to_e4m3_rows(lo.w[i], tab[2 * i], tab[2 * i + 1], frag[i][0], frag[i][1]);
      to_e4m3_rows(hi.w[i], tab[2 * i], tab[2 * i + 1], frag[i][2], frag[i][3]);
    }
  }

  HM_DEVICE static void mma(float (&acc)[ACC], const u32 (&frag)[4], u64 dx) {
    WgmmaE4m3Rs<BM>::run(acc, frag, dx, true);
  }

  // K steps 0 .. iters - 1 of a tile, ring steps q0 ..: as Base::consume<true, true> (x gathered
  // by threads, the ring carrying on to the CTA's next tile), one k32 block at a time; block c's
  // fragments are built while blocks c - IN_FLIGHT .. c - 1's wgmma run.
  HM_DEVICE static void consume(const Args& a, const Smem& sm, const unsigned char* ring,
                                int iters, const Rows& rw, float (&acc)[2][ACC], int q0) {
    const int v = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int words_off = Tile::X_BYTES + (warp * TILES_K * 32 + lane) * Fmt::BITS * 4;
    const int group_off = Tile::X_BYTES + W_BYTES + 2 * (64 * warp + 8 * (lane / 4) + 4 * v);
    // The scales' offset per k32 block, computed once: opaque to ptxas, which otherwise recomputed
    // them from the group size in every block (3 instructions each, SASS of the 128-row kernel).
    int scale_off[BLOCKS];
#pragma unroll
    for (int c = 0; c < BLOCKS; ++c) {
      scale_off[c] = group_off + ((32 * c) >> a.group_shift) * BN * 2;
      asm volatile("" : "+r"(scale_off[c]));
    }
    u32 frag[FRAG_SETS][2][4] = {};
    int j = 0;
    do {  // iters >= 1: see Base::consume
      const int q = q0 + j, s = q % STAGES;
      const unsigned char* stage = ring + s * STAGE_BYTES;
      const u64 dx = sw128_kmajor_desc(sm.x(s));
      mbar_wait(sm.full_bar(s), (q / STAGES) & 1);
      fence_proxy_async_smem();  // x was written by cp.async (generic proxy)
#pragma unroll
      for (int c = 0; c < BLOCKS; ++c) {
        const int b = c % FRAG_SETS;
        build(stage, words_off, scale_off[c], c, rw, v, frag[b]);
        wgmma_fence();
        mma(acc[0], frag[b][0], desc_advance(dx, 32 * c));
        mma(acc[1], frag[b][1], desc_advance(dx, 32 * c));
        wgmma_commit();
        // block c - IN_FLIGHT is done: its fragments may be rewritten; at block IN_FLIGHT the
        // previous step's stage is no longer read
        wgmma_wait<IN_FLIGHT>();
        fence_registers_u32(frag[(c + FRAG_SETS - IN_FLIGHT) % FRAG_SETS][0]);
        fence_registers_u32(frag[(c + FRAG_SETS - IN_FLIGHT) % FRAG_SETS][1]);
        if (c == IN_FLIGHT && j > 0) mbar_arrive(sm.empty_bar((q - 1) % STAGES));
      }
    } while (++j < iters);
    wgmma_wait<0>();
    fence_registers(acc[0]);
    fence_registers(acc[1]);
    mbar_arrive(sm.empty_bar((q0 + iters - 1) % STAGES));
  }

  // The accumulators staged as they are: these steps never fold the bf16 steps' 2^-FOLD_DOWN
  // into the scales (rescale applies them), so Base::stage must not take it back.
  template <int PART = 0, int PARTS = 1>
  HM_DEVICE static void stage(const float (&acc)[2][ACC], float* tile) {
    Base::template stage<PART, PARTS, false>(acc, tile);
  }

  // acc row (i, h) times its row's 2^(smax - 6).
  HM_DEVICE static void rescale(float (&acc)[2][ACC], const Rows& rw) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int c = 0; c < ACC; ++c) acc[i][c] *= rw.factor[2 * i + (c / 2) % 2];
    }
  }
};

template <class Fmt, int STAGES, int BM, int CTAS, typename ActT, typename OutT, bool BIAS>
struct MoeRsSteps<Fmt, WgmmaE4m3RsTile<STAGES, BM, CTAS>, ActT, OutT, BIAS> {
  using type = E4m3RsSteps<Fmt, WgmmaE4m3RsTile<STAGES, BM, CTAS>, OutT, BIAS>;
  using X = u8;
  static constexpr bool E4M3 = true;
  static constexpr int TABLE_BYTES = E2m1E4m3Tables::BYTES;
  HM_DEVICE static void fill_tables(u32* t, int thread, int threads) {
    E2m1E4m3Tables::fill(t, thread, threads);
  }
};

}  // namespace humming

// The e4m3 form's entry: HUMMING_MOE_WNA16_WGMMA_ENTRY's parameters with x as e4m3 codes (in the
// quantizer's interleaved order), then the expert rows' exponents (row_exp, [E, n_pad]).
#define HUMMING_MOE_WNA16_WGMMA_E4M3_ENTRY(NAME, FMT, TILE, OUT, BIAS, POLICY)                     \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::CTAS) NAME(                    \
      const humming::u8* x, const humming::u32* qweight, const nv_bfloat16* scales,               \
      const nv_bfloat16* zeros, const float* channel_scale, const float* global_scale,             \
      const float* bias, const float* topk_weights, const int* sorted_ids, const int* expert_ids,  \
      const int* num_post_padded, OUT* out, int N, int n_out, int K, int lda, int ldc, int n_pad,  \
      int k_tiles, int groups, int group_shift, int top_k, int numel, int num_ids,                 \
      int num_experts, const float* a_scales, const int* row_exp) {                                \
    using Kern = humming::MoeWna16WgmmaKernel<FMT, TILE, nv_bfloat16, OUT, BIAS, POLICY>;          \
    Kern::run(typename Kern::Args{x, qweight, scales, zeros, channel_scale, global_scale, bias,    \
                                  topk_weights, sorted_ids, expert_ids, num_post_padded, out, N,   \
                                  n_out, K, lda, ldc, n_pad, k_tiles, groups, group_shift, top_k,  \
                                  numel, num_ids, num_experts, a_scales, row_exp});                \
  }
