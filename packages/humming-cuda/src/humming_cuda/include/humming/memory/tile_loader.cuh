// Global -> shared loaders for one pipeline stage of the WnA16 kernel: activations (swizzled for
// ldmatrix), pre-shuffled weight tiles, and per-group scale / zero-point rows. Every load is a
// 16-byte cp.async; out-of-range chunks are zero-filled, never read.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/ptx/cp_async.cuh"

namespace humming {

// Activation tile of ROWS x BK 16-bit values. Row r's 16-byte chunk c lands at chunk (c ^ (r % 8)),
// so the eight rows an ldmatrix phase reads hit eight different bank groups. Rows at or past M are
// not copied at all: an MMA row only feeds the same output row, which is never stored, and skipping
// them keeps a decode step (M = 1) from spending most of its load instructions on zero-filling.
template <typename T, int ROWS, int BK, int THREADS>
struct ActTileLoader {
  static constexpr int kChunksPerRow = BK / 8;
  static constexpr int kChunks = ROWS * kChunksPerRow;
  static constexpr int kPerThread = (kChunks + THREADS - 1) / THREADS;
  static_assert(kChunksPerRow >= 8, "the XOR swizzle needs rows of at least 8 chunks (BK >= 64)");

  HM_DEVICE static int offset(int row, int chunk) {
    return row * BK + ((chunk ^ (row & 7)) * 8);
  }

  HM_DEVICE static void load(T* smem, const T* x, int m0, int k0, int M, int K, int lda, int tid) {
    const int chunks = min(kChunks, (M - m0) * kChunksPerRow);
    // An exact trip count (not a strided `c < kChunks` loop) lets ptxas unroll without a remainder
    // check per step; it cuts the compile time of the largest tiles by about a third.
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int c = tid + i * THREADS;
      if (c >= chunks) break;
      const int row = c / kChunksPerRow;
      const int chunk = c % kChunksPerRow;
      const int m = m0 + row;
      const int k = k0 + chunk * 8;
      const bool pred = k < K;
      const T* src = pred ? x + static_cast<long long>(m) * lda + k : x;
      cp_async16(smem + offset(row, chunk), src, pred);
    }
  }
};

// Weight tiles: for each of the block's N_TILES columns of 64, K_TILES consecutive 16x64 layout
// tiles, which are contiguous in global memory (layout order [n tile][k tile][lane][word]).
template <int BITS, int N_TILES, int K_TILES, int THREADS>
struct WeightTileLoader {
  static constexpr int kTileWords = 32 * BITS;
  static constexpr int kChunksPerTile = kTileWords / 4;
  static constexpr int kChunksPerNTile = K_TILES * kChunksPerTile;
  static constexpr int kChunks = N_TILES * kChunksPerNTile;
  static constexpr int kPerThread = (kChunks + THREADS - 1) / THREADS;

  HM_DEVICE static void load(u32* smem, const u32* w, int nt0, int kt0, int n_tiles, int k_tiles,
                             int tid) {
#pragma unroll 4
    for (int i = 0; i < kPerThread; ++i) {
      const int c = tid + i * THREADS;
      if (kChunks % THREADS != 0 && c >= kChunks) break;
      const int ntl = c / kChunksPerNTile;
      const int rem = c % kChunksPerNTile;
      const int nt = nt0 + ntl;
      const bool pred = nt < n_tiles && kt0 + rem / kChunksPerTile < k_tiles;
      const long long word = (static_cast<long long>(nt) * k_tiles + kt0) * kTileWords + rem * 4;
      // A plain copy, not cp_async16_stream: with the evict-first hint, ptxas 13.0 addresses some
      // of these copies through uniform registers nothing writes (`[R+UR0], desc[UR1]`), and the
      // kernel dies with CUDA_ERROR_ILLEGAL_INSTRUCTION (W8A16 moe_wna16 at 2048 rows, for one).
      // tests/test_sass_audit.py checks every family's SASS for such operands.
      cp_async16(smem + c * 4, pred ? w + word : w, pred);
    }
  }
};

// ROWS group rows of BN 16-bit values (scales or zero points), row g of the [groups][n_pad] array.
template <typename T, int ROWS, int BN, int THREADS>
struct GroupRowLoader {
  static constexpr int kChunksPerRow = BN / 8;
  static constexpr int kChunks = ROWS * kChunksPerRow;

  HM_DEVICE static void load(T* smem, const T* src, int g0, int n0, int groups, int n_pad,
                             int tid) {
    for (int c = tid; c < kChunks; c += THREADS) {
      const int row = c / kChunksPerRow;
      const int n = n0 + (c % kChunksPerRow) * 8;
      const bool pred = g0 + row < groups && n < n_pad;
      const T* p = pred ? src + static_cast<long long>(g0 + row) * n_pad + n : src;
      cp_async16(smem + c * 8, p, pred);
    }
  }
};

// Base's tile (ActTileLoader or ByteTileLoader: 16-byte chunks, `offset(row, chunk)` in elements
// of T) gathered for the MoE kernels: tile row r is row src_rows[r] of the source (-1: a padding
// slot, not copied; its MMA row only feeds its own output row, which is never stored).
template <class Base, int THREADS, typename T>
struct GatherTileLoader {
  static constexpr int kElemsPerChunk = 16 / static_cast<int>(sizeof(T));

  HM_DEVICE static void load(T* smem, const T* src, const int* src_rows, int k0, int K, int ld,
                             int tid) {
#pragma unroll
    for (int c = tid; c < Base::kChunks; c += THREADS) {
      const int row = c / Base::kChunksPerRow, chunk = c % Base::kChunksPerRow;
      const int m = src_rows[row];
      if (m < 0) continue;
      const int k = k0 + chunk * kElemsPerChunk;
      const bool pred = k < K;
      const T* g = pred ? src + static_cast<long long>(m) * ld + k : src;
      cp_async16(smem + Base::offset(row, chunk), g, pred);
    }
  }
};

}  // namespace humming
