// Elementwise activations in fp32, shared by the GEMM epilogues (MoE w13's activation / GLU
// policies, kernel/moe_wna16.cuh) and the activation quantizer's fused input GLU
// (kernel/act_quant.cuh). The codes are humming_cuda.kernels.moe_wna16.config.ACTIVATION_CODES.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

enum Activation : int {
  kActNone = 0,
  kActRelu = 1,
  kActSilu = 2,
  kActGelu = 3,
  kActGeluTanh = 4
};

// v * sigmoid(a v) with the fast division (a reciprocal and a multiply, within 2 ulp): the IEEE one
// added a range check and a called slow path per output element to the GLU epilogues (FCHK and
// CALL in their SASS). Where 1 + e^(-a v) passes 2^126 (a v below about -87) the quotient is 0
// where the true one is below 2^-119 in magnitude.
HM_DEVICE float silu_scaled(float v, float a) { return __fdividef(v, 1.f + __expf(-a * v)); }

template <int ACT>
HM_DEVICE float apply_activation(float v) {
  if constexpr (ACT == kActRelu) return fmaxf(v, 0.f);
  if constexpr (ACT == kActSilu) return silu_scaled(v, 1.f);
  if constexpr (ACT == kActGelu) return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
  if constexpr (ACT == kActGeluTanh) {
    return 0.5f * v * (1.f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  }
  return v;
}

}  // namespace humming
