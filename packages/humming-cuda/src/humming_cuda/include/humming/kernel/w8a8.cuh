// W8A8 / W4A8 dense GEMM: out[M, N] = (a_scale * q_x[M, K]) @ (w_scale * q_w[N, K])^T (+ bias) on
// the 8-bit tensor cores (int8 x int8 or E4M3 x E4M3, mma.sync m16n8k32).
//
// Weights, two storages (Fmt::W):
// - W8Bytes: 8-bit codes row-major [N, K], K contiguous (no pre-shuffle: ldmatrix yields the B
//   fragments of K-contiguous rows directly).
// - W4Nibbles: 4-bit codes, pre-shuffled [N, ceil(K/128) * 64] bytes (half the bytes of W8A8; layout
//   in humming_cuda.kernels.w8a8.nibbles): each 128-deep K slab of a row is 64 bytes, lane (g, t)
//   of a warp reads one 16-byte chunk per slab holding its B fragments for all four k32 steps, and
//   expands each word to two 8-bit registers in place (datatype/nibble8.cuh). uint4 codes with
//   integer zero points become u - z in int8 lanes.
//
// Scales: activations per token / per tensor ([1, M], applied in the epilogue) or per group of 128
// along K ([G, M]); weights per tensor / per channel (fp32, epilogue), per 128x128 block
// ([ceil(N/128), ws_ld] fp32) or per group of W_GROUP along K ([ceil(K/W_GROUP), N] fp32). Group
// and block scales apply when partial sums are promoted: every PROMOTE_K of K (128, or the weight
// group when it is shorter) the MMA partial sums are multiplied by their scales and added into fp32
// totals. fp8 always promotes at least every 128 of K (tensor-core fp8 accumulation keeps fewer bits
// than fp32); int8 without group/block scales accumulates the whole K exactly in s32.
//
// HUMMING_DIALECT (arith/dialect.cuh) selects the PPU forms for int8 x int8 instead: each pair of
// n8 blocks is one N=16 MMA with PPU-ordered accumulators (acc_slot), the weights' rows are stored
// in the PPU order (humming_ppu.layout), the emulation writes columns through ppu_b_row
// (out_col), and no evict-first hint; NVIDIA code is unchanged.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/code8.cuh"
#include "humming/datatype/nibble8.cuh"
#include "humming/epilogue/epilogue.cuh"
#include "humming/memory/byte_tile_loader.cuh"
#include "humming/memory/cp_async_pipeline.cuh"
#include "humming/mma/fp8_as_f16.cuh"
#include "humming/mma/mma_n16.cuh"
#include "humming/mma/mma_sync8.cuh"
#include "humming/ptx/cp_async.cuh"
#include "humming/ptx/ldmatrix.cuh"

namespace humming {

enum W8a8WeightScale : int {
  kW8ScaleTensor = 0,
  kW8ScaleChannel = 1,
  kW8ScaleBlock = 2,
  kW8ScaleGroup = 3
};

// 8-bit weight codes, stored as they are multiplied.
// F16: whether the sm_90 kernels take the fp16 form of the k32 step (mma/fp8_as_f16.cuh). Not for
// 8-bit e4m3 weights: converted by e4m3_pairs they ran 0.87-0.91x the speed of ptxas's fp8 MMA
// lowering (H200, benchmarks/notes/session14.md).
struct W8Bytes {
  static constexpr bool NIBBLES = false, ZERO = false, F16 = false;
  template <int ROWS, int THREADS>
  using Loader = ByteTileLoader<ROWS, THREADS>;
};

// 4-bit weight codes expanded through the table T0..T3 (code -> 8-bit operand code); ZERO: the
// table is the identity and a per-(group, column) zero point is subtracted (uint4, int8 MMA only).
template <bool ZERO_, u32 T0, u32 T1, u32 T2, u32 T3>
struct W4Nibbles {
  static constexpr bool NIBBLES = true, ZERO = ZERO_;
  using Lut = NibbleLut<T0, T1, T2, T3>;
  static constexpr bool F16 = is_int4_e4m3_table(T0, T1, T2, T3);  // see W8a8Kernel::kF16Mma
  template <int ROWS, int THREADS>
  using Loader = NibbleTileLoader<ROWS, THREADS>;
};

template <int CODE_, bool A_GROUP_, int W_SCALE_, typename W_ = W8Bytes, int W_GROUP_ = 128>
struct W8a8Format {
  static constexpr int CODE = CODE_, W_SCALE = W_SCALE_, W_GROUP = W_GROUP_;
  static constexpr bool A_GROUP = A_GROUP_;
  static constexpr bool W_BLOCK = W_SCALE_ == kW8ScaleBlock;
  static constexpr bool W_GROUPED = W_SCALE_ == kW8ScaleGroup;
  using W = W_;
  static constexpr bool PROMOTE = CODE_ == kCode8E4m3 || A_GROUP_ || W_BLOCK || W_GROUPED;
  // K depth between promotions: one 128-deep iteration, or one weight group when it is shorter.
  static constexpr int PROMOTE_K = W_GROUPED && W_GROUP_ < 128 ? W_GROUP_ : 128;
  static_assert(!W_GROUPED || (W_GROUP_ % 32 == 0 && (128 % W_GROUP_ == 0 || W_GROUP_ % 128 == 0)),
                "weight groups are 32, 64 or a multiple of 128 deep (whole k32 MMA steps)");
  static_assert(!W_::ZERO || (W_GROUPED && CODE_ == kCode8Int8),
                "zero points need group scales and int8 activations");
  static_assert(!HM_PPU_LAYOUT || CODE_ == kCode8Int8,
                "the PPU has no fp8 MMA: its dialects render int8 activations only");
};

// SPLIT_K: the kernel may run split along K over gridDim.z (the split path costs registers the
// large tiles do not have, so only the configs that split compile it).
template <int M_FRAGS_, int N_FRAGS_, int WARPS_M_, int WARPS_N_, int STAGES_, bool SPLIT_K_ = false>
struct W8a8Tile {
  static constexpr int M_FRAGS = M_FRAGS_, N_FRAGS = N_FRAGS_, WARPS_M = WARPS_M_;
  static constexpr int WARPS_N = WARPS_N_, STAGES = STAGES_;
  static constexpr bool SPLIT_K = SPLIT_K_;
  static constexpr int BM = 16 * M_FRAGS * WARPS_M, BN = 8 * N_FRAGS * WARPS_N, BK = 128;
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
  // CTAs per SM the registers are capped for: four of the decode tile (one 16-row tile of tokens,
  // 128 threads; W4A8 took 150 registers and three CTAs otherwise, four ran 1.09-1.33x faster at
  // decode on the H200, benchmarks/notes/session14.md), one of the others (the 128-thread int8
  // prefill tile spills under the cap) and on the PPU (not measured there).
  static constexpr int MIN_BLOCKS = !HM_PPU_LAYOUT && BM == 16 && THREADS <= 128 ? 4 : 1;
  static_assert(N_FRAGS % 2 == 0, "B fragments are loaded two n8 blocks per ldmatrix.x4");
  static_assert(STAGES >= 2, "the pipeline overwrites the previous stage's buffer: STAGES >= 2");
};

template <typename Fmt, typename Tile, typename OutT, bool BIAS>
struct W8a8Kernel {
  static constexpr int MF = Tile::M_FRAGS, NF = Tile::N_FRAGS, BM = Tile::BM, BN = Tile::BN;
  static constexpr int BK = Tile::BK, THREADS = Tile::THREADS, STAGES = Tile::STAGES;
  static constexpr int ACC = MF * NF * 4, TOTAL = Fmt::PROMOTE ? ACC : 1;
  static constexpr int KS_PER_PROMOTE = Fmt::PROMOTE_K / 32;
  static_assert(!Fmt::W_BLOCK || 128 % BN == 0, "a CTA's columns must lie in one 128-row weight block");
  using W = typename Fmt::W;
  using Mma = Mma16832<Fmt::CODE>;
  // E4M3 x int4 on sm_90: two fp16 MMAs per k32 step (mma/fp8_as_f16.cuh says why). E2M1
  // weights stay on the fp8 MMA: their table expansion plus the fp16 conversion ran 1.4x slower
  // than ptxas's lowering (H200, benchmarks/notes/session14.md).
  static constexpr bool kF16Mma = HM_FP8_MMA_AS_F16 && !HM_PPU_LAYOUT &&
                                  Fmt::CODE == kCode8E4m3 && W::F16;
  using Acc = typename Mma::Acc;
  // Weight group scales are loaded when their K segment starts, so that their latency hides
  // behind its MMAs: loaded at the promotion they stalled the W4A8 decode kernel on every stage
  // (21% of its warp-stall samples on the H200). Block and activation-group scales are loaded at
  // the promotion: loaded early, FP8_BLOCK128 at decode ran 0.93x (benchmarks/notes/session14.md).
  static constexpr bool kEarlyScales = Fmt::W_GROUPED;
  using ALoader = ByteTileLoader<BM, THREADS>;
  using BLoader = typename W::template Loader<BN, THREADS>;
  static constexpr int kStage = ALoader::kBytes + BLoader::kBytes;
  // Activation-group and weight-block scales travel with each stage (cp.async, after all stages'
  // tiles so the tiles keep their offsets): the promotion reads them from shared memory. Read
  // from global memory there, their latency stalled every warp once per stage: FP8_BLOCK128 at
  // M = 8-16 ran 1.2x longer than at M = 1, whose rows past M skip the loads (H200, session 28).
  // Per stage: the tile rows' group scales (A_GROUP), then the CTA's one weight block scale. Not
  // in the 128-row tile, whose 255 registers then spill (NVRTC 13.5).
  static constexpr bool kStagedFactors = (Fmt::A_GROUP || Fmt::W_BLOCK) && BM <= 64;
  static constexpr int kFactorBlock = Fmt::A_GROUP ? BM : 0;  // index of the block scale
  static constexpr int kFactors = kStagedFactors ? (kFactorBlock + Fmt::W_BLOCK + 3) / 4 * 16 : 0;
  static constexpr int kSmem = (kStage + kFactors) * STAGES;
  static constexpr int EPI_SCALE =
      Fmt::W_SCALE == kW8ScaleChannel ? kEpiScaleChannel
                                      : (Fmt::W_SCALE == kW8ScaleTensor ? kEpiScaleTensor : kEpiScaleNone);

  struct Args {
    const char* a;          // [M, K] codes
    const float* a_scales;  // [G, M]
    const char* w;          // [N, K] codes | [N, ceil(K/128) * 64] nibbles
    const float* w_scales;  // [1] | [N] | [ceil(N/128), ws_ld] | [ceil(K/W_GROUP), N]
    const u8* zeros;        // [ceil(K/W_GROUP), N] (W::ZERO only)
    const float* bias;      // [N]
    OutT* out;
    int M, N, K, ldc, ws_ld;
    // split-K over gridDim.z (the MoE and W4A4 kernels that reuse these stages leave them unset)
    float* workspace;
    int* counters;
    int iters_per_split;
  };

  // First accumulator of this lane's pair (rows g + 8h, two columns) in fragment (mf, nf). sm80
  // order: one 4-register n8 block after the other. PPU dialects: one 8-register N=16 block per
  // two n8 blocks, its pairs enumerating N before M (mma_n16.cuh).
  HM_DEVICE static constexpr int acc_slot(int mf, int nf, int h) {
#if HM_PPU_LAYOUT
    return (mf * NF + (nf & ~1)) * 4 + 4 * h + 2 * (nf & 1);
#else
    return (mf * NF + nf) * 4 + 2 * h;
#endif
  }

  // Output column of this lane's accumulator e (0, 1) in the n8 block starting at column n8. The
  // emulation's sm80 MMA keeps B columns in the PPU weight row order, which the PPU's own MMA
  // undoes (mma_n16.cuh, ppu_b_row).
  HM_DEVICE static int out_col(int n8, int lane, int e) {
#if HUMMING_DIALECT == HM_DIALECT_PPU_EMULATION
    return n8 + ppu_b_row((lane % 4) * 2 + e);
#else
    return n8 + (lane % 4) * 2 + e;
#endif
  }

  HM_DEVICE static void load_stage(const Args& a, char* smem, int buf, int it, int m0, int n0,
                                   int tid, u64 policy) {
    load_acts(a, smem, buf, it, m0, tid, policy);
    load_weights(a, smem, buf, it, n0, tid, policy);
  }

  // A stage's copies in the PDL pipeline's two parts (memory/cp_async_pipeline.cuh): the weight
  // tile, which no earlier kernel writes, and the activation codes (the quantizer's output).
  HM_DEVICE static void load_acts(const Args& a, char* smem, int buf, int it, int m0, int tid,
                                  u64 policy) {
    ALoader::template load<false>(smem + buf * kStage, a.a, m0, it * BK, a.M, a.K, a.K, tid,
                                  policy);
    if constexpr (kStagedFactors && Fmt::A_GROUP) {
      float* f = reinterpret_cast<float*>(smem + factor_offset(buf));
      const float* group = a.a_scales + static_cast<long long>(it) * a.M;
#pragma unroll  // a constant trip count: `r += THREADS` from tid compiled to a general loop
      for (int i = 0; i < ceil_div(BM, THREADS); ++i) {
        const int r = tid + i * THREADS;
        if (r < BM) cp_async4(f + r, group + m0 + r, m0 + r < a.M);
      }
    }
  }

  // Byte offset of stage buf's factors (kStagedFactors): BM activation-group scales, then the
  // weight block scale.
  HM_DEVICE static constexpr int factor_offset(int buf) { return STAGES * kStage + buf * kFactors; }

  HM_DEVICE static void load_weights(const Args& a, char* smem, int buf, int it, int n0, int tid,
                                     u64 policy) {
    char* b = smem + buf * kStage + ALoader::kBytes;
    if constexpr (W::NIBBLES) {
      BLoader::load(b, a.w, n0, it * BK, a.N, ceil_div(a.K, BK) * (BK / 2), tid, policy);
    } else {
      BLoader::template load<true>(b, a.w, n0, it * BK, a.N, a.K, a.K, tid, policy);
    }
    if constexpr (kStagedFactors && Fmt::W_BLOCK) {
      if (tid == 0) {
        const float* block = a.w_scales + static_cast<long long>(n0 / 128) * a.ws_ld + it;
        cp_async4(reinterpret_cast<float*>(smem + factor_offset(buf)) + kFactorBlock, block, true);
      }
    }
  }

  // B fragments of k32 step ks from 8-bit rows: lanes 0-7 address columns 0-7, K bytes 0-15 (b0 of
  // block 2p); 8-15 bytes 16-31 (its b1); 16-23 and 24-31 the same for block 2p + 1.
  HM_DEVICE static void byte_frags(u32 (&bf)[NF][2], const char* b_s, int ks, int wn, int lane) {
#pragma unroll
    for (int p = 0; p < NF / 2; ++p) {
      const int row = (wn * NF + 2 * p) * 8 + ((lane >> 4) << 3) + (lane & 7);
      u32 r[4];
      ldmatrix_x4(r, b_s + BLoader::offset(row, ks * 2 + ((lane >> 3) & 1)));
      bf[2 * p][0] = r[0], bf[2 * p][1] = r[1], bf[2 * p + 1][0] = r[2], bf[2 * p + 1][1] = r[3];
    }
  }

  // Zero points of this lane's B columns for the group holding K offset k (0 past N or K).
  HM_DEVICE static void load_zeros(u32 (&zero)[NF], const Args& a, int k, int n0, int wn,
                                   int lane) {
#pragma unroll
    for (int nf = 0; nf < NF; ++nf) {
      const int n = n0 + (wn * NF + nf) * 8 + lane / 4;
      const bool ok = n < a.N && k < a.K;
      zero[nf] = ok ? a.zeros[static_cast<long long>(k / Fmt::W_GROUP) * a.N + n] : 0u;
    }
  }

  HM_DEVICE static void compute_stage(Acc (&acc)[ACC], float (&total)[TOTAL], const Args& a,
                                      const char* smem, int buf, int it, int m0, int n0, int wm,
                                      int wn, int lane) {
    const char* a_s = smem + buf * kStage;
    const char* b_s = a_s + ALoader::kBytes;
    // W4: one 16-byte chunk per column holds the lane's words for all four k32 steps.
    uint4 nib[W::NIBBLES ? NF : 1];
    u32 zero[NF];
    if constexpr (W::NIBBLES) {
#pragma unroll
      for (int nf = 0; nf < NF; ++nf) {
        const int row = (wn * NF + nf) * 8 + lane / 4;
        nib[nf] = *reinterpret_cast<const uint4*>(b_s + BLoader::offset(row, lane % 4));
      }
    }
    float ws[NF][2];  // kEarlyScales: the weight scales of the K segment being summed
#pragma unroll
    for (int ks = 0; ks < BK / 32; ++ks) {
      if constexpr (kEarlyScales) {
        const int k0 = it * BK + ks * 32;
        if (ks % KS_PER_PROMOTE == 0 && k0 < a.K) column_scales(ws, a, k0, n0, wn, lane);
      }
      u32 af[MF][4], bf[NF][2];
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
        const int row = (wm * MF + mf) * 16 + (lane & 15);
        ldmatrix_x4(af[mf], a_s + ALoader::offset(row, ks * 2 + (lane >> 4)));
      }
      if constexpr (kF16Mma) {
        u32 ah[MF][8];
#pragma unroll
        for (int mf = 0; mf < MF; ++mf) e4m3_a_halves(af[mf], ah[mf]);
        const u32 magic2 = pinned_constant(Int4::kMagic2, a.K);
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          u32 p[4];
          int4_pairs(reinterpret_cast<const u32*>(&nib[nf])[ks], p, magic2);
#pragma unroll
          for (int mf = 0; mf < MF; ++mf) {
            mma_k32_as_f16(*reinterpret_cast<float(*)[4]>(&acc[(mf * NF + nf) * 4]), ah[mf], p);
          }
        }
      } else if constexpr (W::NIBBLES) {
        if constexpr (W::ZERO) {
          if (ks % KS_PER_PROMOTE == 0) load_zeros(zero, a, it * BK + ks * 32, n0, wn, lane);
        }
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          W::Lut::expand(reinterpret_cast<const u32*>(&nib[nf])[ks], bf[nf][0], bf[nf][1]);
          if constexpr (W::ZERO) {
            bf[nf][0] = sub_zero4(bf[nf][0], zero[nf]);
            bf[nf][1] = sub_zero4(bf[nf][1], zero[nf]);
          }
        }
      } else {
        byte_frags(bf, b_s, ks, wn, lane);
      }
#if HM_PPU_LAYOUT
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
        for (int p = 0; p < NF / 2; ++p) {
          const u32 b[4] = {bf[2 * p][0], bf[2 * p][1], bf[2 * p + 1][0], bf[2 * p + 1][1]};
          Mma16n16k32Int8::run(*reinterpret_cast<int(*)[8]>(&acc[(mf * NF + 2 * p) * 4]), af[mf],
                               b);
        }
      }
#else
      if constexpr (!kF16Mma) {
#pragma unroll
        for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
          for (int nf = 0; nf < NF; ++nf) {
            Mma::run(*reinterpret_cast<Acc(*)[4]>(&acc[(mf * NF + nf) * 4]), af[mf], bf[nf][0],
                     bf[nf][1]);
          }
        }
      }
#endif
      if constexpr (Fmt::PROMOTE) {
        if ((ks + 1) % KS_PER_PROMOTE == 0) {
          const int k0 = it * BK + (ks + 1) * 32 - Fmt::PROMOTE_K;
          const float* staged = reinterpret_cast<const float*>(smem + factor_offset(buf));
          promote(total, acc, ws, staged, a, k0, m0, n0, wm, wn, lane);
        }
      }
    }
  }

  // Weight scale of each of this lane's accumulator columns for the K segment at k0.
  HM_DEVICE static void column_scales(float (&ws)[NF][2], const Args& a, int k0, int n0, int wn,
                                      int lane) {
#pragma unroll
    for (int nf = 0; nf < NF; ++nf) {
      const int n = n0 + (wn * NF + nf) * 8 + (lane % 4) * 2;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if constexpr (Fmt::W_GROUPED) {
          const long long g = k0 / Fmt::W_GROUP;
#if HUMMING_DIALECT == HM_DIALECT_PPU_EMULATION
          const int c = out_col(n0 + (wn * NF + nf) * 8, lane, e);
          ws[nf][e] = c < a.N ? a.w_scales[g * a.N + c] : 0.f;
#else
          ws[nf][e] = n + e < a.N ? a.w_scales[g * a.N + n + e] : 0.f;
#endif
        } else if constexpr (Fmt::W_BLOCK) {
          ws[nf][e] = a.w_scales[static_cast<long long>(n0 / 128) * a.ws_ld + k0 / 128];
        } else {
          ws[nf][e] = 1.f;
        }
      }
    }
  }

  // total += acc * (group scale of the row) * (group / block scale of the column); acc = 0. The
  // segment at k0 covers K offsets [k0, k0 + PROMOTE_K); past K it holds no group and sums zeros.
  // `early`: the column scales compute_stage loaded when the segment started (kEarlyScales);
  // `staged`: the stage's factors (kStagedFactors).
  HM_DEVICE static void promote(float (&total)[TOTAL], Acc (&acc)[ACC], const float (&early)[NF][2],
                                const float* staged, const Args& a, int k0, int m0, int n0, int wm,
                                int wn, int lane) {
    const bool live = k0 < a.K;
    float ws[NF][2];
    if constexpr (kEarlyScales) {
#pragma unroll
      for (int nf = 0; nf < NF; ++nf) ws[nf][0] = early[nf][0], ws[nf][1] = early[nf][1];
    } else if constexpr (kStagedFactors && Fmt::W_BLOCK) {
      const float block = staged[kFactorBlock];
#pragma unroll
      for (int nf = 0; nf < NF; ++nf) ws[nf][0] = ws[nf][1] = block;
    } else {
      if (live) column_scales(ws, a, k0, n0, wn, lane);
    }
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float f = live ? 1.f : 0.f;
        if constexpr (Fmt::A_GROUP) {  // rows past M: zeros (their sums are never stored)
          const int r = (wm * MF + mf) * 16 + lane / 4 + 8 * h;
          if constexpr (kStagedFactors) {
            if (live) f = staged[r];
          } else {
            const int m = m0 + r;
            if (live) f = m < a.M ? a.a_scales[static_cast<long long>(k0 / 128) * a.M + m] : 0.f;
          }
        }
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          Acc* c = &acc[acc_slot(mf, nf, h)];
          float* t = &total[acc_slot(mf, nf, h)];
          if (live) {
            t[0] += static_cast<float>(c[0]) * (f * ws[nf][0]);
            t[1] += static_cast<float>(c[1]) * (f * ws[nf][1]);
          }
          c[0] = c[1] = Acc(0);
        }
      }
    }
  }

  HM_DEVICE static void store(const Args& a, const float (&v)[ACC], int m0, int n0, int wm, int wn,
                              int lane) {
    Epilogue<OutT, EPI_SCALE, false, BIAS> epi{a.w_scales, nullptr, a.bias};
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + (wm * MF + mf) * 16 + lane / 4 + 8 * h;
        if (m >= a.M) continue;
        const float as = Fmt::A_GROUP ? 1.f : a.a_scales[m];
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          const float* c = &v[acc_slot(mf, nf, h)];
          const int n8 = n0 + (wn * NF + nf) * 8;
#if HUMMING_DIALECT == HM_DIALECT_PPU_EMULATION
          epi.store_one(a.out, a.ldc, a.M, a.N, m, out_col(n8, lane, 0), c[0] * as, 1.f);
          epi.store_one(a.out, a.ldc, a.M, a.N, m, out_col(n8, lane, 1), c[1] * as, 1.f);
#else
          epi.store_pair(a.out, a.ldc, a.M, a.N, m, out_col(n8, lane, 0), c[0] * as, c[1] * as,
                         1.f);
#endif
        }
      }
    }
  }

  // Cross-CTA split-K sum of this CTA's partial `v` (every warp owns its accumulators); true in
  // the CTA that then holds the tile's full sum and stores it. The "last split" flag reuses the
  // pipeline's shared memory, written only after the reducer's first barrier (every warp is past
  // its last stage then) and with no static shared memory, which would not fit beside a
  // 48 KB dynamic footprint that has not opted in to more.
  template <typename V>
  HM_DEVICE static bool reduce_splits(V (&v)[ACC], const Args& a, char* smem, int warp, int lane) {
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    return SplitKReducer<ACC, Tile::WARPS_M * Tile::WARPS_N>::reduce(
        v, true, warp, lane, a.workspace, a.counters, tile, blockIdx.z, gridDim.z,
        reinterpret_cast<int*>(smem));
  }

  // K iterations [blockIdx.z * iters_per_split, ...) of one tile; split-K sums the gridDim.z
  // partials through the workspace (s32 sums stay exact: they are added as ints).
  HM_DEVICE static void run(const Args& a) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / Tile::WARPS_N, wn = warp % Tile::WARPS_N;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int iters = ceil_div(a.K, BK);
    const int it0 = Tile::SPLIT_K ? blockIdx.z * a.iters_per_split : 0;
    const int it1 = Tile::SPLIT_K ? min(iters, it0 + a.iters_per_split) : iters;
    const u64 policy = byte_weight_policy();

    Acc acc[ACC];
    float total[TOTAL];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = Acc(0);
#pragma unroll
    for (int i = 0; i < TOTAL; ++i) total[i] = 0.f;
    cp_async_pipeline_pdl<STAGES>(
        it0, it1, [&](int buf, int it) { load_weights(a, smem, buf, it, n0, tid, policy); },
        [&](int buf, int it) { load_acts(a, smem, buf, it, m0, tid, policy); },
        [&](int buf, int it) { load_stage(a, smem, buf, it, m0, n0, tid, policy); },
        [&](int buf, int it) { compute_stage(acc, total, a, smem, buf, it, m0, n0, wm, wn, lane); });
    if constexpr (Fmt::PROMOTE) {
      if constexpr (Tile::SPLIT_K) {
        if (gridDim.z > 1 && !reduce_splits(total, a, smem, warp, lane)) return;
      }
      store(a, total, m0, n0, wm, wn, lane);
    } else {
      if constexpr (Tile::SPLIT_K) {
        if (gridDim.z > 1 && !reduce_splits(acc, a, smem, warp, lane)) return;
      }
      float v[ACC];
#pragma unroll
      for (int i = 0; i < ACC; ++i) v[i] = static_cast<float>(acc[i]);
      store(a, v, m0, n0, wm, wn, lane);
    }
  }
};

}  // namespace humming

// The C entry point every rendered W8A8 translation unit instantiates (parameters in the order of
// humming_cuda.kernels.w8a8.bind.signature).
#define HUMMING_W8A8_ENTRY(NAME, FMT, TILE, OUT, BIAS)                                          \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, TILE::MIN_BLOCKS) NAME(           \
      const char* a, const float* a_scales, const char* w, const float* w_scales,              \
      const unsigned char* zeros, const float* bias, OUT* out, int M, int N, int K, int ldc,   \
      int ws_ld, float* workspace, int* counters, int iters_per_split) {                        \
    using Kern = humming::W8a8Kernel<FMT, TILE, OUT, BIAS>;                                     \
    Kern::run(typename Kern::Args{a, a_scales, w, w_scales, zeros, bias, out, M, N, K, ldc,     \
                                  ws_ld, workspace, counters, iters_per_split});                \
  }
