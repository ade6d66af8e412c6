// W4A4 dense GEMM: out[M, N] = (a_scale * q_x[M, K]) @ (w_scale * q_w[N, K])^T (+ bias) on the
// 4-bit tensor cores (mma m16n8k64).
//
// Paths (Fmt::PATH):
// - kW4Int4: int4 x int4, s32 accumulation (native on sm_80-sm_89). Activation scales per token
//   (epilogue) or per group of 64/128/256 ([G, M] fp32); weight scales per channel (epilogue) or
//   per group of W_GROUP ([ceil(K/W_GROUP), N] fp32). Group scales apply when partial sums are
//   promoted into fp32 totals every PROMOTE_K of K (the shortest group, at most one stage).
// - kW4Nvfp4 / kW4Mxfp4: e2m1 x e2m1 with the block scales applied by the MMA itself
//   (kind::mxf4nvf4 with ue4m3 per 16 / kind::mxf4 with ue8m0 per 32, sm_120a / sm_121a), f32
//   accumulation over the whole K. Scale codes are row-major bytes, [M, K/V] and [N, K/V]; NVFP4's
//   two per-tensor global scales multiply in the epilogue.
//
// Storage: both operands are packed nibbles, K-contiguous ([M, K/2] and [N, K/2] bytes, even K in
// the low nibble; int4 as two's complement). K is a multiple of 64. A pipeline stage is 256 deep in
// K, i.e. 128 bytes per row: byte for byte the W8A8 stage, so the W8A8 kernel's staging (byte tile
// loader, swizzle, ldmatrix B fragments) is reused as is through a byte view of the problem (K/2
// bytes per row); see mma/mma_sync4.cuh for why the fragments coincide.
#pragma once
#include "humming/kernel/w8a8.cuh"
#include "humming/mma/mma_sync4.cuh"

namespace humming {

template <int PATH_, int A_GROUP_, bool W_GROUPED_, int W_GROUP_>
struct W4a4Format {
  static constexpr int PATH = PATH_, A_GROUP = A_GROUP_, W_GROUP = W_GROUP_;
  static constexpr bool W_GROUPED = W_GROUPED_;
  static constexpr bool SCALED = PATH_ != kW4Int4;  // block scales inside the MMA
  static constexpr bool GLOBAL = PATH_ == kW4Nvfp4;
  static constexpr bool PROMOTE = !SCALED && (A_GROUP_ > 0 || W_GROUPED_);
  static constexpr int A_SEG = A_GROUP_ > 0 ? A_GROUP_ : 256;
  static constexpr int W_SEG = W_GROUPED_ && W_GROUP_ < 256 ? W_GROUP_ : 256;
  static constexpr int PROMOTE_K = A_SEG < W_SEG ? A_SEG : W_SEG;
  static_assert(!SCALED || (A_GROUP_ == 0 && !W_GROUPED_), "fp4 block scales are applied by the MMA");
  static_assert(A_GROUP_ == 0 || A_GROUP_ == 64 || A_GROUP_ == 128 || A_GROUP_ == 256,
                "int4 activation groups are 64, 128 or 256 deep (whole k64 MMA steps in a stage)");
  static_assert(!W_GROUPED_ || (W_GROUP_ % 64 == 0 && (256 % W_GROUP_ == 0 || W_GROUP_ % 256 == 0)),
                "int4 weight groups are 64, 128 or a multiple of 256 deep");
};

template <typename Fmt, typename Tile, typename OutT, bool BIAS>
struct W4a4Kernel {
  static constexpr int MF = Tile::M_FRAGS, NF = Tile::N_FRAGS, BM = Tile::BM, BN = Tile::BN;
  static constexpr int THREADS = Tile::THREADS, STAGES = Tile::STAGES;
  static constexpr int BK = 2 * Tile::BK;  // K elements per stage: 128 bytes of nibbles per row
  static constexpr int ACC = MF * NF * 4, TOTAL = Fmt::PROMOTE ? ACC : 1;
  static constexpr int KS_PER_PROMOTE = Fmt::PROMOTE_K / 64;
  // The byte view: W8A8's staging of 8-bit rows, fed K/2 bytes per row.
  using Bytes = W8a8Kernel<W8a8Format<kCode8Int8, false, kW8ScaleChannel>, Tile, OutT, false>;
  using ALoader = typename Bytes::ALoader;
  using Mma = Mma16864<Fmt::PATH>;
  using Acc = typename Mma::Acc;
  static constexpr int kSmem = Bytes::kSmem;
  static constexpr int EPI_SCALE = !Fmt::SCALED && !Fmt::W_GROUPED ? kEpiScaleChannel : kEpiScaleNone;

  struct Args {
    const char* a;          // [M, K/2] nibbles
    const void* a_scales;   // int4: [G, M] fp32; fp4: [M, K/V] codes
    const float* a_global;  // [1] (NVFP4)
    const char* w;          // [N, K/2] nibbles
    const void* w_scales;   // int4: [N] or [ceil(K/W_GROUP), N] fp32; fp4: [N, K/V] codes
    const float* w_global;  // [1] (NVFP4)
    const float* bias;      // [N]
    OutT* out;
    int M, N, K, ldc;
  };

  // This lane's block-scale registers for the k64 step at K offset k (see mma_sync4.cuh): rows
  // g + 8 (t & 1) from lanes t < 2, column g from lane t = 0; 0 (a zero scale) elsewhere.
  HM_DEVICE static void block_scales(u32 (&sa)[MF], u32 (&sb)[NF], const Args& a, int k, int m0,
                                     int n0, int wm, int wn, int lane) {
    constexpr int V = Mma::kScaleVec;
    const u8* as = static_cast<const u8*>(a.a_scales);
    const u8* bs = static_cast<const u8*>(a.w_scales);
    const long long ld = a.K / V;
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
      const int m = m0 + (wm * MF + mf) * 16 + lane / 4 + 8 * (lane & 1);
      const bool ok = (lane & 3) < 2 && m < a.M && k < a.K;
      const u8* p = as + m * ld + k / V;
      sa[mf] = !ok ? 0u : (V == 16 ? *reinterpret_cast<const u32*>(p)
                                   : *reinterpret_cast<const unsigned short*>(p));
    }
#pragma unroll
    for (int nf = 0; nf < NF; ++nf) {
      const int n = n0 + (wn * NF + nf) * 8 + lane / 4;
      const bool ok = (lane & 3) == 0 && n < a.N && k < a.K;
      const u8* p = bs + n * ld + k / V;
      sb[nf] = !ok ? 0u : (V == 16 ? *reinterpret_cast<const u32*>(p)
                                   : *reinterpret_cast<const unsigned short*>(p));
    }
  }

  // int4: total += acc * (row group scale) * (column group scale); acc = 0. The segment at k0 covers
  // K offsets [k0, k0 + PROMOTE_K); past K it holds only zero-filled K and is dropped.
  HM_DEVICE static void promote(float (&total)[TOTAL], Acc (&acc)[ACC], const Args& a, int k0,
                                int m0, int n0, int wm, int wn, int lane) {
    const bool live = k0 < a.K;
    const float* as = static_cast<const float*>(a.a_scales);
    const float* ws = static_cast<const float*>(a.w_scales);
    float wcol[NF][2];
#pragma unroll
    for (int nf = 0; nf < NF; ++nf) {
      const int n = n0 + (wn * NF + nf) * 8 + (lane % 4) * 2;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const long long g = k0 / Fmt::W_GROUP;
        wcol[nf][e] = !Fmt::W_GROUPED ? 1.f : (live && n + e < a.N ? ws[g * a.N + n + e] : 0.f);
      }
    }
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + (wm * MF + mf) * 16 + lane / 4 + 8 * h;
        float f = live ? 1.f : 0.f;
        if constexpr (Fmt::A_GROUP > 0) {
          // rows past M hold stale shared memory and are never stored
          f = live && m < a.M ? as[static_cast<long long>(k0 / Fmt::A_GROUP) * a.M + m] : 0.f;
        }
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          Acc* c = &acc[(mf * NF + nf) * 4 + 2 * h];
          float* t = &total[(mf * NF + nf) * 4 + 2 * h];
          t[0] += static_cast<float>(c[0]) * (f * wcol[nf][0]);
          t[1] += static_cast<float>(c[1]) * (f * wcol[nf][1]);
          c[0] = c[1] = Acc(0);
        }
      }
    }
  }

  HM_DEVICE static void compute_stage(Acc (&acc)[ACC], float (&total)[TOTAL], const Args& a,
                                      const char* smem, int buf, int it, int m0, int n0, int wm,
                                      int wn, int lane) {
    const char* a_s = smem + buf * Bytes::kStage;
    const char* b_s = a_s + ALoader::kBytes;
#pragma unroll
    for (int ks = 0; ks < BK / 64; ++ks) {
      const int k = it * BK + ks * 64;
      u32 af[MF][4], bf[NF][2], sa[MF] = {}, sb[NF] = {};
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
        const int row = (wm * MF + mf) * 16 + (lane & 15);
        ldmatrix_x4(af[mf], a_s + ALoader::offset(row, ks * 2 + (lane >> 4)));
      }
      Bytes::byte_frags(bf, b_s, ks, wn, lane);
      if constexpr (Fmt::SCALED) block_scales(sa, sb, a, k, m0, n0, wm, wn, lane);
#pragma unroll
      for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          Mma::run(*reinterpret_cast<Acc(*)[4]>(&acc[(mf * NF + nf) * 4]), af[mf], bf[nf][0],
                   bf[nf][1], sa[mf], sb[nf]);
        }
      }
      if constexpr (Fmt::PROMOTE) {
        if ((ks + 1) % KS_PER_PROMOTE == 0) {
          promote(total, acc, a, k + 64 - Fmt::PROMOTE_K, m0, n0, wm, wn, lane);
        }
      }
    }
  }

  HM_DEVICE static void store(const Args& a, const float (&v)[ACC], int m0, int n0, int wm, int wn,
                              int lane) {
    Epilogue<OutT, EPI_SCALE, Fmt::GLOBAL, BIAS> epi{static_cast<const float*>(a.w_scales), nullptr,
                                                     a.bias};
    const float global = Fmt::GLOBAL ? a.a_global[0] * a.w_global[0] : 1.f;
    const float* row_scales = static_cast<const float*>(a.a_scales);
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + (wm * MF + mf) * 16 + lane / 4 + 8 * h;
        if (m >= a.M) continue;
        const float as = Fmt::SCALED || Fmt::A_GROUP > 0 ? 1.f : row_scales[m];
#pragma unroll
        for (int nf = 0; nf < NF; ++nf) {
          const float* c = &v[(mf * NF + nf) * 4 + 2 * h];
          const int n = n0 + (wn * NF + nf) * 8 + (lane % 4) * 2;
          epi.store_pair(a.out, a.ldc, a.M, a.N, m, n, c[0] * as, c[1] * as, global);
        }
      }
    }
  }

  HM_DEVICE static void run(const Args& a) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / Tile::WARPS_N, wn = warp % Tile::WARPS_N;
    const int n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
    const int iters = ceil_div(a.K, BK);
    const u64 policy = byte_weight_policy();
    // K/2 bytes per row; only the fields the staging reads are set.
    const typename Bytes::Args bytes{a.a,   nullptr, a.w,     nullptr, nullptr, nullptr, nullptr,
                                     a.M,   a.N,     a.K / 2, 0,       0};

    Acc acc[ACC];
    float total[TOTAL];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = Acc(0);
#pragma unroll
    for (int i = 0; i < TOTAL; ++i) total[i] = 0.f;
    cp_async_pipeline<STAGES>(
        0, iters,
        [&](int buf, int it) { Bytes::load_stage(bytes, smem, buf, it, m0, n0, tid, policy); },
        [&](int buf, int it) { compute_stage(acc, total, a, smem, buf, it, m0, n0, wm, wn, lane); });
    if constexpr (Fmt::PROMOTE) {
      store(a, total, m0, n0, wm, wn, lane);
    } else {
      float v[ACC];
#pragma unroll
      for (int i = 0; i < ACC; ++i) v[i] = static_cast<float>(acc[i]);
      store(a, v, m0, n0, wm, wn, lane);
    }
  }
};

}  // namespace humming

// The C entry point every rendered W4A4 translation unit instantiates (parameters in the order of
// humming_cuda.kernels.w4a4.bind.signature).
#define HUMMING_W4A4_ENTRY(NAME, FMT, TILE, OUT, BIAS)                                           \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, 1) NAME(                           \
      const char* a, const void* a_scales, const float* a_global, const char* w,                \
      const void* w_scales, const float* w_global, const float* bias, OUT* out, int M, int N,   \
      int K, int ldc) {                                                                          \
    using Kern = humming::W4a4Kernel<FMT, TILE, OUT, BIAS>;                                      \
    Kern::run(typename Kern::Args{a, a_scales, a_global, w, w_scales, w_global, bias, out, M, N, \
                                  K, ldc});                                                      \
  }
