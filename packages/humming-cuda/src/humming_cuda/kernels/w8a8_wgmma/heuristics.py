"""Which specs and problems the W8A8-wgmma family runs (fp8 on sm_90a, M >= 128), and its configs.

Small M stays with the mma.sync W8A8 family: a 128-row wgmma tile wastes most of its work there,
so `supports` refuses M below one tile (and an unknown M) with a reason, and CudaDevice moves on.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..act_quant import unsupported_reason
from ..wgmma_tile import arch_reason, fitting_configs, problem_reason
from .config import BLOCK_K, W8a8WgmmaConfig

WGMMA_FORM = "wgmma.m64nNk32"
WEIGHT_SCALES = ("tensor", "channel", "block")
STAGE_CHOICES = (6, 4)  # deepest ring first: K loop latency hiding; 4 as the lighter alternative


def _spec_reason(spec: QuantSpec) -> str:
    w, act = spec.weight, spec.act
    if not act.is_quantized or act.dtype.name != "e4m3" or w.dtype.name != "e4m3":
        return (
            f"weights {w.dtype.name!r} x activations {act.dtype.name!r}: the w8a8_wgmma family "
            "multiplies e4m3 weights by e4m3 activations only (W8A8_FP8, FP8_BLOCK128)"
        )
    reason = unsupported_reason(act)
    if reason:
        return reason
    if w.zero_point != "none" or w.global_scale:
        return "the w8a8_wgmma family takes e4m3 weights without zero points or global scales"
    s = w.scale
    if s.granularity not in WEIGHT_SCALES:
        return (
            f"weight scale granularity {s.granularity!r}: the w8a8_wgmma family takes per-tensor, "
            "per-channel or 128x128 block scales"
        )
    if s.granularity == "block" and tuple(s.block) != (BLOCK_K, BLOCK_K):
        return f"weight block {tuple(s.block)}: only 128x128 blocks (DeepSeek FP8) are supported"
    if s.dtype.name not in ("fp32", "fp16", "bf16"):
        return f"weight scale dtype {s.dtype.name!r}: use fp32, fp16 or bf16"
    e = spec.epilogue
    if e.activation != "none" or e.glu != "none" or e.topk_weight or spec.layout != "dense":
        return "the w8a8_wgmma family computes dense GEMMs with scales and bias only"
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or arch_reason(caps, "w8a8_wgmma", WGMMA_FORM, "e4m3", fallback="w8a8")
        or problem_reason(problem, "w8a8_wgmma", fallback="w8a8", act_bytes=1)
    )
    return Support.no(reason) if reason else Support.yes()


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W8a8WgmmaConfig]:
    """Configs for this problem, best first (ring depths that fit the arch's shared memory)."""
    return fitting_configs(supports, W8a8WgmmaConfig, STAGE_CHOICES, spec, problem, caps)
