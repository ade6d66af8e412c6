// Global -> shared loaders of the W8A8 / W4A8 GEMM.
//
// ByteTileLoader: tiles of ROWS x 128 bytes of a row-major 8-bit matrix (quantized
// activations [M, K] or W8A8 weights [N, K]): 16-byte cp.async chunks, chunk c of row r stored at
// chunk (c ^ (r % 8)) so the eight rows one ldmatrix phase reads fall in eight bank groups.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/ptx/cp_async.cuh"

namespace humming {

template <int ROWS, int THREADS>
struct ByteTileLoader {
  static constexpr int kRowBytes = 128;
  static constexpr int kChunksPerRow = kRowBytes / 16;
  static constexpr int kChunks = ROWS * kChunksPerRow;
  static constexpr int kBytes = ROWS * kRowBytes;

  HM_DEVICE static int offset(int row, int chunk) {
    return row * kRowBytes + ((chunk ^ (row & 7)) << 4);
  }

  // Rows at or past `rows` are not copied: they only feed output rows (or columns) that are never
  // stored. Chunks past K are zero-filled: they meet valid rows of the other operand. STREAM
  // (weights) copies through cp_async16_byte_weight with `policy`.
  template <bool STREAM>
  HM_DEVICE static void load(char* smem, const char* src, int r0, int k0, int rows, int K, int ld,
                             int tid, u64 policy) {
    static_assert(THREADS % kChunksPerRow == 0, "a thread keeps its chunk column");
    const int chunks = min(kChunks, (rows - r0) * kChunksPerRow);
    // thread tid copies chunk tid % 8 of rows tid / 8 + i * (THREADS / 8): one address and one K
    // check, then a fixed stride (as NibbleTileLoader, whose per-chunk address products were most
    // of the W4A8 decode kernel's copy instructions)
    const int row0 = tid / kChunksPerRow, chunk = tid % kChunksPerRow;
    const int k = k0 + chunk * 16;
    const bool pred = k < K;
    const char* g = src + static_cast<long long>(r0 + row0) * ld + k;
#pragma unroll
    for (int i = 0; i * THREADS < kChunks; ++i) {
      if (tid + i * THREADS >= chunks) break;
      constexpr int kRowStep = THREADS / kChunksPerRow;
      const int row = row0 + i * kRowStep;
      const char* gi = pred ? g + static_cast<long long>(i * kRowStep) * ld : src;
      if constexpr (STREAM) {
        cp_async16_byte_weight(smem + offset(row, chunk), gi, pred, policy);
      } else {
        cp_async16(smem + offset(row, chunk), gi, pred);
      }
    }
  }
};

// Global -> shared loader for tiles of ROWS x 64 bytes of W4A8 weights: one 128-deep K slab of a row
// of pre-shuffled 4-bit codes (humming_cuda.kernels.w8a8.nibbles). The weights are padded along K to
// a multiple of 128, so every chunk is in bounds. Stored unswizzled: lane (g, t) later reads chunk t
// of row g, so a warp's 32 lanes read 512 contiguous bytes, which no bank conflict can slow down.
template <int ROWS, int THREADS>
struct NibbleTileLoader {
  static constexpr int kRowBytes = 64;
  static constexpr int kChunksPerRow = kRowBytes / 16;
  static constexpr int kChunks = ROWS * kChunksPerRow;
  static constexpr int kBytes = ROWS * kRowBytes;

  HM_DEVICE static int offset(int row, int chunk) { return row * kRowBytes + (chunk << 4); }

  // Rows at or past `rows` are not copied (they only feed columns that are never stored). `k0` is
  // in elements, `ld` the row pitch in bytes; `policy` as ByteTileLoader's.
  HM_DEVICE static void load(char* smem, const char* src, int r0, int k0, int rows, int ld, int tid,
                             u64 policy) {
    static_assert(THREADS % kChunksPerRow == 0, "a thread keeps its chunk column");
    const int chunks = min(kChunks, (rows - r0) * kChunksPerRow);
    // thread tid copies chunk tid % 4 of rows tid / 4 + i * (THREADS / 4): one address, then a
    // fixed stride (the per-chunk row * ld products were most of the W4A8 decode kernel's copy
    // instructions: benchmarks/kernel_resources.py, 11% fewer in the whole kernel)
    const int row0 = tid / kChunksPerRow, chunk = tid % kChunksPerRow;
    const char* g = src + static_cast<long long>(r0 + row0) * ld + k0 / 2 + chunk * 16;
#pragma unroll
    for (int i = 0; i * THREADS < kChunks; ++i) {
      if (tid + i * THREADS >= chunks) break;
      constexpr int kRowStep = THREADS / kChunksPerRow;
      const int row = row0 + i * kRowStep;
      const char* gi = g + static_cast<long long>(i * kRowStep) * ld;
      cp_async16_byte_weight(smem + offset(row, chunk), gi, true, policy);
    }
  }
};

}  // namespace humming
