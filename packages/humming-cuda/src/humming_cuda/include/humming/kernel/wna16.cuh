// WnA16 dense GEMM: out[M, N] = x[M, K] (fp16/bf16) @ dequant(W)[N, K]^T, W any low-bit format.
//
// One CTA computes a BM x BN output tile over a range of K (split-K over gridDim.z). Warps are laid
// out WARPS_N (64 columns each) x WARPS_K (each takes K_STEPS consecutive k16 steps of every stage);
// the WARPS_K partial sums are added in shared memory at the end. A STAGES-deep cp.async pipeline
// feeds shared memory; each warp reads activations with ldmatrix, its weights with one vector load of
// BITS words per lane and layout tile, dequantizes in registers and issues mma.sync.
// HUMMING_DIALECT (arith/dialect.cuh) selects the PPU forms instead: N=16 MMAs with PPU-ordered
// accumulators (mma_block16, store16), its ldmatrix and no evict-first hint; NVIDIA code is unchanged.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/dequant.cuh"
#include "humming/epilogue/epilogue.cuh"
#include "humming/memory/bitplanes.cuh"
#include "humming/memory/cp_async_pipeline.cuh"
#include "humming/memory/tile_loader.cuh"
#include "humming/mma/mma_n16.cuh"
#include "humming/mma/mma_sync.cuh"
#include "humming/ptx/ldmatrix.cuh"

namespace humming {

// What the weights are. GROUP: K extent of one in-loop scale row (0: no in-loop scales; a value >= K
// means one row for the whole K, used for per-channel zero points).
template <int BITS_, int KIND_, int EXP_, int MAN_, int ZERO_, int GROUP_>
struct WeightFormat {
  static constexpr int BITS = BITS_, KIND = KIND_, EXP = EXP_, MAN = MAN_, ZERO = ZERO_;
  static constexpr int GROUP = GROUP_;
};

template <int M_FRAGS_, int WARPS_N_, int WARPS_K_, int K_STEPS_, int STAGES_>
struct TileShape {
  static constexpr int M_FRAGS = M_FRAGS_, WARPS_N = WARPS_N_, WARPS_K = WARPS_K_;
  static constexpr int K_STEPS = K_STEPS_, STAGES = STAGES_;
  static constexpr int BM = 16 * M_FRAGS, BN = 64 * WARPS_N, BK = 16 * K_STEPS * WARPS_K;
  static constexpr int THREADS = 32 * WARPS_N * WARPS_K;
  static_assert(STAGES >= 2, "the pipeline overwrites the previous stage's buffer: STAGES >= 2");
  static_assert((K_STEPS & (K_STEPS - 1)) == 0, "K_STEPS must be a power of two");
};

template <typename OutT, int SCALE, bool GLOBAL, bool BIAS>
struct EpilogueShape {
  using Out = OutT;
  static constexpr int EPI_SCALE = SCALE;
  static constexpr bool HAS_GLOBAL = GLOBAL, HAS_BIAS = BIAS;
};

// Adds the WARPS_K partial sums of ACC accumulators per lane into the wk == 0 warps (shared
// memory `red`, fixed order). Every thread of the CTA calls it.
template <int ACC, int WARPS_N, int WARPS_K>
HM_DEVICE void reduce_warps_k(float (&acc)[ACC], float* red, int wn, int wk, int lane) {
  if constexpr (WARPS_K > 1) {
    if (wk > 0) {
      float* dst = red + ((wk - 1) * WARPS_N + wn) * ACC * 32 + lane;
#pragma unroll
      for (int a = 0; a < ACC; ++a) dst[a * 32] = acc[a];
    }
    __syncthreads();
    if (wk == 0) {
      for (int w = 1; w < WARPS_K; ++w) {
        const float* src = red + ((w - 1) * WARPS_N + wn) * ACC * 32 + lane;
#pragma unroll
        for (int a = 0; a < ACC; ++a) acc[a] += src[a * 32];
      }
    }
  }
}

template <typename T, typename Fmt, typename Tile>
struct Wna16Smem {
  static constexpr int kGroupRows =
      Fmt::GROUP == 0 ? 0 : (Fmt::GROUP >= Tile::BK ? 1 : Tile::BK / Fmt::GROUP);
  static constexpr int kA = Tile::BM * Tile::BK * 2;
  static constexpr int kB = Tile::WARPS_N * (Tile::BK / 16) * 128 * Fmt::BITS;
  static constexpr int kS = kGroupRows * Tile::BN * 2;
  static constexpr int kZ = Fmt::ZERO == kZeroNone ? 0 : kS;
  static constexpr int kStage = kA + kB + kS + kZ;
  static constexpr int kReduce = (Tile::WARPS_K - 1) * Tile::WARPS_N * Tile::M_FRAGS * 32 * 32 * 4;
  // The split-K "last CTA" flag sits in the last 16 bytes: dynamic smem only, so the launch's
  // opt-in size is the whole footprint.
  static constexpr int kFlag = Max<kStage * Tile::STAGES, kReduce>::value;
  static constexpr int kBytes = kFlag + 16;
};

template <typename T, typename Fmt, typename Tile, typename Epi>
struct Wna16Kernel {
  using Smem = Wna16Smem<T, Fmt, Tile>;
  using Dq = Dequant<T, Fmt::KIND, Fmt::BITS, Fmt::EXP, Fmt::MAN, Fmt::ZERO, (Fmt::GROUP > 0)>;
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, THREADS = Tile::THREADS;
  static constexpr int MF = Tile::M_FRAGS, KS = Tile::K_STEPS, STAGES = Tile::STAGES;
  static constexpr int ACC = MF * 8 * 4;
  using ALoader = ActTileLoader<T, BM, BK, THREADS>;
  using BLoader = WeightTileLoader<Fmt::BITS, Tile::WARPS_N, BK / 16, THREADS>;
  using SLoader = GroupRowLoader<T, Smem::kGroupRows == 0 ? 1 : Smem::kGroupRows, BN, THREADS>;

  struct Args {
    const T* x;
    const u32* w;
    const T* scales;
    const T* zeros;
    const float* channel_scale;
    const float* global_scale;
    const float* bias;
    typename Epi::Out* out;
    float* workspace;
    int* counters;
    int M, N, K, lda, ldc, n_pad, k_tiles, groups, iters_per_split;
  };

  HM_DEVICE static T* stage_a(char* smem, int s) {
    return reinterpret_cast<T*>(smem + s * Smem::kStage);
  }
  HM_DEVICE static u32* stage_b(char* smem, int s) {
    return reinterpret_cast<u32*>(smem + s * Smem::kStage + Smem::kA);
  }
  HM_DEVICE static T* stage_s(char* smem, int s) {
    return reinterpret_cast<T*>(smem + s * Smem::kStage + Smem::kA + Smem::kB);
  }
  HM_DEVICE static T* stage_z(char* smem, int s) {
    return reinterpret_cast<T*>(smem + s * Smem::kStage + Smem::kA + Smem::kB + Smem::kS);
  }

  HM_DEVICE static void load_stage(const Args& a, char* smem, int buf, int it, int m0, int n0,
                                   int tid) {
    const int k0 = it * BK;
    ALoader::load(stage_a(smem, buf), a.x, m0, k0, a.M, a.K, a.lda, tid);
    BLoader::load(stage_b(smem, buf), a.w, n0 / 64, k0 / 16, a.n_pad / 64, a.k_tiles, tid);
    if constexpr (Fmt::GROUP > 0) {
      const int g0 = k0 / Fmt::GROUP;
      SLoader::load(stage_s(smem, buf), a.scales, g0, n0, a.groups, a.n_pad, tid);
      if constexpr (Fmt::ZERO != kZeroNone) {
        SLoader::load(stage_z(smem, buf), a.zeros, g0, n0, a.groups, a.n_pad, tid);
      }
    }
  }

  // This lane's 8 group parameters (one per n8 block) from group row `row` of the stage.
  HM_DEVICE static void load_group(GroupParams<T> (&gp)[8], char* smem, int buf, int row, int wn,
                                   int lane) {
    const int off = row * BN + wn * 64 + (lane / 4) * 8;
    const uint4 sv = *reinterpret_cast<const uint4*>(stage_s(smem, buf) + off);
    uint4 zv = make_uint4(0, 0, 0, 0);
    if constexpr (Fmt::ZERO != kZeroNone) zv = *reinterpret_cast<const uint4*>(stage_z(smem, buf) + off);
    const T* s = reinterpret_cast<const T*>(&sv);
    const T* z = reinterpret_cast<const T*>(&zv);
#pragma unroll
    for (int j = 0; j < 8; ++j) gp[j] = Dq::prepare(s[j], z[j]);
  }

  template <int J>
  HM_DEVICE static void mma_block(float (&acc)[ACC], const u32 (&afrag)[MF][4],
                                  const u32 (&words)[Fmt::BITS], const GroupParams<T> (&gp)[8]) {
    const u32 b0 = Dq::apply(code_pair<Fmt::BITS, 2 * J>(words), gp[J]);
    const u32 b1 = Dq::apply(code_pair<Fmt::BITS, 2 * J + 1>(words), gp[J]);
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
      float(&d)[4] = *reinterpret_cast<float(*)[4]>(&acc[(mf * 8 + J) * 4]);
      Mma16816<T>::run(d, afrag[mf], b0, b1);
    }
    if constexpr (J + 1 < 8) mma_block<J + 1>(acc, afrag, words, gp);
  }

  // PPU dialects: n8 blocks 2P and 2P+1 as one N=16 MMA, accumulators in PPU order at
  // acc[(mf * 4 + P) * 8] (the same ACC floats as the sm80 order, differently arranged).
  template <int P>
  HM_DEVICE static void mma_block16(float (&acc)[ACC], const u32 (&afrag)[MF][4],
                                    const u32 (&words)[Fmt::BITS], const GroupParams<T> (&gp)[8]) {
    const u32 b[4] = {Dq::apply(code_pair<Fmt::BITS, 4 * P>(words), gp[2 * P]),
                      Dq::apply(code_pair<Fmt::BITS, 4 * P + 1>(words), gp[2 * P]),
                      Dq::apply(code_pair<Fmt::BITS, 4 * P + 2>(words), gp[2 * P + 1]),
                      Dq::apply(code_pair<Fmt::BITS, 4 * P + 3>(words), gp[2 * P + 1])};
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
      float(&d)[8] = *reinterpret_cast<float(*)[8]>(&acc[(mf * 4 + P) * 8]);
      Mma16n16<T>::run(d, afrag[mf], b);
    }
    if constexpr (P + 1 < 4) mma_block16<P + 1>(acc, afrag, words, gp);
  }

  HM_DEVICE static void compute_stage(float (&acc)[ACC], GroupParams<T> (&gp)[8], char* smem,
                                      int buf, int wn, int wk, int lane) {
    const T* a_s = stage_a(smem, buf);
    const u32* b_s = stage_b(smem, buf);
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const int ss = wk * KS + s;
      if constexpr (Fmt::GROUP > 0) {
        // K_STEPS and GROUP are powers of two, so a warp's k range crosses a group boundary only
        // where 16 * s is a multiple of GROUP.
        if (s == 0 || (Fmt::GROUP <= 16 * KS && (16 * s) % Fmt::GROUP == 0)) {
          load_group(gp, smem, buf, Smem::kGroupRows == 1 ? 0 : (16 * ss) / Fmt::GROUP, wn, lane);
        }
      }
      u32 words[Fmt::BITS];
      load_lane_words<Fmt::BITS>(words, b_s + (wn * (BK / 16) + ss) * 32 * Fmt::BITS, lane);
      u32 afrag[MF][4];
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
        const int row = mf * 16 + (lane & 15);
        ldmatrix_x4(afrag[mf], a_s + ALoader::offset(row, ss * 2 + (lane >> 4)));
      }
#if HM_PPU_LAYOUT
      mma_block16<0>(acc, afrag, words, gp);
#else
      mma_block<0>(acc, afrag, words, gp);
#endif
    }
  }

  HM_DEVICE static void store(const Args& a, const float (&acc)[ACC], int m0, int n0, int wn,
                              int lane) {
    Epilogue<typename Epi::Out, Epi::EPI_SCALE, Epi::HAS_GLOBAL, Epi::HAS_BIAS> epi{
        a.channel_scale, a.global_scale, a.bias};
    const float global = Epi::HAS_GLOBAL ? a.global_scale[0] : 1.f;
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float* c = &acc[(mf * 8 + j) * 4];
        const int m = m0 + mf * 16 + lane / 4;
        const int n = n0 + wn * 64 + j * 8 + (lane % 4) * 2;
        epi.store_pair(a.out, a.ldc, a.M, a.N, m, n, c[0], c[1], global);
        epi.store_pair(a.out, a.ldc, a.M, a.N, m + 8, n, c[2], c[3], global);
      }
    }
  }

  // PPU dialects: accumulator pair q of N=16 block p is M half q/2, n8 block 2p + q%2. The emulation
  // also maps each column through the PPU B-row order its sm80 MMA does not undo (mma_n16.cuh).
  HM_DEVICE static void store16(const Args& a, const float (&acc)[ACC], int m0, int n0, int wn,
                                int lane) {
    Epilogue<typename Epi::Out, Epi::EPI_SCALE, Epi::HAS_GLOBAL, Epi::HAS_BIAS> epi{
        a.channel_scale, a.global_scale, a.bias};
    const float global = Epi::HAS_GLOBAL ? a.global_scale[0] : 1.f;
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const int p = i / 4, q = i % 4;
        const float* c = &acc[(mf * 4 + p) * 8 + 2 * q];
        const int m = m0 + mf * 16 + (q / 2) * 8 + lane / 4;
        const int n8 = n0 + wn * 64 + (2 * p + q % 2) * 8;
        const int col = (lane % 4) * 2;
#if HUMMING_DIALECT == HM_DIALECT_PPU_EMULATION
        epi.store_one(a.out, a.ldc, a.M, a.N, m, n8 + ppu_b_row(col), c[0], global);
        epi.store_one(a.out, a.ldc, a.M, a.N, m, n8 + ppu_b_row(col + 1), c[1], global);
#else
        epi.store_pair(a.out, a.ldc, a.M, a.N, m, n8 + col, c[0], c[1], global);
#endif
      }
    }
  }

  HM_DEVICE static void run(const Args& a) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    int* last_flag = reinterpret_cast<int*>(smem + Smem::kFlag);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wn = warp % Tile::WARPS_N, wk = warp / Tile::WARPS_N;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int iters = ceil_div(a.k_tiles * 16, BK);
    const int it0 = blockIdx.z * a.iters_per_split;
    const int it1 = min(iters, it0 + a.iters_per_split);
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    GroupParams<T> gp[8];
    cp_async_pipeline<STAGES>(
        it0, it1,
        [&](int buf, int it) { load_stage(a, smem, buf, it, m0, n0, tid); },
        [&](int buf, int) { compute_stage(acc, gp, smem, buf, wn, wk, lane); });
    __syncthreads();
    reduce_warps_k<ACC, Tile::WARPS_N, Tile::WARPS_K>(acc, reinterpret_cast<float*>(smem), wn, wk,
                                                      lane);
    if (gridDim.z > 1) {
      const int tile = blockIdx.y * gridDim.x + blockIdx.x;
      if (!SplitKReducer<ACC, Tile::WARPS_N>::reduce(acc, wk == 0, wn, lane, a.workspace,
                                                    a.counters, tile, blockIdx.z, gridDim.z,
                                                    last_flag)) {
        return;
      }
    }
#if HM_PPU_LAYOUT
    if (wk == 0) store16(a, acc, m0, n0, wn, lane);
#else
    if (wk == 0) store(a, acc, m0, n0, wn, lane);
#endif
  }
};

}  // namespace humming

// The parameters of every WnA16 entry point, in the order of humming_cuda.kernels.wna16.bind's
// signature, and the kernel's Args built from them (wna16_decode.cuh's entry takes the same).
#define HUMMING_WNA16_PARAMS(T, EPI)                                                              \
  const T *x, const humming::u32 *w, const T *scales, const T *zeros,                            \
      const float *channel_scale, const float *global_scale, const float *bias,                  \
      typename EPI::Out *out, float *workspace, int *counters, int M, int N, int K, int lda,     \
      int ldc, int n_pad, int k_tiles, int groups, int iters_per_split
#define HUMMING_WNA16_ARGS(KERN)                                                                  \
  typename KERN::Args {                                                                           \
    x, w, scales, zeros, channel_scale, global_scale, bias, out, workspace, counters, M, N, K,   \
        lda, ldc, n_pad, k_tiles, groups, iters_per_split                                        \
  }

// The C entry point every rendered WnA16 translation unit instantiates.
#define HUMMING_WNA16_ENTRY(NAME, T, FMT, TILE, EPI)                                              \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS) NAME(HUMMING_WNA16_PARAMS(T, EPI)) { \
    using Kern = humming::Wna16Kernel<T, FMT, TILE, EPI>;                                         \
    Kern::run(HUMMING_WNA16_ARGS(Kern));                                                          \
  }
