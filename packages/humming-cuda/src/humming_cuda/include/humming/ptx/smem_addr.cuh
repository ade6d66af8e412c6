// The shared-state-space address of a generic pointer into shared memory, which the copy, barrier
// and wgmma instructions take (one definition for the cp.async and the TMA headers, which a
// kernel may include together).
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

HM_DEVICE u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

}  // namespace humming
