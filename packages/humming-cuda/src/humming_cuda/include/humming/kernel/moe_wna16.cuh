// Indexed MoE WnA16 GEMM (vLLM's fused_moe contract): out[id] = epilogue(x[id / top_k] @ W[e]^T)
// for every routed id of the sorted token ids, e the expert of id's alignment block.
//
// One CTA row = one alignment block of BM sorted ids (block_size == BM), so a CTA uses a single
// expert's weights. The K loop, dequantization and MMAs are the dense WnA16 kernel's own static
// members (kernel/wna16.cuh, included unchanged): only the activation gather, the per-expert weight
// offsets and the scattering epilogue are new here. Blocks past num_tokens_post_padded or with
// expert -1 exit before loading anything. No split-K: a MoE layer already has E times more weight
// tiles than a dense one, which fills the GPU without a cross-CTA reduction.
//
// GLU (w13): the layout interleaves 32 gate columns with the 32 matching up columns in every
// 64-column layout tile, so a lane holds gate (n8 block j) and up (block j + 4) of the same output
// column and the epilogue needs no data exchange. What the epilogue does with (gate, up), or with a
// plain column, is the Act policy type (MoeAct, MoeGlu, MoeSwigluOai below).
#pragma once
#include "humming/arith/activation.cuh"
#include "humming/kernel/wna16.cuh"

namespace humming {

// Epilogue policies (the Act template argument): kGlu says whether the layout pairs gate and up;
// kRowScale whether each routed row's accumulators are first multiplied by its token's activation
// scale (MoeRowScaled below).
template <int CODE>
struct MoeAct {  // a plain activation on every column
  static constexpr bool kGlu = false, kRowScale = false;
  HM_DEVICE static float apply(float v) { return apply_activation<CODE>(v); }
};

template <int CODE>
struct MoeGlu {  // act(gate) * up
  static constexpr bool kGlu = true, kRowScale = false;
  HM_DEVICE static float combine(float g, float u) { return apply_activation<CODE>(g) * u; }
};

// gpt-oss's clamped SwiGLU: gate clamped to <= limit, up to [-limit, limit],
// out = (up + 1) * gate * sigmoid(alpha * gate). LIMIT and ALPHA are the fp32 bit patterns of the
// spec's values (C++17 takes no float template arguments; the bit pattern keeps them exact).
template <u32 LIMIT, u32 ALPHA>
struct MoeSwigluOai {
  static constexpr bool kGlu = true, kRowScale = false;
  HM_DEVICE static float combine(float g, float u) {
    const float limit = __uint_as_float(LIMIT), alpha = __uint_as_float(ALPHA);
    g = fminf(g, limit);
    u = fminf(fmaxf(u, -limit), limit);
    return (u + 1.f) * silu_scaled(g, alpha);
  }
};

// Policy with 8-bit activations run as exact 16-bit codes (humming_cuda.kernels.moe_wna16_a8):
// the accumulators of a routed row are code sums, so they take the token's quantization scale
// (Args::a_scales, one per token) before Inner's epilogue, as the dense activations would have.
template <class Inner>
struct MoeRowScaled : Inner {
  static constexpr bool kRowScale = true;
};

// The activation scale of x row `x_row` (a routed id's token: id / top_k, moe_block_rows'
// src_rows) under policy Act (1 without row scales). Callers pass the row table's entry rather
// than dividing: a division by the runtime top_k per accumulator row cost the decode epilogue
// some thirty instructions each.
template <class Act, typename Args>
HM_DEVICE float moe_row_scale(const Args& a, int x_row) {
  if constexpr (Act::kRowScale) return a.a_scales[x_row];
  return 1.f;
}

// v times the row scale s under policy Act (v itself without row scales: no multiply is emitted).
template <class Act>
HM_DEVICE float moe_row_scaled(float v, float s) {
  if constexpr (Act::kRowScale) return v * s;
  return v;
}

// Fills MoE block blockIdx.y's row table of BM rows: ids[r] is the routed id (M*top_k space) and
// src_rows[r] its x row, -1 for padding slots and dropped ids. Returns the block's expert, or -1
// when the block has no work (past num_tokens_post_padded, or expert -1 / out of range). Shared by
// every indexed MoE kernel (Args: sorted_ids, expert_ids, num_post_padded, numel, num_ids,
// num_experts, top_k).
template <int BM, int THREADS, typename Args>
HM_DEVICE int moe_block_rows(const Args& a, int* src_rows, int* ids, int tid) {
  const int total = min(a.num_post_padded[0], a.num_ids);
  const int first = blockIdx.y * BM;
  if (first >= total) return -1;
  const int e = a.expert_ids[blockIdx.y];
  if (e < 0 || e >= a.num_experts) return -1;
  for (int r = tid; r < BM; r += THREADS) {
    const int id = first + r < total ? a.sorted_ids[first + r] : -1;
    const bool used = id >= 0 && id < a.numel;
    ids[r] = used ? id : -1;
    src_rows[r] = used ? id / a.top_k : -1;
  }
  __syncthreads();
  return e;
}

template <typename T, typename Fmt, typename Tile, typename Epi, typename Act>
struct MoeWna16Kernel {
  using Dense = Wna16Kernel<T, Fmt, Tile, Epi>;
  using Smem = typename Dense::Smem;
  using ALoader =
      GatherTileLoader<ActTileLoader<T, Tile::BM, Tile::BK, Tile::THREADS>, Tile::THREADS, T>;
  using Epilog = Epilogue<typename Epi::Out, Epi::EPI_SCALE, Epi::HAS_GLOBAL, Epi::HAS_BIAS>;
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, THREADS = Tile::THREADS;
  static constexpr int MF = Tile::M_FRAGS, STAGES = Tile::STAGES, ACC = Dense::ACC;
  // The block's source rows and token ids live after the dense kernel's shared memory.
  static constexpr int kRowTable = Smem::kBytes;
  static constexpr int kBytes = kRowTable + 2 * BM * 4;

  struct Args {
    const T* x;
    const u32* w;
    const T* scales;
    const T* zeros;
    const float* channel_scale;
    const float* global_scale;
    const float* bias;
    const float* topk_weights;
    const int* sorted_ids;
    const int* expert_ids;
    const int* num_post_padded;
    typename Epi::Out* out;
    int N, n_out, K, lda, ldc, n_pad, k_tiles, groups, top_k, numel, num_ids, num_experts;
    const float* a_scales;  // [M] per-token activation scales (Act::kRowScale only)
  };

  // Moves every weight pointer to expert e's slice of the [E, ...] tensors.
  HM_DEVICE static typename Dense::Args expert_args(const Args& a, int e) {
    const long long words = static_cast<long long>(a.n_pad / 64) * a.k_tiles * 32 * Fmt::BITS;
    const long long group_vals = static_cast<long long>(a.groups) * a.n_pad;
    const int channels = Epi::EPI_SCALE == kEpiScaleTensor ? 1 : a.n_pad;
    typename Dense::Args d{};
    d.x = a.x;
    d.w = a.w + e * words;
    d.scales = a.scales == nullptr ? nullptr : a.scales + e * group_vals;
    d.zeros = a.zeros == nullptr ? nullptr : a.zeros + e * group_vals;
    d.channel_scale = a.channel_scale == nullptr ? nullptr : a.channel_scale + e * channels;
    d.global_scale = a.global_scale == nullptr ? nullptr : a.global_scale + e;
    d.bias = a.bias == nullptr ? nullptr : a.bias + static_cast<long long>(e) * a.N;
    d.K = a.K;
    d.lda = a.lda;
    d.n_pad = a.n_pad;
    d.k_tiles = a.k_tiles;
    d.groups = a.groups;
    return d;
  }

  HM_DEVICE static void load_stage(const typename Dense::Args& d, char* smem, const int* src_rows,
                                   int buf, int it, int n0, int tid) {
    const int k0 = it * BK;
    ALoader::load(Dense::stage_a(smem, buf), d.x, src_rows, k0, d.K, d.lda, tid);
    Dense::BLoader::load(Dense::stage_b(smem, buf), d.w, n0 / 64, k0 / 16, d.n_pad / 64,
                         d.k_tiles, tid);
    if constexpr (Fmt::GROUP > 0) {
      const int g0 = k0 / Fmt::GROUP;
      Dense::SLoader::load(Dense::stage_s(smem, buf), d.scales, g0, n0, d.groups, d.n_pad, tid);
      if constexpr (Fmt::ZERO != kZeroNone) {
        Dense::SLoader::load(Dense::stage_z(smem, buf), d.zeros, g0, n0, d.groups, d.n_pad, tid);
      }
    }
  }

  // Stores columns c, c + 1 of one output row (c even; c + 1 may fall outside the n_out columns).
  HM_DEVICE static void put_pair(typename Epi::Out* row, int c, int n_out, int ldc, float r0,
                                 float r1) {
    if (c >= n_out) return;
    if (c + 1 < n_out && (ldc & 1) == 0) {
      Epilog::store2(row + c, r0, r1);
      return;
    }
    row[c] = convert_out<typename Epi::Out>(r0);
    if (c + 1 < n_out) row[c + 1] = convert_out<typename Epi::Out>(r1);
  }

  // Fragment pair (v0, v1) of row `id` at packed columns n, n + 1 (plain activation epilogue).
  HM_DEVICE static void store_plain(const Args& a, const Epilog& epi, typename Epi::Out* row,
                                    float w, float s, int n, float v0, float v1, float global) {
    if (n >= a.N) return;
    const float r0 = Act::apply(epi.apply(moe_row_scaled<Act>(v0, s), n, global)) * w;
    const float r1 =
        n + 1 < a.N ? Act::apply(epi.apply(moe_row_scaled<Act>(v1, s), n + 1, global)) * w : 0.f;
    put_pair(row, n, a.n_out, a.ldc, r0, r1);
  }

  HM_DEVICE static void store(const Args& a, const typename Dense::Args& d, const float (&acc)[ACC],
                              const int* src_rows, const int* ids, int n0, int wn, int lane) {
    const Epilog epi{d.channel_scale, d.global_scale, d.bias};
    const float global = Epi::HAS_GLOBAL ? d.global_scale[0] : 1.f;
    const int nw = n0 + wn * 64 + (lane % 4) * 2;
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = mf * 16 + h * 8 + lane / 4, id = ids[r];
        if (id < 0) continue;
        const float w = a.topk_weights == nullptr ? 1.f : a.topk_weights[id];
        const float s = moe_row_scale<Act>(a, src_rows[r]);
        typename Epi::Out* row = a.out + static_cast<long long>(id) * a.ldc;
        if constexpr (Act::kGlu) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float* g = &acc[(mf * 8 + j) * 4 + 2 * h];
            const float* u = &acc[(mf * 8 + j + 4) * 4 + 2 * h];
            const int n = nw + j * 8;
            const float r0 = Act::combine(epi.apply(moe_row_scaled<Act>(g[0], s), n, global),
                                          epi.apply(moe_row_scaled<Act>(u[0], s), n + 32, global)) *
                             w;
            const float r1 =
                Act::combine(epi.apply(moe_row_scaled<Act>(g[1], s), n + 1, global),
                             epi.apply(moe_row_scaled<Act>(u[1], s), n + 33, global)) *
                w;
            put_pair(row, (n0 + wn * 64) / 2 + j * 8 + (lane % 4) * 2, a.n_out, a.ldc, r0, r1);
          }
        } else {
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float* c = &acc[(mf * 8 + j) * 4 + 2 * h];
            store_plain(a, epi, row, w, s, nw + j * 8, c[0], c[1], global);
          }
        }
      }
    }
  }

  HM_DEVICE static void run(const Args& a) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    int* src_rows = reinterpret_cast<int*>(smem + kRowTable);
    int* ids = src_rows + BM;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    // Uniform over the CTA (it reads the same block entries), so the early exit is safe.
    const int e = moe_block_rows<BM, THREADS>(a, src_rows, ids, tid);
    if (e < 0) return;
    const typename Dense::Args d = expert_args(a, e);
    const int wn = warp % Tile::WARPS_N, wk = warp / Tile::WARPS_N;
    const int n0 = blockIdx.x * BN;
    const int iters = ceil_div(a.k_tiles * 16, BK);
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    GroupParams<T> gp[8];
    cp_async_pipeline<STAGES>(
        0, iters,
        [&](int buf, int it) { load_stage(d, smem, src_rows, buf, it, n0, tid); },
        [&](int buf, int) { Dense::compute_stage(acc, gp, smem, buf, wn, wk, lane); });
    __syncthreads();
    reduce_warps_k<ACC, Tile::WARPS_N, Tile::WARPS_K>(acc, reinterpret_cast<float*>(smem), wn, wk,
                                                      lane);
    if (wk == 0) store(a, d, acc, src_rows, ids, n0, wn, lane);
  }
};

}  // namespace humming

// The parameters of a MoE WnA16 entry on the mma.sync K loops (in the order of
// humming_cuda.kernels.moe_wna16.bind.signature), and the kernel's Args from them.
#define HUMMING_MOE_WNA16_PARAMS(T, EPI)                                                          \
  const T *x, const humming::u32 *w, const T *scales, const T *zeros,                            \
      const float *channel_scale, const float *global_scale, const float *bias,                  \
      const float *topk_weights, const int *sorted_ids, const int *expert_ids,                   \
      const int *num_post_padded, typename EPI::Out *out, int N, int n_out, int K, int lda,      \
      int ldc, int n_pad, int k_tiles, int groups, int top_k, int numel, int num_ids,            \
      int num_experts, const float *a_scales
#define HUMMING_MOE_WNA16_ARGS(KERN)                                                              \
  typename KERN::Args {                                                                           \
    x, w, scales, zeros, channel_scale, global_scale, bias, topk_weights, sorted_ids,            \
        expert_ids, num_post_padded, out, N, n_out, K, lda, ldc, n_pad, k_tiles, groups, top_k,  \
        numel, num_ids, num_experts, a_scales                                                    \
  }

// The C entry point of a rendered MoE WnA16 translation unit.
#define HUMMING_MOE_WNA16_ENTRY(NAME, T, FMT, TILE, EPI, ACT)                                     \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS)                                     \
      NAME(HUMMING_MOE_WNA16_PARAMS(T, EPI)) {                                                    \
    using Kern = humming::MoeWna16Kernel<T, FMT, TILE, EPI, ACT>;                                 \
    Kern::run(HUMMING_MOE_WNA16_ARGS(Kern));                                                      \
  }
