// Hopper warpgroup MMA (wgmma.mma_async) on fp8 operands held in shared memory, addressed by
// matrix descriptors, plus the fences that order it against ordinary register and smem use.
// sm_90a only: wgmma has no forward-compatible PTX form.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

// Shared-memory matrix descriptor of a K-major tile stored with the 128-byte swizzle (what a TMA
// load with CU_TENSOR_MAP_SWIZZLE_128B writes): rows of 128 bytes, 8-row atoms of 1024 bytes.
// Bits 0-13: start address >> 4; 16-29: leading byte offset >> 4 (unused for swizzled K-major,
// set to 1 as the ISA suggests); 32-45: stride byte offset >> 4 (1024: the next 8-row atom);
// 49-51: base offset (0: atoms are 1024-byte aligned); 62-63: swizzle mode (1 = 128B).
HM_DEVICE u64 sw128_kmajor_desc(u32 smem_addr) {
  return static_cast<u64>((smem_addr & 0x3FFFF) >> 4) | (static_cast<u64>(1) << 16) |
         (static_cast<u64>(1024 >> 4) << 32) | (static_cast<u64>(1) << 62);
}

// The descriptor of the same tile `bytes` further along K (within the 128-byte row: the swizzle is
// applied by the hardware to the final address, so a K step only moves the start address).
// The start address (bits 0-13, in 16-byte units) of a tile in shared memory never carries into the
// fields above it: adding to the low word alone spares the 64-bit carry and the moves around it in
// every slice of the main loops.
HM_DEVICE u64 desc_advance(u64 desc, u32 bytes) {
  const u32 lo = static_cast<u32>(desc) + (bytes >> 4), hi = static_cast<u32>(desc >> 32);
  return (static_cast<u64>(hi) << 32) | lo;
}

// Orders earlier register / smem writes before the next wgmma reads them.
HM_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

HM_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

template <int N>
HM_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Orders this thread's generic-proxy smem writes (a B tile built by the consumers themselves)
// before later async-proxy reads of them (wgmma).
HM_DEVICE void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Hand registers between warpgroups (every thread of the warpgroup executes it): a producer
// warpgroup drops to N per thread, the consumers take the freed ones (N a multiple of 8).
template <int N>
HM_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

template <int N>
HM_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// Named barrier `id` over THREADS threads (id 0 is __syncthreads): consumer warpgroups
// synchronise on their own while the producer warpgroup has left.
template <int THREADS>
HM_DEVICE void named_barrier(int id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(THREADS) : "memory");
}

// Arrive at named barrier `id` without waiting (a matching named_barrier of the other threads
// waits for these arrivals).
template <int THREADS>
HM_DEVICE void named_barrier_arrive(int id) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(THREADS) : "memory");
}

HM_DEVICE void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

HM_DEVICE void st_shared_u16(u32 addr, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;" ::"r"(addr), "h"(v) : "memory");
}

HM_DEVICE u32 ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// Pins accumulator registers at this point: without it the compiler could read them before the
// wgmma_wait that makes them valid (the asm above names no registers).
template <int R>
HM_DEVICE void fence_registers(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The same for register A fragments: keeps them allocated (and unchanged) up to this point, for a
// wgmma that reads them asynchronously until its wgmma_wait.
HM_DEVICE void fence_registers_u32(u32 (&r)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// The 64 accumulator operands of an m64n128 wgmma with fp32 accumulators in `float (&d)[64]`:
// their placeholders %0..%63, then the asm output list. Macros because asm text must be a string
// literal; every m64n128 form shares them.
#define HM_WGMMA_D64_TEXT                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                      \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "            \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "            \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define HM_WGMMA_D64_OUTPUTS                                                                    \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),           \
  "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),       \
  "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),    \
  "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),    \
  "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),    \
  "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),    \
  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),    \
  "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),    \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),    \
  "+f"(d[63])

// The body of an m64n128 wgmma with operands from the smem descriptors `desc_a` / `desc_b`, and
// `accumulate` (false: scale-d = 0 overwrites d). `INSTR` is the instruction, `TAIL` what follows
// its scale-a / scale-b immediates (the transposes of 16-bit operands).
#define HM_WGMMA_M64N128_F32(INSTR, TAIL)                                                       \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n " INSTR " {" HM_WGMMA_D64_TEXT      \
               "}, %64, %65, p, 1, 1" TAIL ";\n}"                                               \
               : HM_WGMMA_D64_OUTPUTS                                                           \
               : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)))

// The same with A from registers (`const u32 (&a)[4]`, the warp's 16 rows; A has no transpose
// immediate then, so `TAIL` carries at most trans-b). The registers must stay unchanged until the
// wgmma reading them has completed (wgmma_wait).
#define HM_WGMMA_M64N128_F32_RS(INSTR, TAIL)                                                    \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n " INSTR " {" HM_WGMMA_D64_TEXT      \
               "}, {%64, %65, %66, %67}, %68, p, 1, 1" TAIL ";\n}"                              \
               : HM_WGMMA_D64_OUTPUTS                                                           \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b),                       \
                 "r"(static_cast<int>(accumulate)))

// d[64x128] (+)= A[64x32] * B[128x32]^T, e4m3 x e4m3 -> fp32, both K-major in smem. Lane l of warp
// w holds d[4j + 0/1] = row 16w + l/4, columns 8j + 2(l%4) + 0/1, and d[4j + 2/3] = row + 8.
// accumulate = false overwrites d (scale-d = 0).
HM_DEVICE void wgmma_m64n128k32_e4m3(float (&d)[64], u64 desc_a, u64 desc_b, bool accumulate) {
  HM_WGMMA_M64N128_F32("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "");
}

// The same with A from registers: lane l of warp w holds rows 16w + l/4 (a[0], a[2]) and that + 8
// (a[1], a[3]), K bytes 4(l%4)..+3 (a[0], a[1]) and 16 + 4(l%4)..+3 (a[2], a[3]) of the k32 step:
// the mma.sync m16n8k32 A fragment per warp (tests/test_wgmma_register_a.py checks it on the GPU).
HM_DEVICE void wgmma_m64n128k32_e4m3_rs(float (&d)[64], const u32 (&a)[4], u64 desc_b,
                                        bool accumulate) {
  HM_WGMMA_M64N128_F32_RS("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", "");
}

// Wider accumulators: 80 / 88 / 96 fp32 per thread (m64n160 / m64n176 / m64n192), in the m64n128
// layout extended to 20 / 22 / 24 column groups (d[4j + ...]): each list extends the one before.
#define HM_WGMMA_D80_TEXT                                                                       \
  HM_WGMMA_D64_TEXT ", "                                                                        \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define HM_WGMMA_D80_OUTPUTS                                                                    \
  HM_WGMMA_D64_OUTPUTS, "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]),        \
  "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]),    \
  "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define HM_WGMMA_D88_TEXT                                                                       \
  HM_WGMMA_D80_TEXT ", "                                                                        \
  "%80, %81, %82, %83, %84, %85, %86, %87"
#define HM_WGMMA_D88_OUTPUTS                                                                    \
  HM_WGMMA_D80_OUTPUTS, "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),        \
  "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define HM_WGMMA_D96_TEXT                                                                       \
  HM_WGMMA_D88_TEXT ", "                                                                        \
  "%88, %89, %90, %91, %92, %93, %94, %95"
#define HM_WGMMA_D96_OUTPUTS                                                                    \
  HM_WGMMA_D88_OUTPUTS, "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]),        \
  "+f"(d[93]), "+f"(d[94]), "+f"(d[95])

// d[64x192] (+)= A[64x32] * B[192x32]^T, e4m3 x e4m3 -> fp32, both K-major in smem (the m64n128
// form's layout with 24 column groups).
HM_DEVICE void wgmma_m64n192k32_e4m3(float (&d)[96], u64 desc_a, u64 desc_b, bool accumulate) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %98, 0;\n "
               "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 {" HM_WGMMA_D96_TEXT
               "}, %96, %97, p, 1, 1;\n}"
               : HM_WGMMA_D96_OUTPUTS
               : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)));
}

}  // namespace humming
