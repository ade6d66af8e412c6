// Programmatic dependent launch (sm_90+). A kernel launched with the PDL attribute
// (humming_cuda.launch.Launcher(pdl=True)) may start while the kernel before it in the stream is
// still running: it must not read what that kernel writes, nor write what it reads, before
// wait_prior_grid() returns (the previous grid has completed and its writes are visible).
// Without the attribute the wait returns at once. Older arches and the PPU have neither
// instruction: there both calls are no-ops and kernels are launched without the attribute. The
// PPU emulation on an NVIDIA GPU keeps them (its configs are the NVIDIA arch's).
#pragma once
#include "humming/arith/common.cuh"
#include "humming/arith/dialect.cuh"

namespace humming {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && HUMMING_DIALECT != HM_DIALECT_PPU
#define HM_HAS_PDL 1
#else
#define HM_HAS_PDL 0
#endif

HM_DEVICE void wait_prior_grid() {
#if HM_HAS_PDL
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the next PDL kernel in the stream launch once every CTA of this grid has called this (or
// exited): its CTAs take SM slots as ours retire and run up to their own wait_prior_grid().
HM_DEVICE void allow_next_grid() {
#if HM_HAS_PDL
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace humming
