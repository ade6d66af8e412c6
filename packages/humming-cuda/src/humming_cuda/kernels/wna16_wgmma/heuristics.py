"""Which specs and problems the WnA16-wgmma family runs (sm_90a, M >= 128), and its configs.

Small M stays with the mma.sync WnA16 family: a 128-row wgmma tile wastes most of its work there,
so `supports` refuses M below one tile (and an unknown M) with a reason, and CudaDevice moves on.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wgmma_tile import arch_reason, fitting_configs, problem_reason
from ..wna16.heuristics import _spec_reason as wna16_spec_reason
from .config import WgmmaWna16Config

WGMMA_FORM = "wgmma.m64nNk16"
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


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or arch_reason(caps, "wna16_wgmma", WGMMA_FORM, spec.act.dtype.name, fallback="wna16")
        or problem_reason(problem, "wna16_wgmma", "wna16", act_bytes=2, rows="activation row")
    )
    return Support.no(reason) if reason else Support.yes()


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[WgmmaWna16Config]:
    """Configs for this problem, best first (ring depths that fit the arch's shared memory)."""
    return fitting_configs(supports, WgmmaWna16Config, STAGE_CHOICES, spec, problem, caps)
