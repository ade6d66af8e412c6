// sm_90 asynchronous copies: mbarriers with transaction counts, 2-D TMA tile loads
// (cp.async.bulk.tensor) described by a CUtensorMap that the host encodes, and plain bulk copies
// of contiguous bytes (cp.async.bulk).
#pragma once
#include "humming/arith/common.cuh"
#include "humming/ptx/smem_addr.cuh"

namespace humming {

// The 128-byte opaque CUtensorMap (cuda.h is not available to NVRTC); passed by value as a
// __grid_constant__ kernel parameter so TMA can read it from the parameter space.
struct alignas(64) TmaDescriptor {
  u64 opaque[16];
};

HM_DEVICE void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA) before any copy signals them.
HM_DEVICE void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also announces `bytes` of TMA transactions the phase must still receive.
HM_DEVICE void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

HM_DEVICE void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Spin until the phase with parity `parity` has completed. Waiting for parity 1 on a fresh
// barrier returns at once (the phase "before" the first counts as complete), which lets a
// producer treat every stage as free on its first pass. The loop stays inside one asm block (its
// labels are local to the braces) so the compiler sees no divergent branch before the
// warp-collective wgmma that usually follows.
HM_DEVICE void mbar_wait(u32 bar, u32 parity) {
  asm volatile(
      "{\n .reg .pred p;\n"
      "WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra WAIT;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
}

HM_DEVICE void tma_prefetch_descriptor(const TmaDescriptor* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(desc)) : "memory");
}

// Load the box at (inner, outer) of `desc` into smem `dst`; completion is counted on `bar` in
// bytes (the whole box, out-of-bounds elements included, which TMA fills with zeros).
HM_DEVICE void tma_load_2d(u32 dst, const TmaDescriptor* desc, int inner, int outer, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<u64>(desc)), "r"(inner), "r"(outer), "r"(bar)
      : "memory");
}

// Copy `bytes` (a multiple of 16, both addresses 16-byte aligned) of contiguous global memory to
// smem `dst` with the bulk-copy engine; completion is counted on `bar` in bytes.
HM_DEVICE void bulk_load(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(reinterpret_cast<u64>(src)), "r"(bytes), "r"(bar)
      : "memory");
}

// Copy `bytes` (a multiple of 16, both addresses 16-byte aligned) of smem `src` to global `dst`
// with the bulk-copy engine, in this thread's current bulk group (bulk_commit closes it).
HM_DEVICE void bulk_store(void* dst, u32 src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
                   reinterpret_cast<u64>(dst)),
               "r"(src), "r"(bytes)
               : "memory");
}

HM_DEVICE void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Wait until at most N of this thread's committed bulk groups still read their shared memory
// (the source may then be overwritten; the global writes complete on their own).
template <int N>
HM_DEVICE void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

}  // namespace humming
