// 8-bit activation / weight codes (int8 and fp8 E4M3): the rounding a quantizer applies and the
// largest value a dynamic scale maps amax onto. Shared by the activation quantizer and the W8A8 MMA.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

using u8 = unsigned char;

enum Code8 : int { kCode8Int8 = 0, kCode8E4m3 = 1 };

template <int CODE>
struct Code8Traits;

// int8: round half to even (__float2int_rn), saturate to [-128, 127], as numerics.codec does.
template <>
struct Code8Traits<kCode8Int8> {
  static constexpr float kMax = 127.f;
  HM_DEVICE static u32 encode(float v) {
    const int q = max(-128, min(127, __float2int_rn(v)));
    return static_cast<u32>(q) & 0xFFu;
  }
  HM_DEVICE static u32 encode4(float a, float b, float c, float d) {
    return encode(a) | (encode(b) << 8) | (encode(c) << 16) | (encode(d) << 24);
  }
};

// E4M3 (fn: no inf, saturating): cvt.rn.satfinite rounds to nearest even, keeps subnormals and
// clamps to +-448, which is exactly numerics.codec's encode(saturate=True). Needs sm_89+.
template <>
struct Code8Traits<kCode8E4m3> {
  static constexpr float kMax = 448.f;
  // Two values -> 16 bits, `lo` in the low byte (cvt puts its first source in the high byte).
  HM_DEVICE static u32 encode2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
#else
    __trap();
    return 0;
#endif
  }
  HM_DEVICE static u32 encode4(float a, float b, float c, float d) {
    return encode2(a, b) | (encode2(c, d) << 16);
  }
};

// Two e4m3 codes (bits [0, 16) of v) -> an fp16 pair, the low byte's value in the low half (exact:
// every e4m3 value is an fp16 value). Needs sm_89+.
HM_DEVICE u32 e4m3x2_to_f16x2(u32 v) {
  u32 r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(static_cast<unsigned short>(v)));
#else
  __trap();
  r = 0;
#endif
  return r;
}

}  // namespace humming
