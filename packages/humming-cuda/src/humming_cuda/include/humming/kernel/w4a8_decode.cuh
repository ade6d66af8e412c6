// W4A8 decode GEMM (M <= 8, or M <= 16 with TOKENS = 16) in the out^T form on fp16 MMAs:
// out[M, N] = (a_scale * q_x) @ (w_scale * q_w)^T with the weights as the m16n8k16 A operand and
// the tokens as its n8 side.
//
// Same arguments, CTA, PDL pipeline and split-K workspace as W8a8Kernel (kernel/w8a8.cuh) on the
// same W4A8 layout (humming_cuda.kernels.w8a8.nibbles), so a layer packs once for both. A stage
// holds SLABS consecutive 128-deep slabs (64 * SLABS contiguous bytes of each weight row, copied by
// one sweep of the threads): W8a8Kernel's one slab per stage reads 64-byte pieces of rows 4 KB
// or more apart, and its W4A8 decode took as long as W8A8's on twice the bytes (H200, act8.json of
// session 23: 115.0 against 125.1 us at 57344x8192, M = 1). The other difference is the inner
// step. W8a8Kernel multiplies a 16-row tile of tokens (mostly padding at decode) by 8-bit weight
// codes; on sm_90, which has no fp8 mma.sync, each of its k32 steps becomes two fp16 MMAs per n8
// block of weights, and the lane's share of the W4A8 decode kernel was 3.6 instructions per weight
// (H200, benchmarks/notes/session23.md). Here:
// - 16 weight rows are one A operand: lane (g, t) reads rows g and g + 8 of a 16-row block, which
//   the layout's chunks already give it (row g of n8 block 2P, row g of block 2P + 1). Per k32 step
//   and 16 rows that is two MMAs, half of W8a8Kernel's fp16 form.
// - Logical k slots of the two k16 MMAs are matched to the layout's physical K on both sides:
//   word w of the lane holds K 4t + j (nibble j) and 16 + 4t + j (nibble j + 4); fp16 pair j is
//   (nibble j, nibble j + 4), MMA h takes pairs 2h and 2h + 1. The tokens' 8-bit codes of K 4t..
//   and 16 + 4t.. (an ldmatrix of the stage's code rows) become fp16 pairs in the same order.
// - Weights are exact fp16 codes: int4 and uint4 (minus its zero point) read in place under the
//   magic number (Dequant::apply_in_place), e2m1 as placed bits (value * 2^-14, the factor folded
//   into the group scale); activations are exact fp16 values of their e4m3 or int8 codes. The
//   products are exact in the fp32 accumulators, which take the weight group scale (and an
//   activation group scale) once per scale segment; a per-token scale applies in the epilogue.
#pragma once
#include "humming/kernel/w8a8.cuh"
#include "humming/mma/mma_sync.cuh"

namespace humming {

// Registers lo, hi of four int8 codes each (K elements e and 16 + e of byte e) -> fp16 pairs
// p[j] = (lo byte j, hi byte j), exactly: each byte with its sign bit flipped goes under 0x64 (the
// fp16 1024 + x + 128), then one subtraction of 1152.
HM_DEVICE void int8_pairs(u32 lo, u32 hi, u32 (&p)[4]) {
  const half2 bias = __halves2half2(__float2half(1152.f), __float2half(1152.f));
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const u32 sel = static_cast<u32>(j | (j << 4) | ((4 + j) << 8) | ((4 + j) << 12));
    const u32 v = (prmt(lo, hi, sel) & 0x00FF00FFu) ^ 0x64806480u;
    p[j] = as_u32(__hsub2(from_u32<half2>(v), bias));
  }
}

// KIND: the codes the W4A8 layout holds (kWeightInt: int4, offset binary; kWeightUint: uint4 with
// integer zero points; kWeightFloat: e2m1), which the host knows from the spec (the layout's nibble
// table is the 8-bit MMA's and does not say).
template <typename Fmt, typename Tile, typename OutT, bool BIAS, int KIND, int TOKENS, int SLABS>
struct W4a8DecodeKernel {
  using Base = W8a8Kernel<Fmt, Tile, OutT, BIAS>;
  using Args = typename Base::Args;
  using W = typename Fmt::W;
  using ALoader = typename Base::ALoader;
  static constexpr int NF = Tile::N_FRAGS, BLOCKS = NF / 2, TB = TOKENS / 8;
  static constexpr int BK = Tile::BK, THREADS = Tile::THREADS;  // BK: one slab
  static_assert(SLABS == 1 || SLABS == 2 || SLABS == 4, "1, 2 or 4 slabs per stage");
  static constexpr int kBSlab = Tile::BN * 64;  // one slab of the tile's weight rows
  // Weight group scale rows a stage touches: its depth in groups, one more where a group
  // boundary can fall inside it (groups of 384 against stages of 256)
  static constexpr int kStageK = SLABS * BK, G = Fmt::W_GROUP;
  static constexpr int SROWS = (kStageK + G - 1) / G + (kStageK % G != 0 && G % kStageK != 0);
  // a stage: SLABS token tiles (ALoader's, 128 codes per row), SLABS weight slab tiles, then the
  // fp32 scales of its group rows for the tile's rows ([SROWS][BN])
  static constexpr int kStage = SLABS * (ALoader::kBytes + kBSlab) + SROWS * Tile::BN * 4;
  // CTAs per SM the registers are capped for: as many as the stages' shared memory lets reside
  // (228 KB per SM, 1 KB of it reserved per CTA), at most four (W8a8Tile's decode cap)
  static constexpr int kSmemPerSm = 228 * 1024;
  static constexpr int MIN_BLOCKS_FIT = kSmemPerSm / (kStage * Tile::STAGES + 1024);
  static constexpr int MIN_BLOCKS =
      MIN_BLOCKS_FIT < 1 ? 1 : (MIN_BLOCKS_FIT > 4 ? 4 : MIN_BLOCKS_FIT);
  static_assert(W::NIBBLES && Fmt::W_GROUPED,
                "the decode form reads 4-bit weights with group scales");
  static_assert(Tile::M_FRAGS == 1 && Tile::WARPS_M == 1, "one 16-row tile of tokens per CTA");
  static_assert(TOKENS == 8 || TOKENS == 16, "one or two n8 blocks of tokens");
  static_assert(!HM_PPU_LAYOUT, "NVIDIA layout only");
  // per token block: BLOCKS 16-row blocks x the m16n8 fragment's 4 floats
  static constexpr int ACC = BLOCKS * 4 * TB;
  static constexpr int SEG = Fmt::PROMOTE_K, KS_PER_SEG = SEG / 32;
  static constexpr int ZERO = W::ZERO ? kZeroInt : kZeroNone;
  static constexpr bool FLOAT = KIND == kWeightFloat;
  static_assert(!W::ZERO || KIND == kWeightUint, "zero points belong to uint4 codes");
  using Exact = Dequant<half, KIND, 4, FLOAT ? 2 : 0, FLOAT ? 1 : 0, ZERO, false>;
  static_assert(FLOAT || Exact::kInPlaceNibbles, "integer codes are read in place");
  // e2m1 codes enter the MMA as value * 2^-float_shift(); the group scale carries the factor
  static constexpr float kFold = FLOAT ? float(1 << Exact::float_shift()) : 1.f;

  // Pair j (0..3) of layout word w as exact fp16 weights: (nibble j, nibble j + 4).
  template <int J>
  HM_DEVICE static u32 weight_pair(u32 w, const GroupParams<half>& gp, u32 magic2) {
    if constexpr (FLOAT) {
      return as_u32(Exact::float_placed(w >> (4 * J)));
    } else {
      return Exact::template apply_in_place<J % 2>(J >= 2 ? w >> 8 : w, gp, magic2);
    }
  }

  // The tokens' codes of K 4t.. (lo) and 16 + 4t.. (hi) -> fp16 pairs (lo byte j, hi byte j).
  HM_DEVICE static void act_pairs(u32 lo, u32 hi, u32 (&p)[4]) {
    if constexpr (Fmt::CODE == kCode8E4m3) {
      e4m3_pairs(lo, hi, p);
    } else {
      int8_pairs(lo, hi, p);
    }
  }

  // Weight scales (times kFold, from the stage's scale tile st whose first group row is g0: 0
  // past N and past the last group) and zero points of the lane's rows, one per n8 block (row g of
  // block nf), for the group holding K offset k.
  HM_DEVICE static void load_group(float (&ws)[NF], GroupParams<half> (&gp)[NF], const Args& a,
                                   const float* st, int g0, int k, int n0, int wn, int lane) {
    const long long g = k / G;
    const float* row = st + (g - g0) * Tile::BN + lane / 4;
#pragma unroll
    for (int nf = 0; nf < NF; ++nf) {
      const int n = n0 + (wn * NF + nf) * 8 + lane / 4;
      const bool ok = n < a.N && k < a.K;  // zero points: read where they lie, 0 past N or K
      ws[nf] = row[(wn * NF + nf) * 8] * kFold;
      if constexpr (W::ZERO) {
        const int z = ok ? a.zeros[g * a.N + n] : 0;
        gp[nf] = Exact::prepare(__float2half(1.f), __int2half_rn(z));
      }
    }
  }

  // total += part * (weight scale of the row) [* activation group scale of the token]; part = 0.
  // Accumulator (b * BLOCKS + P) * 4 + e: row g + 8 (e / 2) of block P, token 8b + 2t + e % 2.
  HM_DEVICE static void flush(float (&total)[ACC], float (&part)[ACC], const float (&ws)[NF],
                              const Args& a, int k0, int m0, int lane) {
    float as[TB][2];
#pragma unroll
    for (int b = 0; b < TB; ++b) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        as[b][e] = 1.f;
        if constexpr (Fmt::A_GROUP) {
          const int m = m0 + 8 * b + 2 * (lane % 4) + e;
          as[b][e] = m < a.M && k0 < a.K ? a.a_scales[static_cast<long long>(k0 / 128) * a.M + m]
                                         : 0.f;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      const int b = i / (4 * BLOCKS), P = (i / 4) % BLOCKS, e = i % 4;
      total[i] += part[i] * (ws[2 * P + e / 2] * as[b][e % 2]);
      part[i] = 0.f;
    }
  }

  HM_DEVICE static char* a_tile(char* smem, int buf, int s) {
    return smem + buf * kStage + s * ALoader::kBytes;
  }
  HM_DEVICE static char* b_tile(char* smem, int buf, int s) {
    return smem + buf * kStage + SLABS * ALoader::kBytes + s * kBSlab;
  }
  HM_DEVICE static float* s_tile(char* smem, int buf) {
    return reinterpret_cast<float*>(smem + buf * kStage + SLABS * (ALoader::kBytes + kBSlab));
  }

  // Iteration it's weights and their group scales. Weights: slabs it * SLABS .. of the tile's
  // rows, 64 * SLABS contiguous bytes per row (K is padded to whole slabs). Thread tid copies chunk
  // tid % CPR of rows tid / CPR + i * (THREADS / CPR), so one warp-wide copy covers whole rows'
  // runs; slab s of a row lands in slab tile s, as NibbleTileLoader lays one slab out (lane (g,
  // t) later reads chunk t of row g: a warp's 512 bytes are contiguous). Rows past N are not
  // copied: they only feed columns of out that are never stored. Plain copies: with an evict-first
  // hint ptxas 13.0 put some tiles' copies through unwritten uniform registers (tests/
  // sass_audit.py), an illegal instruction on the H200. Scales: group rows it * kStageK / G ..
  // (SROWS of them), one word per row of the tile (any N: rows of [groups, N] need not be 16-byte
  // aligned); zero past N and past the last group. Group scales go through shared memory because
  // loaded from global memory at each segment they stalled the FFMA that applies them (ncu,
  // session 24: 11% of the warp-stall samples).
  HM_DEVICE static void load_weights(const Args& a, char* smem, int buf, int it, int n0, int tid) {
    constexpr int CPR = 4 * SLABS, ROW_STEP = THREADS / CPR, PASSES = Tile::BN / ROW_STEP;
    static_assert(THREADS % CPR == 0 && Tile::BN % ROW_STEP == 0, "whole rows per sweep");
    const int slabs = ceil_div(a.K, BK), ld = slabs * 64;
    // a slab past K copies the row's last one instead: its codes meet zero-filled token codes
    // (finite x 0). A predicated copy (zeros written instead) made ptxas 13.0 emit evict-first
    // copies through unwritten uniform registers (tests/sass_audit.py), which fault on the GPU.
    const int c = tid % CPR, row0 = tid / CPR, slab = min(it * SLABS + c / 4, slabs - 1);
    const char* g = a.w + static_cast<long long>(n0 + row0) * ld + slab * 64 + (c % 4) * 16;
    char* dst = b_tile(smem, buf, c / 4) + row0 * 64 + (c % 4) * 16;
#pragma unroll
    for (int i = 0; i < PASSES; ++i) {
      if (n0 + row0 + i * ROW_STEP >= a.N) break;
      cp_async16(dst + i * ROW_STEP * 64, g + static_cast<long long>(i * ROW_STEP) * ld, true);
    }
    const int g0 = it * kStageK / G, groups = ceil_div(a.K, G);
    float* st = s_tile(smem, buf);
#pragma unroll
    for (int e = tid; e < SROWS * Tile::BN; e += THREADS) {
      const int row = e / Tile::BN, n = n0 + e % Tile::BN;
      const bool ok = n < a.N && g0 + row < groups;
      cp_async4(st + e, ok ? a.w_scales + static_cast<long long>(g0 + row) * a.N + n : a.w_scales,
                ok);
    }
  }

  // Iteration it's token codes: SLABS tiles of 128 codes per row (zero past K).
  HM_DEVICE static void load_acts(const Args& a, char* smem, int buf, int it, int m0, int tid) {
#pragma unroll
    for (int s = 0; s < SLABS; ++s) {
      ALoader::template load<false>(a_tile(smem, buf, s), a.a, m0, (it * SLABS + s) * BK, a.M,
                                    a.K, a.K, tid, 0);
    }
  }

  HM_DEVICE static void compute_stage(float (&total)[ACC], float (&part)[ACC], float (&ws)[NF],
                                      GroupParams<half> (&gp)[NF], const Args& a, char* smem,
                                      int buf, int it, int m0, int n0, int wn, int lane,
                                      u32 magic2) {
    // not unrolled: ptxas would hoist every slab's shared-memory loads ahead of the MMAs (255
    // registers and spills at four slabs with two token blocks)
#pragma unroll 1
    for (int s = 0; s < SLABS; ++s) {
      compute_slab(total, part, ws, gp, a, a_tile(smem, buf, s), b_tile(smem, buf, s),
                   s_tile(smem, buf), it * kStageK / G, it * SLABS + s, m0, n0, wn, lane, magic2);
    }
  }

  // One 128-deep slab `slab` of K from its token and weight tiles and its stage's scale tile st
  // (first group row g0).
  HM_DEVICE static void compute_slab(float (&total)[ACC], float (&part)[ACC], float (&ws)[NF],
                                     GroupParams<half> (&gp)[NF], const Args& a, const char* a_s,
                                     const char* b_s, const float* st, int g0, int slab, int m0,
                                     int n0, int wn, int lane, u32 magic2) {
    // one 16-byte chunk per n8 block: row g of the block, its words for all four k32 steps
    uint4 nib[NF];
#pragma unroll
    for (int nf = 0; nf < NF; ++nf) {
      const int row = (wn * NF + nf) * 8 + lane / 4;
      nib[nf] = *reinterpret_cast<const uint4*>(b_s + row * 64 + (lane % 4) * 16);
    }
    u32 x[TB][4];
#pragma unroll
    for (int ks = 0; ks < BK / 32; ++ks) {
      const int k0 = slab * BK + ks * 32;
      if (ks % KS_PER_SEG == 0) load_group(ws, gp, a, st, g0, k0, n0, wn, lane);
      if (ks % 2 == 0) {
        // matrix j: token rows 8b..8b+7, 16-byte chunk 2ks + j (K 32ks + 16j..): registers 0, 1
        // hold K 4t.. and 16 + 4t.. of step ks, 2 and 3 those of step ks + 1
#pragma unroll
        for (int b = 0; b < TB; ++b) {
          ldmatrix_x4(x[b], a_s + ALoader::offset(8 * b + (lane & 7), 2 * ks + (lane >> 3)));
        }
      }
      u32 xp[TB][4];
#pragma unroll
      for (int b = 0; b < TB; ++b) act_pairs(x[b][2 * (ks % 2)], x[b][2 * (ks % 2) + 1], xp[b]);
#pragma unroll
      for (int P = 0; P < BLOCKS; ++P) {
        const u32 w0 = reinterpret_cast<const u32*>(&nib[2 * P])[ks];
        const u32 w1 = reinterpret_cast<const u32*>(&nib[2 * P + 1])[ks];
        const GroupParams<half>&g0 = gp[2 * P], &g1 = gp[2 * P + 1];
        // A fragment: rows g / g + 8 at k slots 2t, 2t + 1 (pair 2h) and 2t + 8, 2t + 9 (2h + 1)
        const u32 h0[4] = {weight_pair<0>(w0, g0, magic2), weight_pair<0>(w1, g1, magic2),
                           weight_pair<1>(w0, g0, magic2), weight_pair<1>(w1, g1, magic2)};
        const u32 h1[4] = {weight_pair<2>(w0, g0, magic2), weight_pair<2>(w1, g1, magic2),
                           weight_pair<3>(w0, g0, magic2), weight_pair<3>(w1, g1, magic2)};
#pragma unroll
        for (int b = 0; b < TB; ++b) {
          float(&d)[4] = *reinterpret_cast<float(*)[4]>(&part[(b * BLOCKS + P) * 4]);
          Mma16816<half>::run(d, h0, xp[b][0], xp[b][1]);
          Mma16816<half>::run(d, h1, xp[b][2], xp[b][3]);
        }
      }
      if ((ks + 1) % KS_PER_SEG == 0) flush(total, part, ws, a, k0 + 32 - SEG, m0, lane);
    }
  }

  // Accumulator (b * BLOCKS + P) * 4 + e: column n0 + (wn * NF + 2P + e / 2) * 8 + g of out, token
  // m0 + 8b + 2t + e % 2.
  HM_DEVICE static void store(const Args& a, const float (&v)[ACC], int m0, int n0, int wn,
                              int lane) {
    Epilogue<OutT, kEpiScaleNone, false, BIAS> epi{nullptr, nullptr, a.bias};
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      const int b = i / (4 * BLOCKS), P = (i / 4) % BLOCKS, e = i % 4;
      const int m = m0 + 8 * b + 2 * (lane % 4) + e % 2;
      const int n = n0 + (wn * NF + 2 * P + e / 2) * 8 + lane / 4;
      if (m >= a.M) continue;
      const float as = Fmt::A_GROUP ? 1.f : a.a_scales[m];
      epi.store_one(a.out, a.ldc, a.M, a.N, m, n, v[i] * as, 1.f);
    }
  }

  HM_DEVICE static void run(const Args& a) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    const int tid = threadIdx.x, lane = tid & 31, wn = tid >> 5;
    const int n0 = blockIdx.x * Tile::BN, m0 = blockIdx.y * Tile::BM;
    const int iters = ceil_div(a.K, BK * SLABS);
    const int it0 = Tile::SPLIT_K ? blockIdx.z * a.iters_per_split : 0;
    const int it1 = Tile::SPLIT_K ? min(iters, it0 + a.iters_per_split) : iters;

    float total[ACC], part[ACC], ws[NF];
    GroupParams<half> gp[NF];
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] = part[i] = 0.f;
    const u32 magic2 = pinned_constant(Exact::kMagic2, a.K);
    cp_async_pipeline_pdl<Tile::STAGES>(
        it0, it1, [&](int buf, int it) { load_weights(a, smem, buf, it, n0, tid); },
        [&](int buf, int it) { load_acts(a, smem, buf, it, m0, tid); },
        [&](int buf, int it) {
          load_acts(a, smem, buf, it, m0, tid);
          load_weights(a, smem, buf, it, n0, tid);
        },
        [&](int buf, int it) {
          compute_stage(total, part, ws, gp, a, smem, buf, it, m0, n0, wn, lane, magic2);
        });
    if constexpr (Tile::SPLIT_K) {
      if (gridDim.z > 1) {
        // the reducer's "last split" flag reuses the pipeline's shared memory, written after its
        // first barrier (every warp is past its last stage then)
        const int tile = blockIdx.y * gridDim.x + blockIdx.x;
        if (!SplitKReducer<ACC, Tile::WARPS_N>::reduce(total, true, wn, lane, a.workspace,
                                                      a.counters, tile, blockIdx.z, gridDim.z,
                                                      reinterpret_cast<int*>(smem))) {
          return;
        }
      }
    }
    store(a, total, m0, n0, wn, lane);
  }
};

}  // namespace humming

// The C entry point of a rendered W4A8 decode unit: HUMMING_W8A8_ENTRY's parameters (the same host
// binding, humming_cuda.kernels.w8a8.bind, with iters_per_split counted in stages of SLABS slabs).
// Registers are capped for the CTAs per SM its shared memory allows (W4a8DecodeKernel::MIN_BLOCKS).
#define HUMMING_W4A8_DECODE_ENTRY(NAME, FMT, TILE, OUT, BIAS, KIND, TOKENS, SLABS)              \
  extern "C" __global__ void __launch_bounds__(                                                 \
      TILE::THREADS,                                                                            \
      humming::W4a8DecodeKernel<FMT, TILE, OUT, BIAS, KIND, TOKENS, SLABS>::MIN_BLOCKS) NAME(   \
      const char* a, const float* a_scales, const char* w, const float* w_scales,              \
      const unsigned char* zeros, const float* bias, OUT* out, int M, int N, int K, int ldc,   \
      int ws_ld, float* workspace, int* counters, int iters_per_split) {                        \
    using Kern = humming::W4a8DecodeKernel<FMT, TILE, OUT, BIAS, KIND, TOKENS, SLABS>;          \
    Kern::run(typename Kern::Args{a, a_scales, w, w_scales, zeros, bias, out, M, N, K, ldc,     \
                                  ws_ld, workspace, counters, iters_per_split});                \
  }
