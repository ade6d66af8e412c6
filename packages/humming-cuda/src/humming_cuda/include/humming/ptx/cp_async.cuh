// Global -> shared copies of 16 bytes, asynchronous on sm80+ (cp.async) and synchronous on sm75,
// with the same interface so a kernel's pipeline is written once.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/arith/dialect.cuh"
#include "humming/ptx/smem_addr.cuh"

namespace humming {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define HM_HAS_CP_ASYNC 1
#else
#define HM_HAS_CP_ASYNC 0
#endif

// Copies 16 bytes when `pred`, else writes 16 zero bytes: out-of-range tiles become zeros, which
// every weight format decodes to a finite value, so padded lanes contribute exactly 0.
// The zero fill is a plain shared store, not cp.async with src-size 0: ptxas turns the latter into an
// ignore-source LDGSTS whose address it treats as dead (dropping our `pred ? p : base` select), yet
// the H200 still checks that stale address and faults with CUDA_ERROR_ILLEGAL_INSTRUCTION on some
// code shapes (benchmarks/notes/wna16_decode.md). The store is ordered like the copies: consumers
// read the stage only after cp_async_wait and a barrier.
HM_DEVICE void cp_async16(void* smem, const void* gmem, bool pred) {
#if HM_HAS_CP_ASYNC
  if (pred) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem)
                 : "memory");
  } else {
    *reinterpret_cast<uint4*>(smem) = make_uint4(0, 0, 0, 0);
  }
#else
  uint4 v = make_uint4(0, 0, 0, 0);
  if (pred) v = *reinterpret_cast<const uint4*>(gmem);
  *reinterpret_cast<uint4*>(smem) = v;
#endif
}

// Same, with an L2 evict-first hint: weights are streamed once per call and should not push the
// activations (re-read by every CTA column) out of L2. wna16_decode's weight copies take it, and
// the 8-bit GEMMs' (humming/memory/byte_tile_loader.cuh) on sm_90 only (HM_BYTE_WEIGHT_HINT). In
// the other multistage loaders ptxas 13.0 miscompiled it (tests/sass_audit.py, which checks every
// family's SASS, says how).
// The PPU has no evict-first hint: its dialects take the plain copy (and a zero policy below).
HM_DEVICE void cp_async16_stream(void* smem, const void* gmem, bool pred, u64 policy) {
#if HM_HAS_CP_ASYNC && !HM_PPU_LAYOUT
  if (pred) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(
                     smem_addr(smem)),
                 "l"(gmem), "l"(policy)
                 : "memory");
  } else {
    *reinterpret_cast<uint4*>(smem) = make_uint4(0, 0, 0, 0);
  }
#else
  (void)policy;
  cp_async16(smem, gmem, pred);
#endif
}

// Whether the 8-bit GEMMs' weight copies take the hint: on sm_90, where it is measured (H200,
// same run, 2026-11-30, benchmarks/header_ab.py: W4A8 fp8 6-12% faster at M <= 32, W8A8 -1% to
// +5%) and where ptxas 13.0 compiles it correctly; at sm_120a ptxas 13.0 miscompiles those copies.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && !HM_PPU_LAYOUT
#define HM_BYTE_WEIGHT_HINT 1
#else
#define HM_BYTE_WEIGHT_HINT 0
#endif

HM_DEVICE u64 evict_first_policy() {
#if HM_HAS_CP_ASYNC && !HM_PPU_LAYOUT
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
#else
  return 0;
#endif
}

// The `policy` the 8-bit loaders' weight copies take: evict-first where HM_BYTE_WEIGHT_HINT holds,
// else none (no createpolicy instruction is emitted).
HM_DEVICE u64 byte_weight_policy() {
  if constexpr (HM_BYTE_WEIGHT_HINT) return evict_first_policy();
  return 0;
}

// One 16-byte weight copy of the 8-bit loaders: hinted with `policy` where HM_BYTE_WEIGHT_HINT
// holds, a plain copy elsewhere.
HM_DEVICE void cp_async16_byte_weight(void* smem, const void* gmem, bool pred, u64 policy) {
  if constexpr (HM_BYTE_WEIGHT_HINT) {
    cp_async16_stream(smem, gmem, pred, policy);
  } else {
    cp_async16(smem, gmem, pred);
  }
}

// Copies 4 bytes when `pred`, else writes a zero word (the same plain store as cp_async16's): for
// arrays whose rows need not be 16-byte aligned (per-column scales of any N).
HM_DEVICE void cp_async4(void* smem, const void* gmem, bool pred) {
#if HM_HAS_CP_ASYNC
  if (pred) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(smem)), "l"(gmem)
                 : "memory");
  } else {
    *reinterpret_cast<u32*>(smem) = 0u;
  }
#else
  *reinterpret_cast<u32*>(smem) = pred ? *reinterpret_cast<const u32*>(gmem) : 0u;
#endif
}

// Copies 16 bytes when `copy`, else writes 16 zero bytes, both by one cp.async (a source size of
// 0 reads nothing: `gmem` must still be a valid address). Its mbarrier arrival (.noinc) then
// covers the zeros too, with no shared-memory store to order against the copies.
HM_DEVICE void cp_async16_zfill(void* smem, const void* gmem, bool copy) {
#if HM_HAS_CP_ASYNC
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)),
               "l"(gmem), "r"(copy ? 16 : 0)
               : "memory");
#else
  uint4 v = make_uint4(0, 0, 0, 0);
  if (copy) v = *reinterpret_cast<const uint4*>(gmem);
  *reinterpret_cast<uint4*>(smem) = v;
#endif
}

HM_DEVICE void cp_async_commit() {
#if HM_HAS_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// An arrival on the mbarrier at shared address `bar` once every cp.async this thread has issued so
// far has landed, without waiting for them; `.noinc`: the barrier's expected count includes it.
HM_DEVICE void cp_async_mbar_arrive_noinc(u32 bar) {
#if HM_HAS_CP_ASYNC
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#endif
}

// Wait until at most N committed groups are still in flight.
template <int N>
HM_DEVICE void cp_async_wait() {
#if HM_HAS_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace humming
