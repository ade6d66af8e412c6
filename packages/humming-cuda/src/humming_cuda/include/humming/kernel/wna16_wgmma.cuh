// WnA16 GEMM for sm_90a at large M: fp16 / bf16 activations x 1- to 8-bit integer weights with
// wgmma, TMA and a warp-specialized pipeline (humming_cuda.kernels.wna16_wgmma).
//
// out[M, N] = epilogue(x @ W^T) with the wna16 family's weights, layout and numerics: W[n, k] =
// (q - z) * s (integer or no zero points: z = 2^(b-1) for signed codes, else 0) or q * s - z (float
// zero points), s the in-loop group scale, then the epilogue's per-channel / per-tensor fp32 scale,
// global scale and bias (humming_cuda.kernels.wna16.layout: one packed copy serves both families).
// x [M, K] is loaded by TMA (128B swizzle) as the K-major wgmma A operand; the consumer warps
// dequantize the pre-shuffled codes themselves into a K-major 128B-swizzled B tile in shared
// memory, which wgmma then reads.
//
// CTA: 3 warpgroups over a 128 (M) x 128 (N) tile, 64 K per step. Warpgroup 0 is the producer:
// one thread streams x tiles through a `STAGES`-deep mbarrier ring. Warpgroups 1 and 2 (rows 0-63
// and 64-127) share the dequantization of each step's 128 x 64 weights, 2 x 4 layout tiles of
// 64 (N) x 16 (K): each consumer warp takes one tile, each lane its 32 codes, into one of three B
// buffers. While the tensor cores run step i from buffer i%3, the consumers dequantize step i+1
// into the next from registers loaded one step earlier (the loads get a whole step to land), and
// step i stays in flight across the next barrier (the third buffer is what step i-1 may still
// read then), so the tensor cores never wait for a drained pipeline.
// Dequantization is the wna16 kernel's (humming/datatype/dequant.cuh, magic-number half2 ops),
// exact up to the one rounding of the scale multiply, so both families give identical weights.
// Tails: TMA fills x's rows past M and columns past K with zeros; layout tiles past the padded N
// (64) or K (16) are not read (their weights are zeros); stores are predicated to [M, N].
#pragma once
#include "humming/arith/common.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/dequant.cuh"
#include "humming/epilogue/epilogue.cuh"
#include "humming/kernel/wgmma_cta.cuh"
#include "humming/memory/bitplanes.cuh"
#include "humming/memory/tile_order.cuh"
#include "humming/mma/wgmma_f16.cuh"
#include "humming/ptx/pdl.cuh"
#include "humming/ptx/sm90_tma.cuh"

namespace humming {

// BITS: code width (1-8); ZERO: 0 none (constant OFFSET: 2^(b-1) for signed codes, else 0), 1
// integer zero points, 2 float zero points (act-type tensors like the scales); IN_LOOP: group
// scales applied during dequantization; EPI_SCALE / GLOBAL: the fp32 epilogue's scales; FLOAT:
// the codes are floats with EXP exponent and MAN mantissa bits (sign, exponent, mantissa, as the
// wna16 kernels dequantize them); integer codes leave the last three at their defaults.
// GROUP_SHIFT: log2 of the in-loop scale group when the kernel is rendered for one (0: the
// launch's group_shift). The register-A main loop then knows at compile time which 16-deep slices
// start a scale row (H100 ncu, W4A16 g128 57344x8192 M = 64: the run-time check and its branch
// were ~24 of the loop's ~250 instructions per step, and the scales' half broadcasts 20 more).
template <int BITS_, int ZERO_, int OFFSET_, bool IN_LOOP_, int EPI_SCALE_, bool GLOBAL_,
          bool FLOAT_ = false, int EXP_ = 0, int MAN_ = 0, int GROUP_SHIFT_ = 0>
struct WgmmaWna16Format {
  static constexpr int BITS = BITS_, ZERO = ZERO_, OFFSET = OFFSET_, EPI_SCALE = EPI_SCALE_;
  static constexpr bool IN_LOOP = IN_LOOP_, GLOBAL = GLOBAL_;
  static constexpr int GROUP_SHIFT = GROUP_SHIFT_;
  static constexpr int KIND = FLOAT_ ? kWeightFloat : (OFFSET_ ? kWeightInt : kWeightUint);
  static constexpr int EXP = EXP_, MAN = MAN_;
};

// GROUP_M: M tiles walked down before moving one N tile right (humming/memory/tile_order.cuh).
template <int STAGES_, int GROUP_M_>
struct WgmmaWna16Tile {
  static constexpr int BM = 128, BN = 128, BK = 64, STAGES = STAGES_, GROUP_M = GROUP_M_;
  static constexpr int CONSUMERS = 2;  // warpgroups of 64 rows each
  static constexpr int THREADS = 128 * (1 + CONSUMERS);
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, B_BUFFERS = 3;
  // 1024 bytes of slack to align everything to the 128B-swizzle atom, the x ring, the B buffers,
  // then the full / empty barriers (mirrors WgmmaWna16Config.smem_bytes)
  static constexpr int SMEM_BYTES = 1024 + STAGES * A_BYTES + B_BUFFERS * B_BYTES + 16 * STAGES;
  // layout tiles (64 N x 16 K) per step: one per consumer warp
  static constexpr int TILES_N = BN / 64, TILES_K = BK / 16;
  static_assert(TILES_N * TILES_K == 4 * CONSUMERS, "one layout tile per consumer warp");
};

// Pair p of a lane's BITS layout words (humming/memory/bitplanes.cuh): its two codes in the low
// and high 16-bit halves, planes K.. reassembled (a compile-time recursion over the planes, so
// widths and offsets are constants).
template <int BITS, int K = 0>
HM_DEVICE u32 pair_codes(const u32 (&w)[BITS], int p) {
  if constexpr (K == plane_count(BITS)) {
    return 0u;
  } else {
    constexpr int width = plane_width(BITS, K), offset = plane_offset(BITS, K), per = 16 / width;
    constexpr u32 mask = ((1u << width) - 1u) * 0x00010001u;
    const u32 field = ((w[offset + p / per] >> ((p % per) * width)) & mask) << offset;
    return field | pair_codes<BITS, K + 1>(w, p);
  }
}

template <class Fmt, class Tile, typename ActT, typename OutT, bool BIAS>
struct Wna16WgmmaKernel {
  static constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, STAGES = Tile::STAGES;
  static constexpr int ACC = 64;  // 64x128 fp32 per warpgroup / 128 threads
  static constexpr int BITS = Fmt::BITS;
  using Dq = Dequant<ActT, Fmt::KIND, BITS, Fmt::EXP, Fmt::MAN, Fmt::ZERO, Fmt::IN_LOOP>;

  struct Args {
    const u32* qweight;        // [NT, KT, 32 * BITS] pre-shuffled layout tiles
    const ActT* scales;        // [groups, n_pad], columns in lane order (IN_LOOP)
    const ActT* zeros;         // [groups, n_pad] (ZERO != 0)
    const float* channel;      // [n_pad] or [1] (EPI_SCALE)
    const float* global;       // [1] (GLOBAL)
    const float* bias;         // [N]
    OutT* out;                 // [M, N], row stride ldc
    int M, N, K, ldc, n_pad, k_tiles, group_shift;
  };

  // One step's words, scales and zero points of this thread's (layout tile, lane), loaded a step
  // ahead; 8 scales / zero points: the lane's eight columns 8j + lane/4, j = 0..7.
  struct Packed {
    u32 w[BITS];
    uint4 s, z;
  };

  struct Smem {
    u32 a, b, full, empty;  // x ring, the B buffers, the barriers
    HM_DEVICE u32 a_stage(int s) const { return a + s * Tile::A_BYTES; }
    HM_DEVICE u32 b_buf(int i) const { return b + (i % Tile::B_BUFFERS) * Tile::B_BYTES; }
    HM_DEVICE u32 full_bar(int s) const { return full + 8 * s; }
    HM_DEVICE u32 empty_bar(int s) const { return empty + 8 * s; }
  };

  HM_DEVICE static void produce(const TmaDescriptor* tx, const Smem& sm, int iters, int m0) {
    tma_prefetch_descriptor(tx);
    for (int it = 0; it < iters; ++it) {
      const int s = it % STAGES;
      mbar_wait(sm.empty_bar(s), ((it / STAGES) & 1) ^ 1);
      mbar_arrive_expect_tx(sm.full_bar(s), Tile::A_BYTES);
      tma_load_2d(sm.a_stage(s), tx, it * BK, m0, sm.full_bar(s));
    }
  }

  // Consumer thread ct reads layout tile (n0/64 + tn, it*TILES_K + tk) of warp ct/32, lane ct%32.
  // Tiles past the layout's padded N or K are not read: zero codes with zero scales.
  HM_DEVICE static void load(const Args& a, int it, int n0, int ct, Packed& p) {
    const int warp = ct / 32, lane = ct % 32;
    const int nt = n0 / 64 + warp / Tile::TILES_K, kt = it * Tile::TILES_K + warp % Tile::TILES_K;
    const bool valid = nt * 64 < a.n_pad && kt < a.k_tiles;
    const u32* src = a.qweight + ((static_cast<long long>(nt) * a.k_tiles + kt) * 32 + lane) * BITS;
    if constexpr (BITS % 4 == 0) {  // 16-byte aligned: the lane's words start at lane * BITS
#pragma unroll
      for (int i = 0; i < BITS; i += 4) {
        const uint4 v =
            valid ? __ldg(reinterpret_cast<const uint4*>(src + i)) : make_uint4(0u, 0u, 0u, 0u);
        p.w[i] = v.x;
        p.w[i + 1] = v.y;
        p.w[i + 2] = v.z;
        p.w[i + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < BITS; ++i) p.w[i] = valid ? __ldg(src + i) : 0u;
    }
    p.s = p.z = make_uint4(0u, 0u, 0u, 0u);
    if (!valid) return;
    const long long at = static_cast<long long>((kt * 16) >> a.group_shift) * a.n_pad + nt * 64 +
                         8 * (lane / 4);
    if constexpr (Fmt::IN_LOOP) p.s = __ldg(reinterpret_cast<const uint4*>(a.scales + at));
    if constexpr (Fmt::ZERO != 0) p.z = __ldg(reinterpret_cast<const uint4*>(a.zeros + at));
  }

  // Element j (0..7) of eight ActT values held in a uint4.
  HM_DEVICE static ActT act_at(const uint4& v, int j) {
    const u32 word = j / 2 == 0 ? v.x : j / 2 == 1 ? v.y : j / 2 == 2 ? v.z : v.w;
    const auto pair = from_u32<typename ActTraits<ActT>::T2>(word);
    return j % 2 == 0 ? pair.x : pair.y;
  }

  // Write this thread's 32 weights of one step into B buffer `dst` at the 128B-swizzled K-major
  // position wgmma expects: element (n, k) at n*128 + ((chunk ^ n%8) * 16) + 2*(k%8), chunk =
  // k/8. Pair 2j+h is column 8j + g, K 8h + 2t (+1) of the tile (g = lane/4, t = lane%4).
  HM_DEVICE static void dequant(const Packed& p, int ct, u32 dst) {
    const int warp = ct / 32, lane = ct % 32, g = lane / 4, t = lane % 4;
    const int row0 = 64 * (warp / Tile::TILES_K) + g, tk = warp % Tile::TILES_K;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const GroupParams<ActT> gp = Dq::prepare(act_at(p.s, j), act_at(p.z, j));
      const u32 row = dst + (row0 + 8 * j) * 128 + 4 * t;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int chunk = 2 * tk + h;
        st_shared_u32(row + ((chunk ^ g) << 4), Dq::apply(pair_codes<BITS>(p.w, 2 * j + h), gp));
      }
    }
    fence_proxy_async_smem();
  }

  HM_DEVICE static void mma_step(const Smem& sm, int s, int buf, int wg, float (&acc)[ACC]) {
    const u64 da = sw128_kmajor_desc(sm.a_stage(s) + wg * 64 * 128);
    const u64 db = sw128_kmajor_desc(sm.b_buf(buf));
    fence_registers(acc);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) {
      wgmma_m64n128k16<ActT>(acc, desc_advance(da, 32 * k), desc_advance(db, 32 * k), true);
    }
    wgmma_commit();
  }

  HM_DEVICE static void consume(const Args& a, const Smem& sm, int iters, int n0, int wg,
                                float (&acc)[ACC]) {
    const int ct = threadIdx.x - 128, lane = threadIdx.x % 32;
    Packed p;
    load(a, 0, n0, ct, p);
    dequant(p, ct, sm.b_buf(0));
    if (iters > 1) load(a, 1, n0, ct, p);
    for (int it = 0; it < iters; ++it) {
      // B buffer it%3 is complete, and every warpgroup has finished step it-2 (waited below), so
      // buffer (it+1)%3, which step it-2 read last, is free to overwrite.
      named_barrier<128 * Tile::CONSUMERS>(1);
      const int s = it % STAGES;
      mbar_wait(sm.full_bar(s), (it / STAGES) & 1);
      mma_step(sm, s, it, wg, acc);
      if (it + 1 < iters) {
        dequant(p, ct, sm.b_buf(it + 1));
        if (it + 2 < iters) load(a, it + 2, n0, ct, p);
      }
      wgmma_wait<1>();  // step it-1 is done; step it keeps the tensor cores busy meanwhile
      if (it > 0 && lane == 0) mbar_arrive(sm.empty_bar((it - 1) % STAGES));  // x stage it-1
    }
    wgmma_wait<0>();
    fence_registers(acc);
  }

  HM_DEVICE static void store(const Args& a, const float (&acc)[ACC], int m0, int n0, int wg) {
    const Epilogue<OutT, Fmt::EPI_SCALE, Fmt::GLOBAL, BIAS> epi{a.channel, a.global, a.bias};
    const float global = Fmt::GLOBAL ? a.global[0] : 1.f;
    store_wgmma_tile<false>(epi, acc, nullptr, a.out, a.ldc, a.M, a.N, m0, n0, wg, global);
  }

  HM_DEVICE static void run(const TmaDescriptor& tx, const Args& a) {
    extern __shared__ uint4 smem_u4[];
    const u32 base = (smem_addr(smem_u4) + 1023u) & ~1023u;  // the 128B swizzle atom alignment
    const u32 b = base + STAGES * Tile::A_BYTES;
    const u32 bars = b + Tile::B_BUFFERS * Tile::B_BYTES;
    const Smem sm{base, b, bars, bars + 8 * STAGES};
    const int wg = threadIdx.x / 128;
    const TileCoord tile = grouped_tile<Tile::GROUP_M>();
    const int n0 = tile.n * BN, m0 = tile.m * BM, iters = ceil_div(a.K, BK);
    init_ring_barriers<STAGES, Tile::CONSUMERS>(sm.full, sm.empty);
    // PDL (config pdl): nothing of global memory before the previous kernel in the stream is done
    wait_prior_grid();
    allow_next_grid();
    if (wg == 0) {
      // The consumers synchronise on their own named barrier: the producer warpgroup may exit.
      if (threadIdx.x == 0) produce(&tx, sm, iters, m0);
      return;
    }
    // This consumer warpgroup (0 or 1) through a warp vote, the same in every lane: ptxas cannot
    // tell a threadIdx-derived value is, and kept the wgmma descriptors built from it in vector
    // registers (4 R2UR per wgmma).
    static_assert(Tile::CONSUMERS == 2, "consumer warpgroups 1 and 2");
    const int cw = __any_sync(0xffffffffu, threadIdx.x >= 256) ? 1 : 0;
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
    consume(a, sm, iters, n0, cw, acc);
    store(a, acc, m0, n0, cw);
  }
};

}  // namespace humming

// The parameters every WnA16-wgmma entry starts with (either form; in the order of
// humming_cuda.kernels.wna16_wgmma.bind.signature, the tensor map of x first) and the kernel's Args
// built from them.
#define HM_WNA16_WGMMA_PARAMS(ACT, OUT)                                                         \
  const __grid_constant__ humming::TmaDescriptor tmap_x, const humming::u32 *qweight,           \
      const ACT *scales, const ACT *zeros, const float *channel_scale,                          \
      const float *global_scale, const float *bias, OUT *out, int M, int N, int K, int ldc,     \
      int n_pad, int k_tiles, int group_shift
#define HM_WNA16_WGMMA_ARGS(KERN)                                                               \
  typename KERN::Args {                                                                         \
    qweight, scales, zeros, channel_scale, global_scale, bias, out, M, N, K, ldc, n_pad,        \
        k_tiles, group_shift                                                                    \
  }

// The entry every rendered shared-memory-form translation unit instantiates.
#define HUMMING_WNA16_WGMMA_ENTRY(NAME, FMT, TILE, ACT, OUT, BIAS)                              \
  extern "C" __global__ void __launch_bounds__(TILE::THREADS, 1)                                \
      NAME(HM_WNA16_WGMMA_PARAMS(ACT, OUT)) {                                                   \
    using Kern = humming::Wna16WgmmaKernel<FMT, TILE, ACT, OUT, BIAS>;                          \
    Kern::run(tmap_x, HM_WNA16_WGMMA_ARGS(Kern));                                               \
  }
