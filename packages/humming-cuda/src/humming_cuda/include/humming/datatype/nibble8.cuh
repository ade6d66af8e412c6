// 4-bit weight codes -> 8-bit MMA operand codes in registers (W4A8: int4 / uint4 / E2M1 weights
// multiplied by int8 or E4M3 activations on the 8-bit tensor cores).
//
// Any 16-entry map from a 4-bit code to an 8-bit code is a table lookup done with `prmt`: the
// table's 16 bytes live in four immediates (T0 holds entries 0-3, low byte first), and one prmt
// picks four bytes out of eight by 3-bit selectors. The host builds the table from the exact value
// of every code (humming_cuda.kernels.w8a8.nibbles), so one mechanism serves int4 -> int8,
// int4 -> e4m3 and e2m1 -> e4m3, all exact: every int4 / uint4 value fits int8, and every int4 and
// e2m1 value is representable in e4m3.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

HM_DEVICE u32 prmt(u32 a, u32 b, u32 sel) {
  u32 r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
}

template <u32 T0, u32 T1, u32 T2, u32 T3>
struct NibbleLut {
  // The table's four words: constants (table()), or the same values in registers held across a
  // loop (hold()). Why hold: prmt takes at most one immediate, so each lookup needs a table word in
  // a register, and ptxas re-creates such constants at every use (a move from a uniform register
  // each) rather than keep them live: in w4a8_wgmma's register-A main loop those moves were 96 of
  // 551 instructions per two K blocks, on warps that issue about as many instructions as the
  // tensor cores take cycles. Derived from a value ptxas cannot know (the dynamic shared memory
  // size, below 2^31, shifted to 0), the held words are computed once and stay in four registers.
  struct Words {
    u32 t0, t1, t2, t3;
  };
  HM_DEVICE static constexpr Words table() { return Words{T0, T1, T2, T3}; }
  HM_DEVICE static Words hold() {
    u32 z;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(z));
    z >>= 31;
    return Words{T0 ^ z, T1 ^ z, T2 ^ z, T3 ^ z};
  }

  // Four table entries -> four bytes: entry (bit 3 of nibble j of `upper`'s byte mask, bits 0-2 of
  // selector nibble j) to byte j. prmt reads three index bits per selector nibble (a fourth would
  // mean "replicate the sign") and the selectors in bits [0, 16) only, so the low and the high half
  // of the table are each looked up with the same indices, and `upper` (0xff in byte j where the
  // code is 8 or more) picks byte j of one of the two.
  HM_DEVICE static u32 pick(u32 idx, u32 upper, const Words& t) {
    const u32 lo = prmt(t.t0, t.t1, idx);
    const u32 hi = prmt(t.t2, t.t3, idx);
    return (lo & ~upper) | (hi & upper);
  }

  // One word of the W4A8 layout (eight nibbles: K elements 4t..4t+3 then 16+4t..16+4t+3 of one
  // column) -> the two registers of that column's m16n8k32 B fragment. The byte masks come from
  // prmt's sign-replicate mode: nibble j's bit 3 is the top bit of a byte of w (odd j) or of w << 4
  // (even j). One mask of all eight indices serves both halves. 12 instructions a word, against 14
  // when bit 3 was shifted into a third prmt's selectors.
  HM_DEVICE static void expand(u32 w, u32& b0, u32& b1, const Words& t = table()) {
    const u32 up = w << 4, idx = w & 0x77777777u;
    b0 = pick(idx, prmt(w, up, 0x9D8Cu), t);
    b1 = pick(idx >> 16, prmt(w, up, 0xBFAEu), t);
  }
};

// Four int8 lanes u - z for stored codes u and a zero point z, both in [0, 15] (uint4 with integer
// zero points). Biasing every byte by 128 first keeps each lane in [113, 143], so one 32-bit
// subtraction never borrows across bytes; the xor removes the bias again (two's complement).
HM_DEVICE u32 sub_zero4(u32 codes, u32 zero) {
  return ((codes | 0x80808080u) - zero * 0x01010101u) ^ 0x80808080u;
}

}  // namespace humming
