// Indexed MoE GEMM with 8-bit activations (W8A8 / W4A8, vLLM's fused_moe contract):
// out[id] = epilogue(a_scale[t] * q_x[t] @ (w_scale * q_w[e])^T), t = id / top_k, for every routed
// id of the sorted token ids, e the expert of id's alignment block.
//
// x [M, K] is quantized per token first (the module's act_quant entries, one row per token), so the
// codes and their scales are gathered here together: tile row r reads code row src_rows[r] and
// scale a_scales[src_rows[r]]. One CTA row = one alignment block of BM sorted ids (block_size ==
// BM), so a CTA uses one expert. The K loop, MMAs, 4-bit expansion and scale promotion are the dense
// W8A8 kernel's static members (kernel/w8a8.cuh, included unchanged); new here are the gathered
// activation tile, the per-expert weight offsets and the scattering epilogue, whose activation /
// GLU policy types are moe_wna16.cuh's (MoeAct, MoeGlu, MoeSwigluOai). Blocks past
// num_tokens_post_padded or with expert -1 exit before loading anything.
//
// GLU (w13): the layout pairs every 8 gate columns with their 8 up columns (packed columns
// 16j..16j+7 gate, 16j+8..16j+15 up), so n8 blocks 2p and 2p + 1 of a warp are the gate and up of
// the same output columns in the same lane.
//
// Only per-token activation scales (A_GROUP false) and per-tensor / per-channel / group weight
// scales: the dense promotion reads activation group scales by tile row, which a gathered tile does
// not have.
#pragma once
#include "humming/kernel/moe_wna16.cuh"
#include "humming/kernel/w8a8.cuh"

namespace humming {

template <typename Fmt, typename Tile, typename OutT, bool BIAS, typename Act>
struct MoeW8a8Kernel {
  using Dense = W8a8Kernel<Fmt, Tile, OutT, BIAS>;
  using W = typename Fmt::W;
  using ALoader =
      GatherTileLoader<ByteTileLoader<Tile::BM, Tile::THREADS>, Tile::THREADS, char>;
  using Epilog = Epilogue<OutT, Dense::EPI_SCALE, false, BIAS>;
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, THREADS = Tile::THREADS;
  static constexpr int MF = Tile::M_FRAGS, NF = Tile::N_FRAGS, STAGES = Tile::STAGES;
  static constexpr int ACC = Dense::ACC;
  // The block's source rows and token ids live after the dense kernel's pipeline buffers.
  static constexpr int kRowTable = Dense::kSmem;
  static constexpr int kBytes = kRowTable + 2 * BM * 4;
  static_assert(!Fmt::A_GROUP, "gathered tiles take per-token activation scales only");
  static_assert(!Fmt::W_BLOCK, "block weight scales are not offered by the MoE W8A8 kernel");
  static_assert(!Act::kGlu || NF % 2 == 0, "a GLU pairs n8 blocks 2p (gate) and 2p + 1 (up)");

  struct Args {
    const char* a;          // [M, K] codes
    const float* a_scales;  // [1, M]
    const char* w;          // [E, N, K] codes | [E, N, ceil(K/128) * 64] nibbles
    const float* w_scales;  // [E, 1] | [E, N] | [E, ceil(K/W_GROUP), N]
    const u8* zeros;        // [E, ceil(K/W_GROUP), N] (W::ZERO only)
    const float* bias;      // [E, N]
    const float* topk_weights;
    const int* sorted_ids;
    const int* expert_ids;
    const int* num_post_padded;
    OutT* out;
    int M, N, n_out, K, ldc, top_k, numel, num_ids, num_experts;
  };

  // The dense kernel's arguments with every weight pointer moved to expert e's slice.
  HM_DEVICE static typename Dense::Args expert_args(const Args& a, int e) {
    const long long n = a.N;
    const long long w_bytes = W::NIBBLES ? n * ceil_div(a.K, BK) * (BK / 2) : n * a.K;
    const long long groups = Fmt::W_GROUPED ? ceil_div(a.K, Fmt::W_GROUP) : 1;
    const long long scales = Fmt::W_SCALE == kW8ScaleTensor ? 1 : groups * n;
    typename Dense::Args d{};
    d.a = a.a;
    d.a_scales = a.a_scales;
    d.w = a.w + e * w_bytes;
    d.w_scales = a.w_scales + e * scales;
    d.zeros = a.zeros == nullptr ? nullptr : a.zeros + e * groups * n;
    d.bias = a.bias == nullptr ? nullptr : a.bias + e * n;
    d.M = a.M;
    d.N = a.N;
    d.K = a.K;
    d.ldc = a.ldc;
    return d;
  }

  HM_DEVICE static void load_stage(const typename Dense::Args& d, char* smem, const int* src_rows,
                                   int buf, int it, int n0, int tid, u64 policy) {
    char* s = smem + buf * Dense::kStage;
    ALoader::load(s, d.a, src_rows, it * BK, d.K, d.K, tid);
    char* b = s + Dense::ALoader::kBytes;
    if constexpr (W::NIBBLES) {
      Dense::BLoader::load(b, d.w, n0, it * BK, d.N, ceil_div(d.K, BK) * (BK / 2), tid, policy);
    } else {
      Dense::BLoader::template load<true>(b, d.w, n0, it * BK, d.N, d.K, d.K, tid, policy);
    }
  }

  // Stores columns c, c + 1 of one output row (c even; c + 1 may fall outside the n_out columns).
  HM_DEVICE static void put_pair(OutT* row, int c, int n_out, int ldc, float r0, float r1) {
    if (c >= n_out) return;
    if (c + 1 < n_out && (ldc & 1) == 0) {
      Epilog::store2(row + c, r0, r1);
      return;
    }
    row[c] = convert_out<OutT>(r0);
    if (c + 1 < n_out) row[c + 1] = convert_out<OutT>(r1);
  }

  // Output row r of the tile: (value pairs per n8 block) -> scales, bias, Act, router weight.
  HM_DEVICE static void store_row(const Args& a, const Epilog& epi, const float (&v)[ACC], int mf,
                                  int h, OutT* row, float as, float w, int n0, int wn, int lane) {
    if constexpr (Act::kGlu) {
#pragma unroll
      for (int p = 0; p < NF / 2; ++p) {
        const int n16 = n0 + (wn * NF + 2 * p) * 8;  // gate block; its up block follows
        const int n = n16 + (lane % 4) * 2;
        if (n >= a.N) continue;
        const float* g = &v[Dense::acc_slot(mf, 2 * p, h)];
        const float* u = &v[Dense::acc_slot(mf, 2 * p + 1, h)];
        const float r0 =
            Act::combine(epi.apply(g[0] * as, n, 1.f), epi.apply(u[0] * as, n + 8, 1.f)) * w;
        const float r1 =
            Act::combine(epi.apply(g[1] * as, n + 1, 1.f), epi.apply(u[1] * as, n + 9, 1.f)) * w;
        put_pair(row, n16 / 2 + (lane % 4) * 2, a.n_out, a.ldc, r0, r1);
      }
    } else {
#pragma unroll
      for (int nf = 0; nf < NF; ++nf) {
        const int n = n0 + (wn * NF + nf) * 8 + (lane % 4) * 2;
        if (n >= a.N) continue;
        const float* c = &v[Dense::acc_slot(mf, nf, h)];
        const float r0 = Act::apply(epi.apply(c[0] * as, n, 1.f)) * w;
        const float r1 = n + 1 < a.N ? Act::apply(epi.apply(c[1] * as, n + 1, 1.f)) * w : 0.f;
        put_pair(row, n, a.n_out, a.ldc, r0, r1);
      }
    }
  }

  HM_DEVICE static void store(const Args& a, const typename Dense::Args& d, const float (&v)[ACC],
                              const int* src_rows, const int* ids, int n0, int wm, int wn,
                              int lane) {
    const Epilog epi{d.w_scales, nullptr, d.bias};
#pragma unroll
    for (int mf = 0; mf < MF; ++mf) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = (wm * MF + mf) * 16 + lane / 4 + 8 * h;
        const int id = ids[r];
        if (id < 0) continue;
        const float w = a.topk_weights == nullptr ? 1.f : a.topk_weights[id];
        OutT* row = a.out + static_cast<long long>(id) * a.ldc;
        store_row(a, epi, v, mf, h, row, a.a_scales[src_rows[r]], w, n0, wn, lane);
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
    const int wm = warp / Tile::WARPS_N, wn = warp % Tile::WARPS_N;
    const int n0 = blockIdx.x * BN;
    const int iters = ceil_div(a.K, BK);
    const u64 policy = byte_weight_policy();

    typename Dense::Acc acc[ACC];
    float total[Dense::TOTAL];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = typename Dense::Acc(0);
#pragma unroll
    for (int i = 0; i < Dense::TOTAL; ++i) total[i] = 0.f;
    // m0 = 0 in compute_stage: only activation group scales would read rows by it (excluded above)
    cp_async_pipeline<STAGES>(
        0, iters,
        [&](int buf, int it) { load_stage(d, smem, src_rows, buf, it, n0, tid, policy); },
        [&](int buf, int it) {
          Dense::compute_stage(acc, total, d, smem, buf, it, 0, n0, wm, wn, lane);
        });
    if constexpr (Fmt::PROMOTE) {
      store(a, d, total, src_rows, ids, n0, wm, wn, lane);
    } else {
      float v[ACC];
#pragma unroll
      for (int i = 0; i < ACC; ++i) v[i] = static_cast<float>(acc[i]);
      store(a, d, v, src_rows, ids, n0, wm, wn, lane);
    }
  }
};

}  // namespace humming

// The C entry point of a rendered MoE W8A8 translation unit (parameters in the order of
// humming_cuda.kernels.moe_w8a8.bind.signature).
#define HUMMING_MOE_W8A8_ENTRY(NAME, FMT, TILE, OUT, BIAS, ACT)                                    \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, 1) NAME(                            \
      const char* a, const float* a_scales, const char* w, const float* w_scales,                \
      const unsigned char* zeros, const float* bias, const float* topk_weights,                  \
      const int* sorted_ids, const int* expert_ids, const int* num_post_padded, OUT* out, int M, \
      int N, int n_out, int K, int ldc, int top_k, int numel, int num_ids, int num_experts) {    \
    using Kern = humming::MoeW8a8Kernel<FMT, TILE, OUT, BIAS, ACT>;                               \
    Kern::run(typename Kern::Args{a, a_scales, w, w_scales, zeros, bias, topk_weights,           \
                                  sorted_ids, expert_ids, num_post_padded, out, M, N, n_out, K,  \
                                  ldc, top_k, numel, num_ids, num_experts});                     \
  }
