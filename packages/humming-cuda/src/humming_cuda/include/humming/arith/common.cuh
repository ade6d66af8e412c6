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
