// x / d rounded to nearest, bit-identical to __fdiv_rn (and to the host's fp32 division), for many
// x over one divisor d: three instructions per quotient where __fdiv_rn runs a reciprocal
// refinement and a range check with a branch. Why: the activation quantizers divide every element
// by its row's or group's scale (the reference divides, so the codes must come from correctly
// rounded quotients), and those divisions made them compute-bound.
//
// With r = RN(1 / d), q = RN(x * r) lies within one ulp of x / d, so the remainder x - d * q is
// exact in one fma and RN(q + (x - d * q) * r) = RN(x / d) (Markstein's theorem), provided nothing
// under- or overflows. d within [2^-90, 2^90] keeps r normal and, for every quotient of magnitude
// 2^-11 or more, the remainder a multiple of 2^-149 (representable); smaller quotients come out
// within two ulps, and every quantizer's code of them is 0 (the smallest e4m3 rounding boundary is
// 2^-10; int8's, int4's and e2m1's are larger). Other divisors (0, subnormal, huge, inf, NaN) take
// __fdiv_rn, one uniform branch per divisor.
// BOUNDED: every |x / d| is known to be at most a code's maximum (dynamic scales, d = amax / max),
// so x * r cannot overflow. Otherwise (a given static scale) a quotient past the float range makes
// q infinite and q is returned: the saturating encoders give it the same code as RN(x / d).
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

template <bool BOUNDED>
struct RoundedDivisor {
  float d, r;
  bool fast;

  HM_DEVICE explicit RoundedDivisor(float divisor)
      : d(divisor), r(__frcp_rn(divisor)), fast(divisor >= 0x1p-90f && divisor <= 0x1p90f) {}

  HM_DEVICE float operator()(float x) const {
    if (!fast) return __fdiv_rn(x, d);
    const float q = __fmul_rn(x, r);
    // q - (d q - x) r rather than q + (x - d q) r: the same value, and a zero x keeps its sign
    // (-0 - (+0) r is -0, where -0 + (+0) r would be +0)
    const float v = __fmaf_rn(-__fmaf_rn(d, q, -x), r, q);
    if constexpr (BOUNDED) return v;
    return fabsf(q) <= 0x1.fffffep127f ? v : q;  // inf (overflow) and NaN (x NaN) pass through
  }
};

}  // namespace humming
