"""What the MoE W8A8 / W4A8 family supports, and which configs it tries per (spec, N, K, E, rows)."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..moe_wna16.config import GLUS
from ..moe_wna16.heuristics import block_m_for, dense_spec, moe_shape_reason
from ..w8a8.config import W8a8Format
from ..w8a8.heuristics import INT8_EXACT_K, _arch_reason, _spec_reason
from ..warp_tile import staged_candidates
from .config import MoeW8a8Config

# Warp tile per alignment block (block_m rows): 64 columns per CTA (32 GLU outputs), the dense
# family's decode and mid tiles, so a CTA's register use stays that of verified dense shapes.
BLOCK_TILES = {
    16: {"m_frags": 1, "n_frags": 2, "warps_m": 1, "warps_n": 4},
    32: {"m_frags": 2, "n_frags": 2, "warps_m": 1, "warps_n": 4},
    64: {"m_frags": 2, "n_frags": 4, "warps_m": 2, "warps_n": 2},
}


def _moe_reason(spec: QuantSpec) -> str:
    if spec.layout != "moe":
        return (
            f"layout={spec.layout!r}: the moe_w8a8 family computes indexed MoE GEMMs (layout='moe')"
        )
    ep = spec.epilogue
    if ep.glu != "none" and ep.glu not in GLUS:
        return f"glu={ep.glu!r}: the moe_w8a8 epilogue supports the GLUs {', '.join(GLUS)}"
    act = spec.act
    if act.is_quantized and (act.quant != "dynamic" or act.granularity != "token"):
        return (
            f"activation scales {act.quant}/{act.granularity}: the moe_w8a8 family quantizes "
            "activations dynamically per token (a gathered row carries its own scale); use "
            "act granularity='token', quant='dynamic'"
        )
    if spec.weight.scale.granularity == "block":
        return (
            "block weight scales: the moe_w8a8 family takes per-tensor, per-channel (8-bit) or "
            "group (4-bit) weight scales"
        )
    # Weight, scale and activation types are the dense family's rules (the MoE epilogue was checked
    # above).
    return _spec_reason(dense_spec(spec))


def _problem_reason(spec: QuantSpec, problem: GemmProblem) -> str:
    reason = moe_shape_reason(problem)
    if reason:
        return reason
    if problem.k % 16:
        return (
            f"K={problem.k}: 8-bit rows are quantized and loaded in 16-byte chunks, so K must be a "
            "multiple of 16; pad K with zero weights"
        )
    if not W8a8Format.from_spec(spec).promotes and problem.k > INT8_EXACT_K:
        return f"K={problem.k}: int8 s32 accumulation is exact only up to K={INT8_EXACT_K}"
    if spec.epilogue.glu != "none" and problem.n % 2:
        return f"N={problem.n}: a GLU epilogue needs an even N (gate and up halves)"
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    """Whether a MoE W8A8 kernel exists for this spec and problem on this arch, and if not, why."""
    reason = (
        _moe_reason(spec)
        or _arch_reason(spec.act.dtype.name, caps)
        or _problem_reason(spec, problem)
    )
    return Support.no(reason) if reason else Support.yes()


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[MoeW8a8Config]:
    """Configs for this problem, best first; `problem.m` counts routed rows (M * top_k)."""
    if not supports(spec, problem, caps):
        return []
    fmt = W8a8Format.from_spec(spec)
    block_m = block_m_for(problem.m if problem.m is not None else 1, problem.num_experts)
    first = MoeW8a8Config(arch=caps.arch, weight_bits=fmt.weight_bits, **BLOCK_TILES[block_m])
    return staged_candidates(first, caps)
