"""How a moe_align call is cut into launches: chunk size, warps per CTA, grid, shared memory.

Pure arithmetic on (numel, num_experts), so it is tested on CPU. See the header
(include/humming/kernel/moe_align.cuh) for what the phases do with these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

# Dynamic shared memory every arch grants without an opt-in: one int row of E experts per warp.
SMEM_BUDGET = 48 * 1024
MAX_EXPERTS = SMEM_BUDGET // 4
# Up to this many routing entries, one CTA runs all phases (one launch instead of three): decode
# batches are latency-bound and a single CTA counts a few thousand entries in a few microseconds.
FUSED_MAX_NUMEL = 4096
FUSED_MAX_WARPS = 16  # = MAX_THREADS / 32
SPLIT_MAX_WARPS = 8
# The scan walks each expert's column of per-chunk counts serially: keep the chunks few.
TARGET_CHUNKS = 128
MAX_CHUNK = 1024
INT32_MAX = 2**31 - 1
# The kernels' __launch_bounds__: no CTA of any phase is larger.
MAX_THREADS = 512


@dataclass(frozen=True)
class AlignPlan:
    fused: bool  # one CTA runs count, scan and scatter
    chunk: int  # routing entries per warp task, a multiple of 32
    num_chunks: int
    warps: int  # warps per CTA of the count/scatter (or fused) kernel
    grid: int  # CTAs of the count and scatter kernels
    scan_threads: int  # threads of the single scan CTA (split path)
    smem: int  # dynamic shared memory of the count/scatter (or fused) kernel, bytes
    workspace: int  # int32 entries: hist [num_chunks * E] + starts [E + 1]

    @property
    def threads(self) -> int:
        return 32 * self.warps


def _ceil_div(x: int, m: int) -> int:
    return -(-x // m)


def _round_up(x: int, m: int) -> int:
    return _ceil_div(x, m) * m


def plan_align(numel: int, num_experts: int) -> AlignPlan:
    """The launch plan for `numel` routing entries over `num_experts` experts."""
    if not 1 <= num_experts <= MAX_EXPERTS:
        raise ValueError(
            f"moe_align: num_experts={num_experts}; the cuda kernel keeps one row of experts per "
            f"warp in shared memory and supports 1..{MAX_EXPERTS} experts (use the reference "
            "humming_core.numerics.moe.moe_align beyond that)"
        )
    if numel > INT32_MAX // 2:
        raise ValueError(
            f"moe_align: {numel} routing entries; int32 indices allow at most {INT32_MAX // 2}"
        )
    fit = SMEM_BUDGET // (4 * num_experts)
    if numel <= FUSED_MAX_NUMEL:
        warps = min(FUSED_MAX_WARPS, fit)
        chunk = 32 * max(1, _ceil_div(numel, 32 * warps))
        grid, scan_threads = 1, 32 * warps
    else:
        warps = min(SPLIT_MAX_WARPS, fit)
        chunk = min(MAX_CHUNK, _round_up(_ceil_div(numel, TARGET_CHUNKS), 32))
        grid = _ceil_div(_ceil_div(numel, chunk), warps)
        scan_threads = min(MAX_THREADS, _round_up(num_experts, 32))
    num_chunks = _ceil_div(numel, chunk)
    return AlignPlan(
        fused=numel <= FUSED_MAX_NUMEL,
        chunk=chunk,
        num_chunks=num_chunks,
        warps=warps,
        grid=grid,
        scan_threads=scan_threads,
        smem=4 * num_experts * warps,
        workspace=num_chunks * num_experts + num_experts + 1,
    )
