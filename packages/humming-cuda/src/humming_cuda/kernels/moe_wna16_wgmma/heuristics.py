"""Which MoE WnA16 problems the wgmma kernel runs (sm_90a), when it should, and its configs.

`problem.m` counts routed rows (M * top_k); a CTA computes one expert's alignment block, so what
matters is the rows an expert can expect: ceil(m / num_experts) under uniform routing.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..moe_wna16.heuristics import moe_problem_reason, moe_reason
from ..wgmma_tile import arch_reason
from ..wna16.config import KernelFormat
from ..wna16_wgmma.heuristics import WGMMA_FORM
from ..wna16_wgmma.heuristics import _spec_reason as wgmma_spec_reason
from .config import MoeWna16WgmmaConfig, smem_bytes

FAMILY = "moe_wna16_wgmma"
# H200, the MoE bench's layer (128 experts, top 8), B/A = this family's time over moe_wna16's in
# one run (benchmarks/moe_family_ab.py; notes/moe_wgmma.md): 24 expected rows per expert 1.26-1.30
# (W4A16 g128, MXFP4), 32 rows 0.91-0.98 with 64-row blocks but 1.21-1.24 with 128-row ones,
# 64 rows 0.83-0.92 with 128-row blocks (0.90-0.98 with 64-row ones, another run), 128 and 512
# rows 0.89-0.97.
MIN_ROWS_PER_EXPERT = 32
MAX_ROWS_FOR_BLOCK_64 = 63
# Ring depths best first, each where it fits (config.STAGES: every depth the kernel takes). H200,
# the bench's layer, persistent CTAs, B/A against 4 stages in one process (moe_header_ab.py
# --b-stages, notes/session19.md): 6 stages 0.97 (W4A16 g128) and 0.98-0.99 (MXFP4) at M = 512,
# 2048 and 8192; 5 stages 0.98-0.99; 8 stages (64-row blocks, M = 512) 0.96-0.98; 3 stages 1.03.
STAGES = (6, 5, 4)


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


def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Large M only: fewer rows per expert leave moe_wna16's narrower blocks less padding."""
    return rows_per_expert(problem) >= MIN_ROWS_PER_EXPERT


def candidates(
    spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps
) -> list[MoeWna16WgmmaConfig]:
    """Configs best first: the block for the rows per expert, each ring depth that fits."""
    if not supports(spec, problem, caps):
        return []
    block_m = 64 if rows_per_expert(problem) <= MAX_ROWS_FOR_BLOCK_64 else 128
    fmt = KernelFormat.from_spec(spec)
    configs = [MoeWna16WgmmaConfig(arch=caps.arch, stages=s, block_m=block_m) for s in STAGES]
    return [c for c in configs if smem_bytes(fmt, c) <= caps.smem_per_block]
