"""Which specs and problems the WnA16-wgmma family runs (sm_90a, M >= 128), and its configs.

Small M stays with the mma.sync WnA16 family: a 128-row wgmma tile wastes most of its work there,
so `supports` refuses M below one tile (and an unknown M) with a reason, and CudaDevice moves on.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wna16.heuristics import _spec_reason as wna16_spec_reason
from .config import BLOCK_M, WgmmaWna16Config

WGMMA_FORM = "wgmma.m64nNk16"
FEATURES = ("wgmma", "tma", "mbarrier")
STAGE_CHOICES = (4, 6)  # 4 x tiles cover the dequantization's lag; 6 as the deeper alternative


def _spec_reason(spec: QuantSpec) -> str:
    """The wna16 family's own checks (its layout is ours), then what this kernel adds."""
    reason = wna16_spec_reason(spec)
    if reason:
        return reason.replace("the wna16 family", "the wna16_wgmma family")
    w = spec.weight
    if w.dtype.kind not in ("int", "uint"):
        return (
            f"weight dtype {w.dtype.name!r}: the wna16_wgmma family dequantizes integer codes "
            "(int1-8 / uint1-8); float codes use the wna16 family"
        )
    return ""


def _arch_reason(spec: QuantSpec, caps: DeviceCaps) -> str:
    missing = [f for f in FEATURES if not caps.has(f)]
    act = spec.act.dtype.name
    if missing or WGMMA_FORM not in caps.mma.get(act, []):
        return (
            f"{caps.arch} lacks {', '.join(missing) or WGMMA_FORM + ' for ' + act}: the "
            "wna16_wgmma family needs sm_90a (Hopper wgmma + TMA); other arches use the wna16 family"
        )
    return ""


def _problem_reason(problem: GemmProblem) -> str:
    if problem.num_experts != 1 or problem.topk != 1:
        return "num_experts/topk != 1: the wna16_wgmma family computes dense GEMMs"
    if problem.m is None or problem.m < BLOCK_M:
        return (
            f"M={problem.m}: the wna16_wgmma family serves M >= {BLOCK_M} (one 128-row tile); "
            "smaller or unknown M uses the mma.sync wna16 family"
        )
    if problem.n < 1 or problem.k < 1:
        return f"shape N={problem.n} K={problem.k}: sizes must be positive"
    if problem.k % 8:
        return (
            f"K={problem.k}: TMA needs 16-byte activation row strides, so K must be a multiple of "
            "8; pad K with zero weights"
        )
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = _spec_reason(spec) or _arch_reason(spec, caps) or _problem_reason(problem)
    return Support.no(reason) if reason else Support.yes()


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[WgmmaWna16Config]:
    """Configs for this problem, best first (ring depths that fit the arch's shared memory)."""
    if not supports(spec, problem, caps):
        return []
    configs = [WgmmaWna16Config(arch=caps.arch, stages=s) for s in STAGE_CHOICES]
    return [c for c in configs if c.smem_bytes <= caps.smem_per_block]
