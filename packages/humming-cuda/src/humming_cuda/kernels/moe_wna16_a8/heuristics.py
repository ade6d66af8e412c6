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

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec
from humming_core.spec.quant import ActSpec

from ..act_quant import ActQuantFormat, unsupported_reason
from ..moe_wna16 import FAMILY as MOE_WNA16
from ..moe_wna16_wgmma import FAMILY as MOE_WNA16_WGMMA
from .config import MoeWna16A8Config


def codes_spec(spec: QuantSpec) -> QuantSpec:
    """`spec` with bf16 activations: what the WnA16 MoE kernels compute on the widened codes."""
    return spec.model_copy(update={"act": ActSpec(dtype="bf16")})


def quant_format(spec: QuantSpec) -> ActQuantFormat:
    """The module's quantizer: per-token codes written as their bf16 values (one pass)."""
    return ActQuantFormat.from_spec(spec.act, wide=True)


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
        codes, problem, caps
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


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[MoeWna16A8Config]:
    """The inner family's configs for the codes spec, best first."""
    if not supports(spec, problem, caps):
        return []
    codes, codes_problem = codes_spec(spec), _codes_problem(problem)
    family = _inner(codes, codes_problem, caps)
    return [
        MoeWna16A8Config(arch=caps.arch, inner=c)
        for c in family.candidates(codes, codes_problem, caps)
    ]
