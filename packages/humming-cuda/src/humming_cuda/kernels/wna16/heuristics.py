"""What the WnA16 family supports, and which configs it tries per (spec, N, K, M bucket)."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..split_k import clamp_split, pow2_fill
from .config import KernelFormat, Wna16Config

DEFAULT_SMS = 132  # used when a caps row has no measured SM count (compile-only targets)


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    """Whether a WnA16 kernel exists for this spec and problem on this arch, and if not, why."""
    reason = _spec_reason(spec) or _arch_reason(spec, caps) or _problem_reason(problem)
    return Support.no(reason) if reason else Support.yes()


def _spec_reason(spec: QuantSpec) -> str:
    w, ep = spec.weight, spec.epilogue
    if spec.layout != "dense":
        return (
            f"layout={spec.layout!r}: the wna16 family computes dense GEMMs; MoE needs a MoE family"
        )
    if spec.act.is_quantized:
        return (
            f"act.dtype={spec.act.dtype.name!r} is quantized: the wna16 family takes fp16 or bf16 "
            "activations (quantized activations need a WnA8/WnA4 family)"
        )
    if ep.activation != "none" or ep.glu != "none" or ep.topk_weight:
        return (
            f"epilogue activation={ep.activation!r} glu={ep.glu!r} topk_weight={ep.topk_weight}: "
            "the wna16 epilogue supports scales, bias and the output dtype only"
        )
    if w.scale.granularity == "block":
        return (
            f"scale granularity 'block' {w.scale.block}: the wna16 family applies group, channel or "
            "tensor scales; express 2D block scales as groups along K"
        )
    if w.zero_point != "none" and w.dtype.kind == "int":
        return (
            f"weight dtype {w.dtype.name!r} with zero_point={w.zero_point!r}: zero points are "
            f"supported on unsigned codes; use uint{w.dtype.bits}"
        )
    if w.dtype.is_float and w.dtype.exponent > 5 and spec.act.dtype.name == "fp16":
        return (
            f"weight dtype {w.dtype.name!r} has {w.dtype.exponent} exponent bits, more than fp16's "
            "5: use bf16 activations"
        )
    return ""


def _arch_reason(spec: QuantSpec, caps: DeviceCaps) -> str:
    if not caps.has("mma.sync"):
        return f"{caps.arch} has no mma.sync: the wna16 family needs sm_75 or newer"
    if spec.act.dtype.name == "bf16" and not caps.has("bf16"):
        return f"{caps.arch} has no bf16 mma.sync: use fp16 activations (bf16 needs sm_80+)"
    return ""


def _problem_reason(problem: GemmProblem) -> str:
    if problem.num_experts != 1 or problem.topk != 1:
        return "num_experts/topk != 1: the wna16 family computes dense GEMMs"
    if problem.k % 8:
        return (
            f"K={problem.k}: the wna16 kernels load activation rows in 16-byte chunks, so K must be "
            "a multiple of 8; pad K (zero weights) to the next multiple of 8"
        )
    if problem.n < 1 or problem.k < 1 or (problem.m is not None and problem.m < 0):
        return f"shape N={problem.n} K={problem.k} M={problem.m}: sizes must be positive"
    return ""


# Tiles per M class, preferred first; the first that fits the arch's shared memory is used.
# H200 sweep (benchmarks/wna16_decode_variants.py, W4A16 g128, notes/wna16_decode.md): for M <= 32
# two 64-column warps x four K warps of 4 k16 steps (BN=128, BK=256, 3 stages) beat the
# one-warp-column tile by 20-40% (57344x8192 M=1: 117 vs 149 us; 8192x28672 M=16: 65 vs 83 us):
# each activation chunk feeds twice the columns and per-stage fixed costs halve. Above M=32 the
# four-warp-column tile with split-K measured best from M=64 on (241 vs 320 us at M=64).
_DECODE = {"warps_n": 2, "warps_k": 4, "k_steps": 4, "stages": 3}
_SMALL = {"warps_n": 1, "warps_k": 4, "k_steps": 2, "stages": 4}
_WIDE = {"warps_n": 4, "warps_k": 1, "k_steps": 4, "stages": 4}


def _tiles(m: int) -> list[dict[str, int]]:
    frags = min(4, max(1, -(-m // 16)))
    if m <= 32:
        return [{"m_frags": frags, **t} for t in (_DECODE, _SMALL)]
    return [{"m_frags": 4, **_WIDE}]


def _fit_stages(fmt: KernelFormat, cfg: Wna16Config, caps: DeviceCaps) -> Wna16Config:
    while cfg.stages > 2 and fmt.smem_bytes(cfg) > caps.smem_per_block:
        cfg = cfg.with_fields(stages=cfg.stages - 1)
    return cfg


def pick_split_k(problem: GemmProblem, cfg: Wna16Config, caps: DeviceCaps) -> int:
    """Split K so that the CTAs fill about two per SM (the decode tiles' occupancy), and at least
    in two while M <= 128: on the H200, 57344x8192 (448 tiles) ran 117 us at split 2 against
    127 us unsplit, 8192x28672 (64 tiles) 65 us at split 4 (67 at 8, 147 unsplit). Keeps >= 4 K
    iterations per split and at most 16 splits."""
    m = max(1, problem.m or 1)
    tiles = -(-problem.n // cfg.block_n) * -(-m // cfg.block_m)
    iters = -(-problem.k // cfg.block_k)
    split = pow2_fill(2 * (caps.sm_count or DEFAULT_SMS), tiles)
    return clamp_split(max(2 if m <= 128 else 1, split), iters)


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[Wna16Config]:
    """Configs for this (spec, N, K, M), best first; empty when `supports` says no."""
    if not supports(spec, problem, caps):
        return []
    fmt = KernelFormat.from_spec(spec)
    m = problem.m if problem.m is not None else 1
    stages_cap = 4 if caps.has("cp.async") else 2
    fitting = []
    for tile in _tiles(m):
        cfg = Wna16Config(arch=caps.arch, **{**tile, "stages": min(tile["stages"], stages_cap)})
        cfg = _fit_stages(fmt, cfg, caps)
        if fmt.smem_bytes(cfg) <= caps.smem_per_block:
            fitting.append(cfg)
    if not fitting:
        return []
    base = fitting[0]
    best = base.with_fields(split_k=pick_split_k(problem, base, caps))
    out = [best]
    for variant in (base, *fitting[1:]):
        if variant not in out:
            out.append(variant)
    return out
