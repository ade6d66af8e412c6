// Indexed MoE WnA16 GEMM for few rows per expert (humming_cuda.kernels.moe_wna16 with tokens = 8):
// the decode kernel's K loop (kernel/wna16_decode.cuh: the weights are the MMA's A operand, each
// dequantized once, the block's TOKENS gathered rows its n8 side) on one routing alignment block
// of TOKENS sorted ids per CTA row, with MoeWna16Kernel's contract, expert slices, gathered K-tail
// stage and epilogue policies (kernel/moe_wna16.cuh). TOKENS = 16 compiles too, but was slower
// than the dense K loop where it would be chosen (benchmarks/notes/session13.md).
//
// Why: at decode an expert sees a handful of rows, and the mma.sync MoE kernel's 16-row A operand
// is mostly padding, its copies recomputed every stage; the dense decode kernel avoids both.
//
// PDL: on sm_90+ the host always launches it with the PDL attribute. `routing_ready` (a launch
// parameter) says the routing was complete before the previous kernel in the stream began
// (fused_moe's w2, whose routing came before w13): then the kernel reads the routing and issues
// the first stages' weight copies before griddepcontrol.wait. Otherwise (w13 right after
// moe_align, which lets it launch at once) it waits first, and gains only an early start. After
// the wait it lets the next kernel launch. Without the attribute the wait returns at once.
//
// The copies gather: each thread's token chunks are read from the block's row table once
// (DecodeStageCopies with `rows`). The weight copies take no evict-first hint: ptxas 13.0
// miscompiled them with it in the two-warp-column tile (an LDGSTS naming unwritten uniform
// registers, CUDA_ERROR_ILLEGAL_INSTRUCTION on the H200; tests/sass_audit.py), and an expert's
// weights may serve its next alignment block from L2.
//
// The accumulators are out^T: accumulator i of a lane holds weight column 16P + 8(i % 4 / 2) + g
// of the warp's 64 (P = i % 16 / 4, g = lane / 4) for token 8(i / 16) + 2(lane % 4) + i % 2 of
// the block. With a GLU the layout puts a 64-column tile's 32 gate columns before their 32 up
// columns, so gate (P = 0, 1) and up (P + 2, accumulator i + 8) of one output column sit in the
// same lane.
#pragma once
#include "humming/kernel/moe_wna16.cuh"
#include "humming/kernel/wna16_decode.cuh"

namespace humming {

template <typename T, typename Fmt, typename Tile, typename Epi, typename Act, int TOKENS>
struct MoeWna16DecodeKernel {
  using Moe = MoeWna16Kernel<T, Fmt, Tile, Epi, Act>;
  using Dec = Wna16DecodeKernel<T, Fmt, Tile, Epi, TOKENS>;
  using Args = typename Moe::Args;
  using DenseArgs = typename Moe::Dense::Args;
  using Epilog = typename Moe::Epilog;
  static constexpr int BM = Tile::BM, ACC = Dec::ACC, THREADS = Tile::THREADS;
  static_assert(BM == 16 && TOKENS <= BM, "the decode tile holds 16 token rows");

  HM_DEVICE static void store(const Args& a, const DenseArgs& d, const float (&acc)[ACC],
                              const int* src_rows, const int* ids, int n0, int wn, int lane) {
    const Epilog epi{d.channel_scale, d.global_scale, d.bias};
    const float global = Epi::HAS_GLOBAL ? d.global_scale[0] : 1.f;
    const int g = lane / 4, t = lane % 4, tile0 = n0 + wn * 64;
    // The lane's token rows (8 (i / 16) + 2 t + i % 2: two per 8-token block) and their router
    // weights and activation scales, read once before any store (the stores could alias them
    // for the compiler, which then reloaded both per accumulator).
    constexpr int ROWS = 2 * (ACC / 16);
    int row_ids[ROWS];
    float row_w[ROWS], row_s[ROWS];
#pragma unroll
    for (int j = 0; j < ROWS; ++j) {
      const int r = 8 * (j / 2) + 2 * t + j % 2, id = ids[r];
      row_ids[j] = id;
      row_w[j] = id < 0 || a.topk_weights == nullptr ? 1.f : a.topk_weights[id];
      row_s[j] = id < 0 ? 1.f : moe_row_scale<Act>(a, src_rows[r]);
    }
#pragma unroll
    for (int i = 0; i < ACC; ++i) {
      const int p = (i % 16) / 4, col = 16 * p + 8 * ((i % 4) / 2) + g;
      if (Act::kGlu && p >= 2) continue;  // up halves: read with their gate columns
      const int j = 2 * (i / 16) + i % 2, id = row_ids[j];
      if (id < 0) continue;
      const float w = row_w[j], s = row_s[j];
      typename Epi::Out* row = a.out + static_cast<long long>(id) * a.ldc;
      const int n = tile0 + col;
      if constexpr (Act::kGlu) {
        const float r = Act::combine(epi.apply(moe_row_scaled<Act>(acc[i], s), n, global),
                                     epi.apply(moe_row_scaled<Act>(acc[i + 8], s), n + 32, global));
        const int c = tile0 / 2 + col;
        if (c < a.n_out) row[c] = convert_out<typename Epi::Out>(r * w);
      } else if (n < a.N && n < a.n_out) {
        const float v = epi.apply(moe_row_scaled<Act>(acc[i], s), n, global);
        row[n] = convert_out<typename Epi::Out>(Act::apply(v) * w);
      }
    }
  }

  HM_DEVICE static void run(const Args& a, int routing_ready) {
    extern __shared__ uint4 smem_u4[];
    char* smem = reinterpret_cast<char*>(smem_u4);
    int* src_rows = reinterpret_cast<int*>(smem + Moe::kRowTable);
    int* ids = src_rows + BM;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (!routing_ready) wait_prior_grid();  // the routing comes from the previous kernel
    // tile rows past the block: no token (moe_block_rows fills the first TOKENS, then syncs)
    if (tid >= TOKENS && tid < BM) src_rows[tid] = ids[tid] = -1;
    // Uniform over the CTA (it reads the same block entries), so the early exit is safe.
    const int e = moe_block_rows<TOKENS, THREADS>(a, src_rows, ids, tid);
    if (e < 0) return;
    const DenseArgs d = Moe::expert_args(a, e);
    const int wn = warp % Tile::WARPS_N, wk = warp / Tile::WARPS_N;
    const int n0 = blockIdx.x * Tile::BN;
    const int iters = ceil_div(a.k_tiles * 16, Tile::BK);
    const DecodeStageCopies<T, Fmt, Tile, Epi, TOKENS, long long> copies(d, n0, tid, src_rows);
    float total[ACC], part[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) total[i] = part[i] = 0.f;
    GroupParams<T> gp[8];
    float sc[8];
    const u32 magic2 = pinned_constant(Dec::Exact::kMagic2, a.k_tiles);
    // PDL: with routing_ready the routing above and the first stages' weights are read before
    // the previous kernel (which writes x) has finished; without it the kernel waited above.
    cp_async_pipeline_pdl<Tile::STAGES>(
        0, iters,
        [&](int buf, int it) {
          if ((it + 1) * Tile::BK <= a.K) {
            copies.template load_weights<false>(d, smem, buf, it, n0, tid, 0);
          }
        },
        [&](int buf, int it) {
          if ((it + 1) * Tile::BK <= a.K) {
            copies.load_tokens(d, smem, buf, it);
          } else {
            Moe::load_stage(d, smem, src_rows, buf, it, n0, tid);
          }
        },
        [&](int buf, int it) {
          if ((it + 1) * Tile::BK <= a.K) {
            copies.load_tokens(d, smem, buf, it);
            copies.template load_weights<false>(d, smem, buf, it, n0, tid, 0);
          } else {
            Moe::load_stage(d, smem, src_rows, buf, it, n0, tid);
          }
        },
        [&](int buf, int) {
          Dec::compute_stage(total, part, gp, sc, smem, buf, wn, wk, lane, magic2);
        });
    __syncthreads();
    reduce_warps_k<ACC, Tile::WARPS_N, Tile::WARPS_K>(total, reinterpret_cast<float*>(smem), wn,
                                                        wk, lane);
    if (wk == 0) store(a, d, total, src_rows, ids, n0, wn, lane);
  }
};

}  // namespace humming

// The C entry point of a rendered MoE WnA16 decode unit: HUMMING_MOE_WNA16_ENTRY's parameters, then
// routing_ready (the host binding, humming_cuda.kernels.moe_wna16.bind, adds it for the decode
// form). Registers are capped for two CTAs per SM, as for the dense decode kernel.
#define HUMMING_MOE_WNA16_DECODE_ENTRY(NAME, T, FMT, TILE, EPI, ACT, TOKENS)                      \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, 2)                                  \
      NAME(HUMMING_MOE_WNA16_PARAMS(T, EPI), int routing_ready) {                                 \
    using Kern = humming::MoeWna16DecodeKernel<T, FMT, TILE, EPI, ACT, TOKENS>;                   \
    Kern::run(HUMMING_MOE_WNA16_ARGS(Kern), routing_ready);                                       \
  }
