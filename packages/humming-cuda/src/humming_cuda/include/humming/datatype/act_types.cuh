// Traits of the 16-bit activation types (fp16, bf16): the constants the in-register dequantizers
// need (mantissa width, exponent bias, magic numbers) and pair conversions.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "humming/arith/common.cuh"

namespace humming {

template <typename T>
struct ActTraits;

template <>
struct ActTraits<half> {
  using T2 = half2;
  static constexpr int kMantissa = 10;
  static constexpr int kBias = 15;
  static constexpr int kExponent = 5;
  // 1024.0: integers 0..1023 OR-ed into its mantissa give 1024 + q exactly.
  static constexpr u32 kMagic = 0x6400;
  static constexpr int kMagicValue = 1024;
  static constexpr int kMagicBits = 10;
  HM_DEVICE static T2 dup(half v) { return __half2half2(v); }
  HM_DEVICE static T2 from_floats(float lo, float hi) { return __floats2half2_rn(lo, hi); }
  HM_DEVICE static half from_float(float v) { return __float2half_rn(v); }
  HM_DEVICE static float to_float(half v) { return __half2float(v); }
  HM_DEVICE static float low_float(T2 v) { return __low2float(v); }
};

template <>
struct ActTraits<nv_bfloat16> {
  using T2 = nv_bfloat162;
  static constexpr int kMantissa = 7;
  static constexpr int kBias = 127;
  static constexpr int kExponent = 8;
  // 128.0: integers 0..127 OR-ed into its mantissa give 128 + q exactly (8-bit codes need fp32).
  static constexpr u32 kMagic = 0x4300;
  static constexpr int kMagicValue = 128;
  static constexpr int kMagicBits = 7;
  HM_DEVICE static T2 dup(nv_bfloat16 v) { return __bfloat162bfloat162(v); }
  HM_DEVICE static T2 from_floats(float lo, float hi) { return __floats2bfloat162_rn(lo, hi); }
  HM_DEVICE static nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  HM_DEVICE static float to_float(nv_bfloat16 v) { return __bfloat162float(v); }
  HM_DEVICE static float low_float(T2 v) { return __low2float(v); }
};

// Output element conversion (fp32 accumulators to the stored type).
template <typename T>
HM_DEVICE T convert_out(float v);
template <>
HM_DEVICE float convert_out<float>(float v) { return v; }
template <>
HM_DEVICE half convert_out<half>(float v) { return __float2half_rn(v); }
template <>
HM_DEVICE nv_bfloat16 convert_out<nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T2>
HM_DEVICE u32 as_u32(T2 v) { return bit_cast32<u32>(v); }

template <typename T2>
HM_DEVICE T2 from_u32(u32 v) { return bit_cast32<T2>(v); }

}  // namespace humming
