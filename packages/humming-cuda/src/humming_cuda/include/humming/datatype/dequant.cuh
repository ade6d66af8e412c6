// In-register dequantizers: a pair of b-bit codes (low code in bits [0,b), high in [16,16+b)) to a
// pair of fp16/bf16 weights, with the group's scale and zero point applied.
//
// Integers: OR the codes into the mantissa of a magic number (1024.0 for fp16, 128.0 for bf16) and
// subtract (magic + offset + zero point) in one exact half2 op; bf16 has 7 mantissa bits, so 8-bit
// codes go through the fp32 magic 2^23 instead. Floats eXmY: move sign and exponent|mantissa to the
// 16-bit type's positions (the exponent field is reused as is), which yields value * 2^(bias -
// bias16); one exact multiply by 2^(bias16 - bias) fixes it, subnormals included.
// The scale multiply (and float zero point) is the only rounding step, done once per weight.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/arith/dialect.cuh"
#include "humming/datatype/act_types.cuh"
#include "humming/datatype/code8.cuh"  // e4m3x2_to_f16x2

namespace humming {

enum WeightKind : int { kWeightInt = 0, kWeightUint = 1, kWeightFloat = 2 };
enum ZeroKind : int { kZeroNone = 0, kZeroInt = 1, kZeroFloat = 2 };

// Per-column constants for the current group: built once per group, used for 4 weights per n8 block.
template <typename T>
struct GroupParams {
  typename ActTraits<T>::T2 scale;  // (s, s)
  typename ActTraits<T>::T2 zero;   // integer path: magic + offset + z; float zero point: (-z, -z)
};

template <typename T, int KIND, int BITS, int EXP, int MAN, int ZERO, bool SCALED>
struct Dequant {
  using Tr = ActTraits<T>;
  using T2 = typename Tr::T2;
  static constexpr int kOffset = KIND == kWeightInt ? (1 << (BITS - 1)) : 0;
  // bf16 cannot hold magic + 8-bit code exactly: those codes take the fp32 path.
  static constexpr bool kFp32Int = KIND != kWeightFloat && BITS > Tr::kMagicBits;
  static_assert(KIND != kWeightFloat || EXP <= Tr::kExponent,
                "float weight exponent wider than the activation type's: use bf16 activations");
  static_assert(KIND != kWeightFloat || ZERO == kZeroNone, "zero points apply to integer weights");

  HM_DEVICE static GroupParams<T> prepare(T scale, T zero) {
    GroupParams<T> g;
    g.scale = Tr::dup(scale);
    if constexpr (ZERO == kZeroFloat) {
      g.zero = Tr::dup(__hneg(zero));
    } else if constexpr (ZERO == kZeroInt && !kFp32Int) {
      const float sub = float(Tr::kMagicValue + kOffset) + Tr::to_float(zero);
      g.zero = Tr::dup(Tr::from_float(sub));
    } else {
      g.zero = Tr::dup(zero);
    }
    return g;
  }

  // (q - offset - z) exactly, as a 16-bit pair.
  HM_DEVICE static T2 integer_pair(u32 codes, const GroupParams<T>& g) {
    if constexpr (kFp32Int) {
      float sub = 8388608.f + float(kOffset);
      if constexpr (ZERO == kZeroInt) sub += Tr::low_float(g.zero);
      const float lo = __uint_as_float(0x4B000000u | (codes & 0xFFu)) - sub;
      const float hi = __uint_as_float(0x4B000000u | (codes >> 16)) - sub;
      return Tr::from_floats(lo, hi);
    } else {
      return from_magic(from_u32<T2>(codes | (Tr::kMagic * 0x00010001u)), g);
    }
  }

  // magic + q (the codes OR-ed under the magic number) -> (q - offset - z) exactly.
  HM_DEVICE static T2 from_magic(T2 v, const GroupParams<T>& g) {
    if constexpr (ZERO == kZeroInt) return __hsub2(v, g.zero);
    return __hsub2(v, Tr::dup(Tr::from_float(float(Tr::kMagicValue + kOffset))));
  }

  // Float codes: their sign and exponent|mantissa moved to the 16-bit type's positions read as
  // value(code) * 2^-float_shift() (the exponent field is reused as is; the smallest codes come out
  // subnormal). float_pair multiplies the factor back; a caller may instead fold it into a scale.
  // (A function, not a static member: a member moved NVRTC's constant bank of every kernel, the
  // integer ones too, and with it their H200-verified cubins.)
  __host__ __device__ static constexpr int float_shift() {
    return KIND == kWeightFloat && EXP > 0 ? Tr::kBias - ((1 << (EXP - 1)) - 1) : 0;
  }

  // value(code) * 2^-float_shift() exactly, as a 16-bit pair.
  HM_DEVICE static T2 float_placed(u32 codes) {
    constexpr u32 kSign = (1u << (BITS - 1)) * 0x00010001u;
    constexpr u32 kMag = ((1u << (BITS - 1)) - 1u) * 0x00010001u;
    return from_u32<T2>(((codes & kMag) << (Tr::kMantissa - MAN)) |
                        ((codes & kSign) << (16 - BITS)));
  }

  // e4m3 codes under fp16 on NVIDIA sm_89+ (not the PPU dialects): one conversion per pair
  // (cvt.rn.f16x2.e4m3x2, exact: every e4m3 value is an fp16 value) after one byte permute, where
  // the bit placement below takes two masks, two shifts, an OR and the exponent-bias multiply.
  // e4m3fn's NaN codes come out NaN (the placement reads them as 480).
  static constexpr bool kCvtE4m3 = KIND == kWeightFloat && BITS == 8 && EXP == 4 && MAN == 3 &&
                                   Tr::kBias == 15;

  // value(code) exactly, as a 16-bit pair.
  HM_DEVICE static T2 float_pair(u32 codes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && HUMMING_DIALECT == HM_DIALECT_NVIDIA
    if constexpr (kCvtE4m3) {
      // the codes' bytes 0 and 2 side by side in the low half, as the conversion reads them
      return from_u32<T2>(e4m3x2_to_f16x2(__byte_perm(codes, 0u, 0x4420)));
    }
#endif
    const T2 v = float_placed(codes);
    constexpr int kShift = float_shift();
    if constexpr (kShift == 0) {
      return v;
    } else {
      // 2^kShift as a normal 16-bit number: exponent field kBias + kShift.
      constexpr u32 kFactor = u32(Tr::kBias + kShift) << Tr::kMantissa;
      return __hmul2(v, from_u32<T2>(kFactor * 0x00010001u));
    }
  }

  // 8-bit codes straight from a packed word of four (HalfLaneWords<8>: pair 0 in bytes 0 and 2,
  // pair 1 in bytes 1 and 3) with one byte permute instead of a shift and a mask to isolate the
  // pair first: e4m3 under fp16 (kCvtE4m3) into the conversion's two bytes, integers under fp16
  // beside the magic number's high byte (fp16's magic 1024 has a zero low byte: magic + q).
  static constexpr bool kByteWords =
      BITS == 8 && (kCvtE4m3 || (KIND != kWeightFloat && !kFp32Int && (Tr::kMagic & 0xFFu) == 0));

  HM_DEVICE static u32 apply_word(u32 word, int odd, const GroupParams<T>& g) {
    static_assert(kByteWords, "8-bit codes under fp16");
    T2 v;
    if constexpr (kCvtE4m3) {
      v = from_u32<T2>(e4m3x2_to_f16x2(__byte_perm(word, 0u, odd ? 0x4431 : 0x4420)));
    } else {
      constexpr u32 kHigh = (Tr::kMagic >> 8) * 0x01010101u;
      v = from_magic(from_u32<T2>(__byte_perm(word, kHigh, odd ? 0x4341 : 0x4240)), g);
    }
    return finish(v, g);
  }

  // Float codes under a group scale that already carries 2^float_shift() (or part of it; the
  // caller undoes the rest): one multiply per pair instead of two.
  HM_DEVICE static u32 apply_prefolded(u32 codes, const GroupParams<T>& g) {
    static_assert(KIND == kWeightFloat && SCALED, "scaled float codes");
    return as_u32(__hmul2(float_placed(codes), g.scale));
  }

  // 4-bit integer codes read where they lie (fp16 activations): a word holds four code pairs, pair
  // f at bits 4f and 16 + 4f. Field 0 (bits 0-3 of each half) OR-ed under the magic number gives
  // magic + q; field 1 (bits 4-7), left in place, gives magic + 16q, which one exact hfma2 by 1/16
  // brings back. Fields 2 and 3 are fields 0 and 1 of w >> 8: one shift per word instead of one per
  // pair. bf16's 7 mantissa bits cannot hold 16q under its magic number.
  static constexpr bool kInPlaceNibbles =
      BITS == 4 && KIND != kWeightFloat && ZERO != kZeroFloat && Tr::kMagicBits >= 8;

  static constexpr u32 kMagic2 = Tr::kMagic * 0x00010001u;

  // The in-place forms' common end: v = magic + UP * q (UP a power of two, the field's place)
  // -> (q - offset - zero) exactly, times the group's scale when SCALED. UP > 1 first takes
  // one exact hfma2 by 1 / UP: straight to the result, or (integer zero points, whose magic +
  // offset + z prepare keeps in g.zero) to magic + q.
  template <int UP>
  HM_DEVICE static u32 from_placed(T2 v, const GroupParams<T>& g) {
    constexpr float kMagic = float(Tr::kMagicValue), kDown = 1.f / float(UP);
    T2 q;
    if constexpr (ZERO == kZeroInt) {
      constexpr float kAdd = kMagic - kMagic * kDown;
      const T2 m =
          UP == 1 ? v : __hfma2(v, Tr::from_floats(kDown, kDown), Tr::from_floats(kAdd, kAdd));
      q = __hsub2(m, g.zero);
    } else if constexpr (UP == 1) {
      q = __hsub2(v, Tr::from_floats(kMagic + kOffset, kMagic + kOffset));
    } else {
      constexpr float kAdd = -(kMagic * kDown + kOffset);
      q = __hfma2(v, Tr::from_floats(kDown, kDown), Tr::from_floats(kAdd, kAdd));
    }
    return SCALED ? as_u32(__hmul2(q, g.scale)) : as_u32(q);
  }

  // magic2: kMagic2, best as a pinned_constant (arith/common.cuh) made once outside the loop.
  template <int FIELD>
  HM_DEVICE static u32 apply_in_place(u32 w, const GroupParams<T>& g, u32 magic2) {
    static_assert(kInPlaceNibbles && (FIELD == 0 || FIELD == 1), "fields 0 / 1 of 4-bit integers");
    constexpr u32 kMask = FIELD == 0 ? 0x000F000Fu : 0x00F000F0u;
    return from_placed<FIELD == 0 ? 1 : 16>(from_u32<T2>((w & kMask) | magic2), g);
  }

  // 3-bit integer codes read where they lie (fp16 activations): the layout keeps a 2-bit plane
  // (field J of a word: bits 2J, 2J + 1 of each half) and a 1-bit plane (bit B), code = q0 + 4 q1
  // (humming/memory/bitplanes.cuh). The 1-bit word is shifted so that bit B lands at 2J + 2, one
  // LOP3 takes bits 2J, 2J + 1 from w0 and the rest from it, a second masks the three bits under
  // the magic number: magic + 4^J q, brought back by one exact hfma2 by 4^-J (J <= 3: the field
  // ends at bit 8 of fp16's 10-bit mantissa). Callers pass w0 >> 8 for fields 4-7 of a word.
  static constexpr bool kInPlaceTriples =
      BITS == 3 && KIND != kWeightFloat && ZERO != kZeroFloat && Tr::kMagicBits >= 9;

  template <int J, int B>
  HM_DEVICE static u32 apply_in_place3(u32 w0, u32 w1, const GroupParams<T>& g, u32 magic2) {
    static_assert(kInPlaceTriples && J >= 0 && J < 4 && B >= 0 && B < 16, "3-bit fields");
    constexpr int kShift = 2 * J + 2 - B;  // w1's shift left (negative: right)
    constexpr u32 kPair = 0x00030003u << (2 * J), kField = 0x00070007u << (2 * J);
    const u32 w1s = kShift >= 0 ? w1 << kShift : w1 >> -kShift;
    const u32 t = (w0 & kPair) | (w1s & ~kPair);
    return from_placed<1 << (2 * J)>(from_u32<T2>((t & kField) | magic2), g);  // magic + 4^J q
  }

  HM_DEVICE static u32 apply(u32 codes, const GroupParams<T>& g) {
    if constexpr (KIND == kWeightFloat) {
      return finish(float_pair(codes), g);
    } else {
      return finish(integer_pair(codes, g), g);
    }
  }

  // The weights' values `v` times the group's scale (and its float zero point) when SCALED.
  HM_DEVICE static u32 finish(T2 v, const GroupParams<T>& g) {
    if constexpr (!SCALED) {
      return as_u32(v);
    } else if constexpr (ZERO == kZeroFloat) {
      return as_u32(__hfma2(v, g.scale, g.zero));
    } else {
      return as_u32(__hmul2(v, g.scale));
    }
  }
};

}  // namespace humming
