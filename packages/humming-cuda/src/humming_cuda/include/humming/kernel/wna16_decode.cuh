// WnA16 decode GEMM (M <= 8, or M <= 16 with TOKENS = 16): out[M, N] = x[M, K] @ dequant(W)[N,
// K]^T computed as out^T, so the weights are the MMA's A operand and the tokens its n8 side.
//
// Same CTA, stages, shared-memory layout, K-warp and split-K reductions and epilogue as Wna16Kernel
// (kernel/wna16.cuh), same pre-shuffled weight layout. What differs is how stages are copied
// (DecodeStageCopies below) and the inner step:
// - Each m16n8k16 MMA takes 16 weight rows: the layout's B fragments of n8 blocks 2P and 2P+1 are
//   exactly the A fragment of rows 16P..16P+15 (row g is column g of block 2P, row g + 8 column g of
//   block 2P+1), and the tokens come as B from the ldmatrix.x4 wna16 already issues (registers 0
//   and 2 hold tokens 0-7, registers 1 and 3 tokens 8-15). That is half the MMAs of wna16's form,
//   whose 16-row A operand is mostly padding at decode. TOKENS = 16 issues a second MMA per A
//   fragment for tokens 8-15: as many MMAs as wna16's form, but each weight is still dequantized
//   once and scaled once per group, where wna16 is bound by its per-pair dequantization at M 9-16.
// - Weights enter the MMA as their exact codes (q - offset - zero, or the float code's value): the
//   in-loop group scale multiplies each fp32 partial sum once per group and stage instead of every
//   weight pair (accumulator rows are weight columns, so each has one scale).
// - fp16 activations with 4-bit integer codes (without or with integer zero points) read fields 1
//   and 3 of a packed word in place (Dequant::apply_in_place), so a word of four pairs costs one
//   shift instead of three; 3-bit codes join their two bit planes in place (apply_in_place3).
// - The kernel is launched with PDL on sm_90+ (ptx/pdl.cuh): its first stages' weight copies are
//   issued before it waits for the previous kernel in the stream (cp_async_pipeline_pdl).
// Float zero points (w * s - z) are not linear in the scale this way; that form stays with wna16.
#pragma once
#include "humming/kernel/wna16.cuh"

namespace humming {

// One pipeline stage's copies for the decode tile, with each thread's chunk offsets and range
// checks worked out once per CTA: wna16's loaders recompute them every stage, which was about half
// of the decode kernel's main-loop instructions. Stages that lie wholly inside K need no K checks;
// the last, partial one takes wna16's checked loaders.
// Off: the type of the token chunks' offsets in x (an indexed MoE block's gathered rows may lie
// past 2^31 elements: long long).
template <typename T, typename Fmt, typename Tile, typename Epi, int TOKENS, typename Off = int>
struct DecodeStageCopies {
  using Base = Wna16Kernel<T, Fmt, Tile, Epi>;
  using BL = typename Base::BLoader;
  using SL = typename Base::SLoader;
  static constexpr int kAChunksPerRow = Tile::BK / 8;
  // token chunks (16 bytes) per thread: passes of the threads over TOKENS rows
  static constexpr int kAPasses = (TOKENS * kAChunksPerRow + Tile::THREADS - 1) / Tile::THREADS;
  static_assert(SL::kChunks <= Tile::THREADS, "one pass of the threads must cover the group rows");
  static_assert(BL::kPerThread <= 32, "chunk flags are bits of one word");

  Off a_src[kAPasses];  // token chunks: offset in x (without k0), -1: none
  int a_dst[kAPasses];  // and in the stage
  int s_off;         // group-row chunk: element offset in a [groups][n_pad] row block; -1: none
  u32 b_off[BL::kPerThread];  // weight chunks: byte offsets from the tile's first stage byte
  u32 b_ok;                   // bit i: chunk i exists and its 64 columns are inside n_pad

  HM_DEVICE DecodeStageCopies(const typename Base::Args& a, int n0, int tid) {
#pragma unroll
    for (int p = 0; p < kAPasses; ++p) {
      const int c = tid + p * Tile::THREADS, row = c / kAChunksPerRow, chunk = c % kAChunksPerRow;
      const bool token = row < TOKENS && row < a.M;  // -1: no such token (its rows stay unread)
      a_src[p] = token ? row * a.lda + chunk * 8 : -1;
      a_dst[p] = Base::ALoader::offset(token ? row : 0, chunk);
    }
    const int n = n0 + (tid % SL::kChunksPerRow) * 8;
    s_off = tid < SL::kChunks && n < a.n_pad ? (tid / SL::kChunksPerRow) * a.n_pad + n : -1;
    b_ok = 0;
#pragma unroll
    for (int i = 0; i < BL::kPerThread; ++i) {
      const int c = tid + i * Tile::THREADS;
      const int ntl = c / BL::kChunksPerNTile, rem = c % BL::kChunksPerNTile;
      b_off[i] = static_cast<u32>(ntl * a.k_tiles * BL::kTileWords + rem * 4) * 4u;
      if (c < BL::kChunks && n0 / 64 + ntl < a.n_pad / 64) b_ok |= 1u << i;
    }
  }

  // An indexed MoE block's copies (kernel/moe_wna16_decode.cuh): tile row r holds x row rows[r]
  // (-1: none) instead of row r.
  HM_DEVICE DecodeStageCopies(const typename Base::Args& a, int n0, int tid, const int* rows)
      : DecodeStageCopies(a, n0, tid) {
#pragma unroll
    for (int p = 0; p < kAPasses; ++p) {
      const int c = tid + p * Tile::THREADS, row = c / kAChunksPerRow, chunk = c % kAChunksPerRow;
      const int src = row < TOKENS ? rows[row] : -1;
      a_src[p] = src >= 0 ? static_cast<Off>(src) * a.lda + chunk * 8 : -1;
      a_dst[p] = Base::ALoader::offset(src >= 0 ? row : 0, chunk);
    }
  }

  // Whether iteration `it`'s stage lies wholly inside K (the last, partial one takes wna16's
  // checked loaders, which copy the tokens, weights and scales together).
  HM_DEVICE static bool whole(const typename Base::Args& a, int it) {
    return it * Tile::BK + Tile::BK <= a.K;
  }

  // A stage's copies in the PDL pipeline's two parts (memory/cp_async_pipeline.cuh): the weights,
  // scales and zero points of a whole stage, which no earlier kernel writes, then the rest.
  HM_DEVICE void load_early(const typename Base::Args& a, char* smem, int buf, int it, int n0,
                            int tid, u64 policy) const {
    if (whole(a, it)) load_weights(a, smem, buf, it, n0, tid, policy);
  }

  HM_DEVICE void load_late(const typename Base::Args& a, char* smem, int buf, int it, int n0,
                           int tid) const {
    if (whole(a, it)) {
      load_tokens(a, smem, buf, it);
    } else {
      Base::load_stage(a, smem, buf, it, 0, n0, tid);
    }
  }

  // A whole stage's token rows.
  HM_DEVICE void load_tokens(const typename Base::Args& a, char* smem, int buf, int it) const {
    const int k0 = it * Tile::BK;
#pragma unroll
    for (int p = 0; p < kAPasses; ++p) {
      if (a_src[p] >= 0) cp_async16(Base::stage_a(smem, buf) + a_dst[p], a.x + a_src[p] + k0, true);
    }
  }

  // A whole stage's weights (HINT: with `policy`, evict-first), scales and zero points.
  template <bool HINT = true>
  HM_DEVICE void load_weights(const typename Base::Args& a, char* smem, int buf, int it, int n0,
                              int tid, u64 policy) const {
    const int k0 = it * Tile::BK;
    // a byte base (uniform across the CTA) plus each chunk's byte offset: one 64-bit add per
    // copy, where a word offset made ptxas scale every copy's sum by 4 again
    const char* w = reinterpret_cast<const char*>(a.w) +
                    (static_cast<long long>(n0 / 64) * a.k_tiles + it * (Tile::BK / 16)) *
                        (BL::kTileWords * 4);
    u32* b_s = Base::stage_b(smem, buf);
#pragma unroll
    for (int i = 0; i < BL::kPerThread; ++i) {
      if (b_ok & (1u << i)) {
        if constexpr (HINT) {
          cp_async16_stream(b_s + (tid + i * Tile::THREADS) * 4, w + b_off[i], true, policy);
        } else {
          cp_async16(b_s + (tid + i * Tile::THREADS) * 4, w + b_off[i], true);
        }
      }
    }
    if constexpr (Fmt::GROUP > 0) {
      if (s_off >= 0) {
        const long long g = static_cast<long long>(k0 / Fmt::GROUP) * a.n_pad + s_off;
        cp_async16(Base::stage_s(smem, buf) + tid * 8, a.scales + g, true);
        if constexpr (Fmt::ZERO != kZeroNone) {
          cp_async16(Base::stage_z(smem, buf) + tid * 8, a.zeros + g, true);
        }
      }
    }
  }
};

// CTAS: the CTAs per SM the launch caps registers for (the entry's __launch_bounds__).
template <typename T, typename Fmt, typename Tile, typename Epi, int TOKENS, int CTAS = 2>
struct Wna16DecodeKernel {
  using Base = Wna16Kernel<T, Fmt, Tile, Epi>;
  using Args = typename Base::Args;
  using Smem = typename Base::Smem;
  using Exact = Dequant<T, Fmt::KIND, Fmt::BITS, Fmt::EXP, Fmt::MAN, Fmt::ZERO, false>;
  using Tr = typename Exact::Tr;
  static_assert(Tile::M_FRAGS == 1, "the decode form reads one 16-row tile of tokens");
  static_assert(TOKENS == 8 || TOKENS == 16, "one or two n8 blocks of tokens");
  static constexpr int TOKEN_BLOCKS = TOKENS / 8;
  static_assert(Fmt::ZERO != kZeroFloat, "float zero points need the scale inside the dequant");
  // per token block: four 16-row blocks x the m16n8 fragment's 4 floats
  static constexpr int ACC = 4 * 4 * TOKEN_BLOCKS;
  static constexpr bool SCALED = Fmt::GROUP > 0;
  static constexpr int KS = Tile::K_STEPS;
  // fp16 tokens with float weight codes and group scales: the MMA takes the codes' placed bits
  // (value * 2^-s, Dequant::float_placed, s = float_shift()) and the fp32 group scale carries
  // 2^s, one multiply per weight pair fewer. Products of fp16 numbers, subnormal ones
  // included, are exact in the fp32 accumulators and the shift is a power of two, so the sums are
  // the exact weights' times 2^-s. bf16 tokens keep the multiply: their shift (2^120 for
  // e4m3, 2^126 for e2m1) would push the partial sums below fp32's normal range.
  static constexpr bool FOLD_FLOAT =
      SCALED && Fmt::KIND == kWeightFloat && Exact::float_shift() > 0 && Tr::kBias == 15;
  static constexpr float kScaleFold = FOLD_FLOAT ? float(1 << Exact::float_shift()) : 1.f;
  // Pair PAIR of the lane's words as exact 16-bit weights (code - offset - zero, or the code's
  // value). The 4-bit layout holds pair i in word i / 4 at bits 4(i % 4) and 16 + 4(i % 4).
  // magic2: Exact::kMagic2 as a pinned_constant (the in-place forms' operand).
  template <int PAIR>
  HM_DEVICE static u32 weight_pair(const u32 (&words)[Fmt::BITS], const GroupParams<T>& gp,
                                   u32 magic2) {
    if constexpr (Exact::kInPlaceNibbles) {
      constexpr int kField = PAIR % 4;
      const u32 w = kField >= 2 ? words[PAIR / 4] >> 8 : words[PAIR / 4];
      return Exact::template apply_in_place<kField % 2>(w, gp, magic2);
    } else if constexpr (Exact::kInPlaceTriples) {
      // 2-bit plane: pair i in word i / 8 at field i % 8; 1-bit plane: word 2, bit i
      const u32 w0 = PAIR % 8 >= 4 ? words[PAIR / 8] >> 8 : words[PAIR / 8];
      const u32 w1 = PAIR >= 8 ? words[2] >> 8 : words[2];
      return Exact::template apply_in_place3<PAIR % 4, PAIR % 8>(w0, w1, gp, magic2);
    } else if constexpr (FOLD_FLOAT) {
      return as_u32(Exact::float_placed(code_pair<Fmt::BITS, PAIR>(words)));
    } else {
      return Exact::apply(code_pair<Fmt::BITS, PAIR>(words), gp);
    }
  }

  // This lane's zero-point parameters and the fp32 scales of its 8 columns (one per n8 block)
  // from group row `row` of the stage.
  HM_DEVICE static void load_group(GroupParams<T> (&gp)[8], float (&sc)[8], char* smem, int buf,
                                   int row, int wn, int lane) {
    Base::load_group(gp, smem, buf, row, wn, lane);
    const T* s = Base::stage_s(smem, buf) + row * Tile::BN + wn * 64 + (lane / 4) * 8;
#pragma unroll
    for (int j = 0; j < 8; ++j) sc[j] = Tr::to_float(s[j]) * kScaleFold;
  }

  // total += part * (scale of the part's weight row); part = 0. Rows g and g + 8 of block P are
  // columns of n8 blocks 2P and 2P + 1 (accumulators 16b + 4P + e of token block b).
  HM_DEVICE static void flush(float (&total)[ACC], float (&part)[ACC], const float (&sc)[8]) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      total[i] += part[i] * sc[2 * ((i % 16) / 4) + (i % 4) / 2];
      part[i] = 0.f;
    }
  }

  // xf: the tokens' B fragments, k 0-7 and k 8-15 of tokens 0-7 in xf[0] and xf[1], of tokens
  // 8-15 (TOKENS = 16) in xf[2] and xf[3].
  template <int P>
  HM_DEVICE static void mma_rows(float (&acc)[ACC], const u32* xf, const u32 (&words)[Fmt::BITS],
                                 const GroupParams<T> (&gp)[8], u32 magic2) {
    const u32 a[4] = {weight_pair<4 * P>(words, gp[2 * P], magic2),
                      weight_pair<4 * P + 2>(words, gp[2 * P + 1], magic2),
                      weight_pair<4 * P + 1>(words, gp[2 * P], magic2),
                      weight_pair<4 * P + 3>(words, gp[2 * P + 1], magic2)};
    float(&d)[4] = *reinterpret_cast<float(*)[4]>(&acc[P * 4]);
    Mma16816<T>::run(d, a, xf[0], xf[1]);
    if constexpr (TOKEN_BLOCKS == 2) {
      float(&d8)[4] = *reinterpret_cast<float(*)[4]>(&acc[16 + P * 4]);
      Mma16816<T>::run(d8, a, xf[2], xf[3]);
    }
    if constexpr (P + 1 < 4) mma_rows<P + 1>(acc, xf, words, gp, magic2);
  }

  // The B fragments of step s (xf as mma_rows takes it). Matrix j of an ldmatrix.x4 (addressed by
  // lanes 8j..8j+7) lands in register j, and the MMA takes a step's two k halves as adjacent
  // registers. With 8 tokens one x4 covers two steps (k chunks 2ss .. 2ss + 3, loaded at even s;
  // an odd last step loads its two chunks twice); with 16, matrix j is tokens 8(j / 2).. at k half
  // j % 2. Ordered by token first (tokens 0-15 by lane), a step's halves would land in registers
  // 0 and 2, which costs ptxas a move per MMA, and half of each 8-token load would be token rows
  // 8-15, which do not exist. At three CTAs per SM (168 registers) the 16-token tile keeps that
  // order: ordered by k half it spilled 16 bytes on sm_80-89.
  HM_DEVICE static void load_tokens_b(u32 (&xf)[4], const T* a_s, int s, int ss, int lane) {
    if constexpr (TOKEN_BLOCKS == 2 && CTAS >= 3) {
      u32 r[4];
      ldmatrix_x4(r, a_s + Base::ALoader::offset(lane & 15, ss * 2 + (lane >> 4)));
      xf[0] = r[0], xf[1] = r[2], xf[2] = r[1], xf[3] = r[3];
    } else if constexpr (TOKEN_BLOCKS == 2) {
      ldmatrix_x4(xf, a_s + Base::ALoader::offset((lane & 7) + 8 * (lane >> 4),
                                                  ss * 2 + ((lane >> 3) & 1)));
    } else if (s % 2 == 0) {
      const int span = s + 1 < KS ? 4 : 2;  // k chunks this load covers
      ldmatrix_x4(xf, a_s + Base::ALoader::offset(lane & 7, ss * 2 + (lane >> 3) % span));
    }
  }

  HM_DEVICE static void compute_stage(float (&total)[ACC], float (&part)[ACC],
                                      GroupParams<T> (&gp)[8], float (&sc)[8], char* smem,
                                      int buf, int wn, int wk, int lane, u32 magic2) {
    const T* a_s = Base::stage_a(smem, buf);
    const u32* b_s = Base::stage_b(smem, buf);
    u32 xf[4];
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const int ss = wk * KS + s;
      if constexpr (SCALED) {
        // as in Wna16Kernel: a warp's k range crosses a group boundary only where 16 * s is a
        // multiple of GROUP; the partial sums of the group that ends there take its scale first
        const bool boundary = Fmt::GROUP <= 16 * KS && (16 * s) % Fmt::GROUP == 0;
        if (s == 0 || boundary) {
          if (s != 0) flush(total, part, sc);
          load_group(gp, sc, smem, buf, Smem::kGroupRows == 1 ? 0 : (16 * ss) / Fmt::GROUP, wn,
                     lane);
        }
      }
      u32 words[Fmt::BITS];
      load_lane_words<Fmt::BITS>(words, b_s + (wn * (Tile::BK / 16) + ss) * 32 * Fmt::BITS, lane);
      load_tokens_b(xf, a_s, s, ss, lane);
      const u32* b = TOKEN_BLOCKS == 1 ? xf + 2 * (s % 2) : xf;
      if constexpr (SCALED) {
        mma_rows<0>(part, b, words, gp, magic2);
      } else {
        mma_rows<0>(total, b, words, gp, magic2);
      }
    }
    if constexpr (SCALED) flush(total, part, sc);
  }

  // Accumulator 16b + 4P + e: weight column 16P + 8(e / 2) + g of the warp, token 8b + 2t + e % 2.
  HM_DEVICE static void store(const Args& a, const float (&acc)[ACC], int m0, int n0, int wn,
                              int lane) {
    Epilogue<typename Epi::Out, Epi::EPI_SCALE, Epi::HAS_GLOBAL, Epi::HAS_BIAS> epi{
        a.channel_scale, a.global_scale, a.bias};
    const float global = Epi::HAS_GLOBAL ? a.global_scale[0] : 1.f;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      const int n = n0 + wn * 64 + 16 * ((i % 16) / 4) + 8 * ((i % 4) / 2) + g;
      epi.store_one(a.out, a.ldc, a.M, a.N, m0 + 8 * (i / 16) + 2 * t + i % 2, n, acc[i], global);
    }
  }

  HM_DEVICE static void run(const Args& a) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wn = warp % Tile::WARPS_N, wk = warp / Tile::WARPS_N;
    const int n0 = blockIdx.x * Tile::BN, m0 = blockIdx.y * Tile::BM;
    const int iters = ceil_div(a.k_tiles * 16, Tile::BK);
    const int it0 = blockIdx.z * a.iters_per_split;
    const int it1 = min(iters, it0 + a.iters_per_split);
    const u64 policy = evict_first_policy();
    const DecodeStageCopies<T, Fmt, Tile, Epi, TOKENS> copies(a, n0, tid);

    float total[ACC], part[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] = part[i] = 0.f;
    GroupParams<T> gp[8];
    float sc[8];
    const u32 magic2 = pinned_constant(Exact::kMagic2, a.k_tiles);
    // PDL: the first stages' weight copies go out before the previous kernel has finished
    cp_async_pipeline_pdl<Tile::STAGES>(
        it0, it1,
        [&](int buf, int it) { copies.load_early(a, smem, buf, it, n0, tid, policy); },
        [&](int buf, int it) { copies.load_late(a, smem, buf, it, n0, tid); },
        [&](int buf, int it) {
          copies.load_early(a, smem, buf, it, n0, tid, policy);
          copies.load_late(a, smem, buf, it, n0, tid);
        },
        [&](int buf, int) { compute_stage(total, part, gp, sc, smem, buf, wn, wk, lane, magic2); });
    __syncthreads();
    reduce_warps_k<ACC, Tile::WARPS_N, Tile::WARPS_K>(total, reinterpret_cast<float*>(smem), wn,
                                                        wk, lane);
    if (gridDim.z > 1) {
      const int tile = blockIdx.y * gridDim.x + blockIdx.x;
      if (!SplitKReducer<ACC, Tile::WARPS_N>::reduce(total, wk == 0, wn, lane, a.workspace,
                                                    a.counters, tile, blockIdx.z, gridDim.z,
                                                    reinterpret_cast<int*>(smem + Smem::kFlag))) {
        return;
      }
    }
    if (wk == 0) store(a, total, m0, n0, wn, lane);
  }
};

}  // namespace humming

// The C entry point of a rendered decode unit: HUMMING_WNA16_ENTRY's parameters (the same host
// binding, humming_cuda.kernels.wna16.bind). Registers are capped for CTAS CTAs per SM: 2, what the
// decode tile is sized for (its split-K fills about two per SM), or 3 for the 128-thread two-block
// tile on grids longer than a wave of two (wna16_decode.heuristics).
#define HUMMING_WNA16_DECODE_ENTRY(NAME, T, FMT, TILE, EPI, TOKENS, CTAS)                         \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, CTAS)                               \
      NAME(HUMMING_WNA16_PARAMS(T, EPI)) {                                                        \
    using Kern = humming::Wna16DecodeKernel<T, FMT, TILE, EPI, TOKENS, CTAS>;                     \
    Kern::run(HUMMING_WNA16_ARGS(Kern));                                                          \
  }
