// Basic integer types and helpers shared by every humming kernel.
// NVRTC ships no standard library headers, so the fixed-width names are declared here.
#pragma once

namespace humming {

using u32 = unsigned int;
using u64 = unsigned long long;

#define HM_DEVICE __device__ __forceinline__

HM_DEVICE int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <int A, int B>
struct Max {
  static constexpr int value = A > B ? A : B;
};

// The largest divisor of n that is at most `most` (1 when n or `most` is below 1): how many
// equal batches or parts a count splits into without a remainder.
__host__ __device__ constexpr int largest_divisor_at_most(int n, int most) {
  return n < 1 || most <= 1 ? 1 : n % most == 0 ? most : largest_divisor_at_most(n, most - 1);
}

// `value` in a register ptxas cannot fold: `nonnegative` is a kernel argument the host keeps
// >= 0, so its sign bit is 0 and the result is `value`. Why: in hot loops ptxas rematerialises
// 32-bit constants with an IMAD.MOV before nearly every use instead of keeping them in registers,
// and a LOP3 takes only one immediate, so the in-place dequantizers' (w & mask) | magic cost one
// extra instruction per weight pair (SASS of the wna16_decode and register-A wgmma kernels).
HM_DEVICE u32 pinned_constant(u32 value, int nonnegative) {
  return value | (static_cast<u32>(nonnegative) >> 31);
}

// Reinterpret the bits of one 32-bit value as another 32-bit type (no conversion).
template <typename To, typename From>
HM_DEVICE To bit_cast32(From v) {
  static_assert(sizeof(To) == 4 && sizeof(From) == 4, "bit_cast32 moves exactly 32 bits");
  union {
    From f;
    To t;
  } u;
  u.f = v;
  return u.t;
}

}  // namespace humming
