"""Which MoE WnA16 problems the wgmma kernel runs (sm_90a), when it should, and its configs.

`problem.m` counts routed rows (M * top_k); a CTA computes one expert's alignment block, so what
matters is the rows an expert can expect: ceil(m / num_experts) under uniform routing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..moe_wna16.heuristics import moe_problem_reason, moe_reason
from ..wgmma_tile import arch_reason
from ..wna16.config import KernelFormat
from ..wna16_wgmma.heuristics import WGMMA_FORM
from ..wna16_wgmma.heuristics import _spec_reason as wgmma_spec_reason
from .config import MoeWna16WgmmaConfig, block_ms, smem_bytes, smem_limit

FAMILY = "moe_wna16_wgmma"
# H200, the MoE bench's layer (128 experts, top 8), B/A = this family's time over moe_wna16's in
# one run (benchmarks/moe_family_ab.py; notes/moe_wgmma.md): 24 expected rows per expert 1.26-1.30
# (W4A16 g128, MXFP4), 32 rows 0.91-0.98 with 64-row blocks but 1.21-1.24 with 128-row ones,
# 64 rows 0.83-0.92 with 128-row blocks (0.90-0.98 with 64-row ones, another run), 128 and 512
# rows 0.89-0.97.
MIN_ROWS_PER_EXPERT = 32
# Experts of NARROW_MIN_ROWS to NARROW_MAX_ROWS expected rows run 48-row blocks in the 128-column
# tile at two CTAs per SM (4-bit codes without zero points under 16-bit activations without row
# scales: what was measured and GPU-verified). Same-run H100 sweep of the bench's layer
# (moe_block_sweep.py --form bf16, notes/session47.md, session47/h100/blocks*.json): M = 256 (16
# rows per expert) 0.76x (W4A16 g128, 276.4 -> 209.3 us) / 0.80x (MXFP4) moe_wna16's time; M = 512
# (32 rows) 0.87x / 0.90x the 64-row blocks routed before (252.8 -> 220.2 us; 48-row blocks on 256
# columns 0.92x / 0.94x); M = 128 (8 rows) 1.59x / 1.40x moe_wna16's, M = 1024 (64 rows) 1.45x /
# 1.50x the 96-row blocks.
NARROW_MIN_ROWS, NARROW_MAX_ROWS = 16, 32
NARROW_BLOCK_M = 48
NARROW_TILE = {"block_n": 128, "ctas_per_sm": 2}
# The block: least expected_blocks x BLOCK_COST, a block's time relative to a 128-row one's (a
# ring step's dequantization is the same for every block, its MMA grows with it). Fitted to H100
# same-run sweeps of the bench's layer (benchmarks/moe_block_sweep.py --form bf16,
# notes/session34.md): each time ratio between two blocks at one M, over their expected_blocks,
# gives their cost ratio. Measured, against the 64 / 128-row blocks routed before: M = 1024 (64
# rows per expert) 96-row blocks 0.91x the time (64: 1.13, 160: 1.16); M = 2048 (128 rows)
# 160-row blocks 0.80 (W4A16 g128) / 0.79 (MXFP4), 96: 1.14-1.15; M = 4096 160: 0.96; M = 8192
# 160: 1.01-1.03; M = 512 96: 1.15. Implied costs: 64 0.76, 96 0.84-0.91, 160 1.16-1.19.
# (48-row blocks are taken by rows per expert instead: NARROW_MIN_ROWS.)
BLOCK_COST = {64: 0.76, 96: 0.87, 128: 1.0, 160: 1.17}
# Ring depths best first, each where it fits (config.STAGES: every depth the kernel takes). H200,
# the bench's layer, persistent CTAs, B/A against 4 stages in one process (moe_header_ab.py
# --b-stages, notes/session19.md): 6 stages 0.97 (W4A16 g128) and 0.98-0.99 (MXFP4) at M = 512,
# 2048 and 8192; 5 stages 0.98-0.99; 8 stages (64-row blocks, M = 512) 0.96-0.98; 3 stages 1.03.
STAGES = (6, 5, 4)

# A tile forced by `forced_tile` (block_m, other config fields), or None: the heuristics' choice.
_FORCED: ContextVar[tuple[int | None, dict[str, Any]] | None] = ContextVar(
    "moe_wna16_wgmma_forced", default=None
)


@contextmanager
def forced_tile(block_m: int | None, **fields: Any) -> Iterator[None]:
    """MoE layers built inside run this kernel with `block_m`-row blocks at any rows per expert,
    their configs taking `fields` too (e.g. block_n=128, ctas_per_sm=2); block_m None: never this
    kernel (moe_wna16 instead). For the conformance tests, the sanitizer script and the block
    sweeps, which measure tiles the heuristics do not route."""
    token = _FORCED.set((block_m, fields))
    try:
        yield
    finally:
        _FORCED.reset(token)


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    """The moe_wna16 epilogue and problem rules, the dense wgmma kernel's spec rules, sm_90a."""
    reason = (
        moe_reason(spec, FAMILY, wgmma_spec_reason)
        or arch_reason(caps, FAMILY, WGMMA_FORM, spec.act.dtype.name, fallback="moe_wna16")
        or moe_problem_reason(spec, problem)
    )
    return Support.no(reason) if reason else Support.yes()


def rows_per_expert(problem: GemmProblem) -> int:
    """Expected routed rows per expert (0 when M is unknown)."""
    return -(-max(problem.m or 0, 0) // max(problem.num_experts, 1))


def prefers(
    spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps, row_scaled: bool = False
) -> bool:
    """Large M only: fewer rows per expert leave moe_wna16's narrower blocks less padding (from
    NARROW_MIN_ROWS where the narrow tile runs them, MIN_ROWS_PER_EXPERT elsewhere)."""
    forced = _FORCED.get()
    if forced is not None:
        return forced[0] is not None
    return rows_per_expert(problem) >= MIN_ROWS_PER_EXPERT or narrow(spec, problem, row_scaled)


def narrow(spec: QuantSpec, problem: GemmProblem, row_scaled: bool = False) -> bool:
    """Whether the problem takes the 128-column tile's 48-row blocks (NARROW_MIN_ROWS ..
    NARROW_MAX_ROWS rows per expert; 4-bit codes without zero points under 16-bit activations
    without row scales)."""
    fmt = KernelFormat.from_spec(spec)
    return (
        NARROW_MIN_ROWS <= rows_per_expert(problem) <= NARROW_MAX_ROWS
        and fmt.bits == 4
        and fmt.zero == "none"
        and not row_scaled
        and spec.act.dtype.name in ("fp16", "bf16")
    )


def expected_blocks(problem: GemmProblem, block_m: int) -> float:
    """Alignment blocks of `block_m` rows an expert expects under uniform routing: the sum over
    k >= 0 of P(its rows > k * block_m), its rows binomial (problem.m routed rows, 1 / E each) in
    the normal approximation."""
    e = max(problem.num_experts, 1)
    mean = max(problem.m or 0, 0) / e
    sd = max(math.sqrt(mean * (1 - 1 / e)), 1e-6)
    total, k = 0.0, 0
    while k * block_m <= mean + 8 * sd:
        total += 0.5 * math.erfc((k * block_m + 0.5 - mean) / (sd * math.sqrt(2)))
        k += 1
    return total


def choose_block_m(
    spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps, row_scaled: bool = False
) -> int | None:
    """The alignment block (token rows per tile) for the rows an expert can expect, among those
    with a ring depth of STAGES that fits (8-bit codes' 160-row blocks fit only 3 stages); None
    where none fits the GPU's shared memory."""
    forced = _FORCED.get()
    if forced is not None:
        return forced[0]
    fmt = KernelFormat.from_spec(spec)
    if narrow(spec, problem, row_scaled) and _configs(fmt, NARROW_BLOCK_M, caps, **NARROW_TILE):
        return NARROW_BLOCK_M
    blocks = [b for b in block_ms(fmt, row_scaled) if b in BLOCK_COST and _configs(fmt, b, caps)]
    return min(blocks, key=lambda b: expected_blocks(problem, b) * BLOCK_COST[b], default=None)


def _configs(
    fmt: KernelFormat, block_m: int, caps: DeviceCaps, **tile
) -> list[MoeWna16WgmmaConfig]:
    """The ring depths of STAGES (best first) whose `block_m`-row blocks fit shared memory; `tile`:
    other config fields (forced_tile's)."""
    forced = _FORCED.get()
    tile = {**(forced[1] if forced is not None else {}), **tile}
    configs = [
        MoeWna16WgmmaConfig(arch=caps.arch, stages=s, block_m=block_m, **tile) for s in STAGES
    ]
    return [c for c in configs if smem_bytes(fmt, c) <= smem_limit(c, caps.smem_per_block)]


def candidates(
    spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps, row_scaled: bool = False
) -> list[MoeWna16WgmmaConfig]:
    """Configs best first: the block for the rows per expert, each ring depth that fits.
    `row_scaled`: for a kernel rendered with per-row activation scales (moe_wna16_a8)."""
    if not supports(spec, problem, caps):
        return []
    block_m = choose_block_m(spec, problem, caps, row_scaled)
    if block_m is None:
        return []
    tile = NARROW_TILE if _FORCED.get() is None and block_m == NARROW_BLOCK_M else {}
    return _configs(KernelFormat.from_spec(spec), block_m, caps, **tile)
