// The multistage cp.async main loop every mma.sync kernel runs (wna16, w8a8, w4a4 and their MoE
// forms): STAGES - 1 iterations' copies in flight ahead of the one computed, one commit group per
// iteration (empty ones past the end keep the wait counts right), a barrier before each compute so
// every thread's copies of that stage have landed, and all copies drained at the end.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/ptx/cp_async.cuh"
#include "humming/ptx/pdl.cuh"

namespace humming {

// Iterations it0 .. it1 - 1 after the prologue's first STAGES - 1 copies have been issued and
// committed (one group each).
template <int STAGES, class Load, class Compute>
HM_DEVICE void cp_async_main_loop(int it0, int it1, Load&& load, Compute&& compute) {
  for (int it = it0; it < it1; ++it) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = it + STAGES - 1;
    if (next < it1) load((next - it0) % STAGES, next);
    cp_async_commit();
    compute((it - it0) % STAGES, it);
  }
  cp_async_wait<0>();
}

// Iterations it0 .. it1 - 1; load(buffer, it) issues iteration it's copies into ring buffer
// `buffer`, compute(buffer, it) consumes them (buffer = (it - it0) % STAGES).
template <int STAGES, class Load, class Compute>
HM_DEVICE void cp_async_pipeline(int it0, int it1, Load&& load, Compute&& compute) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (it0 + s < it1) load(s, it0 + s);
    cp_async_commit();
  }
  cp_async_main_loop<STAGES>(it0, it1, load, compute);
}

// The same loop for a kernel launched with PDL (ptx/pdl.cuh), with the prologue's copies in two
// parts: early(buffer, it) copies what no earlier kernel in the stream writes (weights, scales),
// late(buffer, it) the rest (activations). The prologue issues the first iterations' early
// copies, waits for the previous grid, lets the next one launch, then issues their late copies:
// the weights' DRAM latency overlaps the previous kernel's tail. The prologue's copies form one
// commit group (then empty ones, so the loop's wait counts hold). The main loop issues a whole
// stage with load(buffer, it), which the kernel orders as suits its register allocation (w8a8's
// 256-thread fp8 block-scale tile spills under NVRTC 13.5 when its weights go before its
// activations). The caller must not touch global memory a previous kernel may write or read
// before this call.
template <int STAGES, class Early, class Late, class Load, class Compute>
HM_DEVICE void cp_async_pipeline_pdl(int it0, int it1, Early&& early, Late&& late, Load&& load,
                                     Compute&& compute) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (it0 + s < it1) early(s, it0 + s);
  }
  wait_prior_grid();
  allow_next_grid();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (it0 + s < it1) late(s, it0 + s);
    cp_async_commit();
  }
  cp_async_main_loop<STAGES>(it0, it1, load, compute);
}

}  // namespace humming
