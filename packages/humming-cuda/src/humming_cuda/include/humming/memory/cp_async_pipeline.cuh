// The multistage cp.async main loop every mma.sync kernel runs (wna16, w8a8, w4a4 and their MoE
// forms): STAGES - 1 iterations' copies in flight ahead of the one computed, one commit group per
// iteration (empty ones past the end keep the wait counts right), a barrier before each compute so
// every thread's copies of that stage have landed, and all copies drained at the end.
#pragma once
#include "humming/arith/common.cuh"
#include "humming/ptx/cp_async.cuh"

namespace humming {

// Iterations it0 .. it1 - 1; load(buffer, it) issues iteration it's copies into ring buffer
// `buffer`, compute(buffer, it) consumes them (buffer = (it - it0) % STAGES).
template <int STAGES, class Load, class Compute>
HM_DEVICE void cp_async_pipeline(int it0, int it1, Load&& load, Compute&& compute) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (it0 + s < it1) load(s, it0 + s);
    cp_async_commit();
  }
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

}  // namespace humming
