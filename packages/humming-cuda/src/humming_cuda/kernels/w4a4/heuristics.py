"""Which specs the W4A4 family runs, on which arch, and its tile choice per M."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..act_quant.act4 import unsupported_reason as act_reason
from ..warp_tile import staged_candidates, tile_for_m
from .config import INT4_TENSOR_CORE_ARCHS, MMA_K, W4a4Config, W4a4Format, path_of

FP4_KINDS = {"nvfp4": "nvf4", "mxfp4": "mxf4"}  # caps.mma keys of the block-scaled kinds
FP4_WEIGHTS = {"nvfp4": (16, "ue4m3", True), "mxfp4": (32, "e8m0", False)}
INT4_SCALE_DTYPES = ("fp32", "fp16", "bf16", "e8m0")


def _int4_weight_reason(spec: QuantSpec) -> str:
    w = spec.weight
    s = w.scale
    if w.dtype.name != "int4" or w.zero_point != "none" or w.global_scale:
        return (
            f"{w.dtype.name} weights (zero_point={w.zero_point!r}, global_scale={w.global_scale}) "
            "with int4 activations: W4A4 int4 takes symmetric int4 weights without zero points or "
            "global scales"
        )
    grouped = s.granularity == "group"
    g = s.group_size if grouped else 0
    if s.granularity not in ("channel", "group") or (
        grouped and (g % MMA_K or (256 % g and g % 256))
    ):
        shown = g if grouped else s.granularity
        return (
            f"int4 weight scales {shown!r}: W4A4 int4 takes per-channel scales or groups of 64, 128 "
            "or a multiple of 256 along K"
        )
    if s.dtype.name not in INT4_SCALE_DTYPES:
        return f"weight scale dtype {s.dtype.name!r}: use one of {', '.join(INT4_SCALE_DTYPES)}"
    return ""


def _fp4_weight_reason(spec: QuantSpec, path: str) -> str:
    w = spec.weight
    group, dtype, global_scale = FP4_WEIGHTS[path]
    s = w.scale
    ok = (
        w.dtype.name == "e2m1"
        and w.zero_point == "none"
        and s.granularity == "group"
        and s.group_size == group
        and s.dtype.name == dtype
        and w.global_scale == global_scale
    )
    if ok:
        return ""
    return (
        f"{path.upper()} activations need {path.upper()} weights: e2m1, {dtype} scales per "
        f"{group} along K{', a global scale' if global_scale else ''}, no zero points"
    )


def _spec_reason(spec: QuantSpec) -> str:
    if not spec.act.is_quantized or spec.act.dtype.name not in ("int4", "e2m1"):
        return (
            f"the w4a4 family needs int4 or e2m1 activations, the spec has {spec.act.dtype.name!r}"
        )
    reason = act_reason(spec.act)
    if reason:
        return reason
    path = path_of(spec)
    reason = _int4_weight_reason(spec) if path == "int4" else _fp4_weight_reason(spec, path)
    if reason:
        return reason
    e = spec.epilogue
    if e.activation != "none" or e.glu != "none" or e.topk_weight or spec.layout != "dense":
        return "the w4a4 family computes dense GEMMs with scales and bias only (no activation/GLU)"
    return ""


def _has_int4(caps: DeviceCaps) -> bool:
    return caps.arch in INT4_TENSOR_CORE_ARCHS and "mma.m16n8k64" in caps.mma.get("int4", [])


def _has_fp4(caps: DeviceCaps, path: str) -> bool:
    return "mma.block_scale.m16n8k64" in caps.mma.get(FP4_KINDS[path], [])


def _arch_reason(spec: QuantSpec, caps: DeviceCaps) -> str:
    path = path_of(spec)
    has = _has_int4(caps) if path == "int4" else _has_fp4(caps, path)
    if has and caps.has("cp.async"):
        return ""
    needs = "W4A4 needs int4 mma.sync (sm80-sm89) or block-scaled fp4 mma (sm120a/sm121a)"
    if not _has_int4(caps) and not _has_fp4(caps, "nvfp4"):
        return f"{needs}; {caps.arch} has neither"
    other = "block-scaled fp4 mma" if path == "int4" else "int4 mma.sync"
    return f"{needs}; {caps.arch} has only {other}, which this {path} spec does not use"


def _problem_reason(problem: GemmProblem) -> str:
    if problem.num_experts != 1 or problem.topk != 1:
        return "num_experts/topk != 1: the w4a4 family computes dense GEMMs"
    if problem.n < 1 or problem.k < 1:
        return f"shape N={problem.n} K={problem.k}: sizes must be positive"
    if problem.k % MMA_K:
        return (
            f"K={problem.k}: 4-bit operands are multiplied {MMA_K} deep per MMA, so K must be a "
            f"multiple of {MMA_K}; pad K with zero weights"
        )
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = _spec_reason(spec) or _arch_reason(spec, caps) or _problem_reason(problem)
    return Support.no(reason) if reason else Support.yes()


def _large_tile(fmt: W4a4Format) -> dict[str, int]:
    # Promoting int4 kernels keep fp32 totals next to the s32 accumulators: 64x128 tiles, half the
    # columns per warp (128x128 spills on sm_80). fp4 kernels hold block-scale registers per
    # fragment: 128x128 tiles with half the rows per warp.
    if fmt.promotes:
        return {"m_frags": 2, "n_frags": 4, "warps_m": 2, "warps_n": 4}
    if fmt.scaled:
        return {"m_frags": 2, "n_frags": 8, "warps_m": 4, "warps_n": 2}
    return {"m_frags": 4, "n_frags": 8, "warps_m": 2, "warps_n": 2}


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W4a4Config]:
    """Configs for this (spec, N, K, M), best first; empty when `supports` says no."""
    if not supports(spec, problem, caps):
        return []
    fmt = W4a4Format.from_spec(spec)
    tile = tile_for_m(problem.m, _large_tile(fmt))
    return staged_candidates(W4a4Config(arch=caps.arch, **tile), caps)
