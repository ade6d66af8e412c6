"""Which MoE specs with 8-bit activations run on the WnA16 MoE kernels, and their configs.

The activations are quantized per token exactly as the reference does (the act_quant kernels),
their 8-bit codes widened to bf16 (every int8 and e4m3 value is a bf16 value) and multiplied by
weights dequantized to bf16 (exact for 4-bit codes times power-of-two scales: MXFP4, MXINT4), so
each product is exact and the sums are fp32; the token's scale multiplies its row's sums before
the epilogue (MoeRowScaled). Other scale types would round every weight to bf16 in the kernels
that dequantize in the loop, an error the W4A8 contract does not allow: they stay moe_w8a8's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec
from humming_core.spec.quant import ActSpec

from ..act_quant import ActQuantFormat, unsupported_reason
from ..moe_wna16 import FAMILY as MOE_WNA16
from ..moe_wna16_wgmma import FAMILY as MOE_WNA16_WGMMA
from ..moe_wna16_wgmma.config import (
    E4M3_TWO_CTA_BLOCK_M,
    MoeWna16WgmmaConfig,
    smem_bytes,
    smem_limit,
)
from ..moe_wna16_wgmma.heuristics import candidates as wgmma_candidates
from ..moe_wna16_wgmma.heuristics import rows_per_expert
from ..wna16.config import KernelFormat
from .config import MoeWna16A8Config

# Ring depths of the e4m3 form, best first, each where it fits (4 at most with 128-row blocks).
E4M3_STAGES = (6, 5, 4, 3)
# Rows an expert can expect (moe_wna16_wgmma.heuristics.rows_per_expert) from which the e4m3 form
# runs; below, moe_wna16's decode kernel on bf16 codes. The MoE bench's layer (128 experts, top 8),
# benchmarks/moe_block_sweep.py, e4m3 form with 16-row blocks (two CTAs per SM) over the decode
# kernel, same run: H200 with the first conversion (notes/session21.md) 2 rows (M = 32) 1.07x the
# time, 4 rows (M = 64) 1.01x, 8 rows 0.76x; H100 with the prmt-sign conversion (session 37)
# 2 rows 0.99x, 4 rows 0.92x.
E4M3_MIN_ROWS_PER_EXPERT = 4
# Up to 16 rows per expert 16-row blocks (wgmma n16); above, 64 rows up to 63 per expert, then 128
# (the e4m3 tile has no 96 / 160): at 32 rows per expert (M = 512) 32-row blocks took 1.36x and
# 16-row ones 1.59x the time of 64-row ones.
E4M3_NARROW_BLOCK = 16
E4M3_NARROW_CTAS = 2  # CTAs per SM of the narrow blocks' configs tried first
E4M3_MAX_ROWS_FOR_BLOCK_64 = 63
# Their ring depth: 4 fits half an SM too, but ptxas serializes its wgmmas (C7513).
E4M3_TWO_CTA_STAGES = (3,)

# The e4m3 form's block and narrow blocks' CTAs per SM forced by `forced_e4m3`, or None.
_FORCED: ContextVar[tuple[int | None, int] | None] = ContextVar("moe_wna16_a8_forced", default=None)


@contextmanager
def forced_e4m3(block_m: int | None, narrow_ctas: int = E4M3_NARROW_CTAS) -> Iterator[None]:
    """MXFP4 x e4m3 MoE layers built inside run the e4m3 form with `block_m`-row blocks at any
    rows per expert (None: never the e4m3 form, the bf16 codes instead), blocks of up to
    E4M3_TWO_CTA_BLOCK_M rows split first for `narrow_ctas` CTAs per SM (1 or 2). For the
    conformance tests and the block sweeps, which measure blocks the heuristics do not route."""
    if narrow_ctas not in (1, 2):
        raise ValueError(f"narrow_ctas={narrow_ctas}: the e4m3 form runs 1 or 2 CTAs per SM")
    token = _FORCED.set((block_m, narrow_ctas))
    try:
        yield
    finally:
        _FORCED.reset(token)


def codes_spec(spec: QuantSpec) -> QuantSpec:
    """`spec` with bf16 activations: what the WnA16 MoE kernels compute on the widened codes."""
    return spec.model_copy(update={"act": ActSpec(dtype="bf16")})


def quant_format(spec: QuantSpec, e4m3: bool = False) -> ActQuantFormat:
    """The module's quantizer: per-token codes written as their bf16 values (one pass), or, for
    the e4m3 inner kernel, as e4m3 codes in its interleaved order."""
    return ActQuantFormat.from_spec(spec.act, wide=not e4m3, interleave=e4m3)


def e4m3_reason(spec: QuantSpec) -> str:
    """Why `spec` cannot run on the e4m3 form of moe_wna16_wgmma ('' when it can): e2m1 codes
    with e8m0 scales in groups of 32 or more (a k32 wgmma step reads one scale per row), and e4m3
    activations (the form multiplies e4m3 by e4m3)."""
    weight = spec.weight
    if spec.act.dtype.name != "e4m3":
        return f"activations {spec.act.dtype.name!r}: the e4m3 form multiplies e4m3 codes"
    if weight.dtype.name != "e2m1" or weight.scale.dtype.name != "e8m0":
        return (
            f"{weight.dtype.name} weights with {weight.scale.dtype.name} scales: the e4m3 form "
            "folds e8m0 scales into e2m1 codes (MXFP4)"
        )
    if weight.scale.granularity != "group" or weight.scale.group_size % 32:
        return "the e4m3 form reads one scale per row and 32-deep K step: groups of 32 or more"
    return ""


def _spec_reason(spec: QuantSpec) -> str:
    act, weight = spec.act, spec.weight
    if spec.layout != "moe":
        return f"layout={spec.layout!r}: the moe_wna16_a8 family computes indexed MoE GEMMs"
    if not act.is_quantized:
        return f"activations {act.dtype.name!r}: the moe_wna16_a8 family takes int8 or e4m3 codes"
    reason = unsupported_reason(act)  # the quantizer's codes (int8, e4m3) and scales
    if reason:
        return reason
    if act.quant != "dynamic" or act.granularity != "token":
        return (
            f"activation scales {act.quant} / {act.granularity}: the moe_wna16_a8 family takes "
            "dynamic per-token scales (one per routed row's token)"
        )
    if weight.dtype.name not in ("e2m1", "int4") or weight.scale.dtype.name != "e8m0":
        return (
            f"{weight.dtype.name} weights with {weight.scale.dtype.name} scales: the "
            "moe_wna16_a8 family needs 4-bit codes with power-of-two (e8m0) scales, whose "
            "dequantized values bf16 holds exactly (MXFP4, MXINT4)"
        )
    return ""


def _inner(codes: QuantSpec, problem: GemmProblem, caps: DeviceCaps):
    """The WnA16 MoE family for the codes spec, as the device routes it: moe_wna16_wgmma where it
    runs and prefers the problem, else moe_wna16."""
    if MOE_WNA16_WGMMA.supports(codes, problem, caps) and MOE_WNA16_WGMMA.prefers(
        codes, problem, caps, row_scaled=True
    ):
        return MOE_WNA16_WGMMA
    return MOE_WNA16


def _codes_problem(problem: GemmProblem) -> GemmProblem:
    return dataclasses.replace(problem, act_dtype="bf16")


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = _spec_reason(spec)
    if reason:
        return Support.no(reason)
    if problem.k % 16:
        return Support.no(
            f"K={problem.k}: the activation quantizer writes rows in 16-byte chunks of 8-bit "
            "codes, so K must be a multiple of 16; pad K with zero weights"
        )
    return MOE_WNA16.supports(codes_spec(spec), _codes_problem(problem), caps)


def e4m3_block(problem: GemmProblem) -> int | None:
    """The e4m3 form's block for `problem` (routed rows), None where the decode kernel runs."""
    forced = _FORCED.get()
    if forced is not None:
        return forced[0]
    rows = rows_per_expert(problem)
    if rows < E4M3_MIN_ROWS_PER_EXPERT:
        return None
    if rows <= E4M3_NARROW_BLOCK:
        return E4M3_NARROW_BLOCK
    return 64 if rows <= E4M3_MAX_ROWS_FOR_BLOCK_64 else 128


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[MoeWna16A8Config]:
    """The inner family's configs for the codes spec, best first: the e4m3 form where the spec
    and the GPU take it (e4m3_block), else the WnA16 MoE kernel the device would route the codes
    spec to."""
    if not supports(spec, problem, caps):
        return []
    codes, codes_problem = codes_spec(spec), _codes_problem(problem)
    block = None
    if not e4m3_reason(spec) and MOE_WNA16_WGMMA.supports(codes, codes_problem, caps):
        block = e4m3_block(codes_problem)
    if block is not None:
        inner = _e4m3_configs(codes, block, caps)
    else:
        family = _inner(codes, codes_problem, caps)
        if family is MOE_WNA16_WGMMA:  # its kernel is rendered with the per-row scales
            inner = wgmma_candidates(codes, codes_problem, caps, row_scaled=True)
        else:
            inner = family.candidates(codes, codes_problem, caps)
    return [MoeWna16A8Config(arch=caps.arch, inner=c) for c in inner]


def _e4m3_configs(codes: QuantSpec, block_m: int, caps: DeviceCaps) -> list[MoeWna16WgmmaConfig]:
    """The e4m3 form with `block_m`-row blocks, at each ring depth that fits: with narrow blocks
    first split for E4M3_NARROW_CTAS (or forced_e4m3's) CTAs per SM, then for one."""
    forced = _FORCED.get()
    narrow_ctas = forced[1] if forced is not None else E4M3_NARROW_CTAS
    fmt = KernelFormat.from_spec(codes)
    configs = [
        MoeWna16WgmmaConfig(arch=caps.arch, stages=s, block_m=block_m, e4m3=True)
        for s in E4M3_STAGES
    ]
    if block_m <= E4M3_TWO_CTA_BLOCK_M and narrow_ctas == 2:
        configs[:0] = [
            MoeWna16WgmmaConfig(arch=caps.arch, stages=s, block_m=block_m, e4m3=True, ctas_per_sm=2)
            for s in E4M3_TWO_CTA_STAGES
        ]
    return [c for c in configs if smem_bytes(fmt, c) <= smem_limit(c, caps.smem_per_block)]
