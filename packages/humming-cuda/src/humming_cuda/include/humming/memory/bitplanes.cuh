// The pre-shuffled weight layout, seen from one thread.
//
// A layout tile is 16 (K) x 64 (N) weights: the B operands of eight m16n8k16 MMAs. Each of the 32
// lanes owns the 32 weights its B fragments need, as 16 pairs: pair 2j holds (k=2t, k=2t+1) and
// pair 2j+1 holds (k=2t+8, k=2t+9) of column 8j + lane/4 (t = lane%4), i.e. registers b0/b1 of
// n8-block j. A b-bit code is split into bit planes of power-of-two widths (b=7 -> 4+2+1), and a
// plane of width w takes w 32-bit words: pair i sits in word (plane offset + i / (16/w)) at field
// (i % (16/w)), its low element at bit field*w and its high element at bit 16 + field*w. So every
// lane loads exactly b words (no padding for 3/5/6/7-bit codes), and one shift + mask per plane
// leaves a pair in the two 16-bit halves, where the magic-number dequantizers want it.
// Keep in sync with humming_cuda/kernels/wna16/layout.py, which writes this layout.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

// Width of the k-th plane of a b-bit code: the set bits of b, most significant first.
__host__ __device__ constexpr int plane_width(int bits, int k) {
  return k == 0 ? (bits >= 8 ? 8 : bits >= 4 ? 4 : bits >= 2 ? 2 : 1)
                : plane_width(bits - plane_width(bits, 0), k - 1);
}

__host__ __device__ constexpr int plane_count(int bits) {
  return bits == 0 ? 0 : 1 + plane_count(bits - plane_width(bits, 0));
}

// Bit offset of plane k inside the code, which is also its first word in the lane's words.
__host__ __device__ constexpr int plane_offset(int bits, int k) {
  return k == 0 ? 0 : plane_width(bits, 0) + plane_offset(bits - plane_width(bits, 0), k - 1);
}

template <int BITS, int PAIR, int K>
struct PlanePair {
  static constexpr int kWidth = plane_width(BITS, K);
  static constexpr int kOffset = plane_offset(BITS, K);
  static constexpr int kPerWord = 16 / kWidth;
  static constexpr int kWord = kOffset + PAIR / kPerWord;
  static constexpr int kShift = (PAIR % kPerWord) * kWidth;
  static constexpr u32 kMask = ((1u << kWidth) - 1u) * 0x00010001u;

  HM_DEVICE static u32 get(const u32 (&words)[BITS]) {
    const u32 field = (words[kWord] >> kShift) & kMask;
    const u32 placed = kOffset == 0 ? field : field << kOffset;
    if constexpr (K + 1 < plane_count(BITS)) {
      return placed | PlanePair<BITS, PAIR, K + 1>::get(words);
    } else {
      return placed;
    }
  }
};

// Codes of pair PAIR (0..15): low element in bits [0, BITS), high element in bits [16, 16 + BITS).
template <int BITS, int PAIR>
HM_DEVICE u32 code_pair(const u32 (&words)[BITS]) {
  return PlanePair<BITS, PAIR, 0>::get(words);
}

// Load a lane's BITS words of one layout tile from shared memory with the widest aligned vectors.
template <int BITS>
HM_DEVICE void load_lane_words(u32 (&words)[BITS], const u32* tile, int lane) {
  const u32* p = tile + lane * BITS;
  if constexpr (BITS % 4 == 0) {
#pragma unroll
    for (int i = 0; i < BITS / 4; ++i) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[i];
      words[4 * i] = v.x;
      words[4 * i + 1] = v.y;
      words[4 * i + 2] = v.z;
      words[4 * i + 3] = v.w;
    }
  } else if constexpr (BITS % 2 == 0) {
#pragma unroll
    for (int i = 0; i < BITS / 2; ++i) {
      const uint2 v = reinterpret_cast<const uint2*>(p)[i];
      words[2 * i] = v.x;
      words[2 * i + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < BITS; ++i) words[i] = p[i];
  }
}

}  // namespace humming
