"""Deterministic W8A8 / W4A8 test cases and their error bound.

Error bound per output element, out = epilogue(sum_k xa_k * w_k), with xa = a_code * a_scale the
dequantized activations (bit-identical in kernel and reference: the GPU quantizer reproduces
numerics.act.quantize_act exactly) and w = w_code * w_scale:
- Products of 8-bit codes are exact: int8 x int8 fits 15 bits, e4m3 x e4m3 has at most 8
  significant bits. int8 sums accumulate exactly in s32 (K < 132k); the one rounding is the s32 ->
  fp32 conversion, 2^-24 relative.
- fp8 sums: mma.sync adds 32 exact products per step into fp32 accumulators; tensor cores may keep
  fewer bits while adding (DeepSeek-V3 reports ~14 on Hopper wgmma), so each 128-deep block
  (4 steps) is allowed 4 * 2^-12 = 2^-10 of its sum of |products| before it is promoted into fp32.
- Scales are applied in fp32: per block (group / block scales, two multiplies) and in the epilogue
  (two multiplies): at most 4 roundings, 4 * 2^-24 relative; the bias add one more (2^-24 |bias|
  relative to the sum, counted as 2^-23 |bias|).
- The reference rounds xa and w once each and each product once (3 * 2^-24) and sums K terms in
  fp32 in any order (K * 2^-23 with the MMA alignment allowance of the shared conformance bound).
- Both round once to the output dtype: 2 u_out |ref| plus the output's smallest subnormal.
So |out - ref| <= (c + K 2^-23 + 8 * 2^-24) (|xa| @ |w|^T) + 2^-23 |bias| + 2 u_out |ref| + tiny,
with c = 0 for int8 and 2^-10 for fp8 activations. A wrong scale, fragment or tail is an O(|ref|)
error, far above this bound.

W4A8 (4-bit weights, group scales along K, promoted every P = min(group, 128) of K):
- The 4-bit codes become 8-bit operand codes exactly (int4 / uint4 - z in int8, int4 and e2m1 values
  in e4m3), so the products stay exact: |int8 x (u - z)| <= 127 * 15, e4m3 x e4m3 as above.
- int8: a P-deep partial sum is at most 128 * 128 * 15 < 2^24 in magnitude, so its s32 -> fp32
  conversion is exact too. fp8: P <= 128, so the 2^-10 allowance per promoted block still holds.
- Each promotion multiplies the partial sum by (row scale * column group scale): two roundings,
  and the ceil(K/P) promoted terms are summed in fp32: (ceil(K/P) - 1) more. All are relative to
  |xa| @ |w|^T (every term is a sum of |xa_k w_k| products), so the bound gains
  (ceil(K/P) + 2) * 2^-24 of it.
- The reference's weights w = s * (q - z) are exact in fp32 for 16-bit / e8m0 scales and rounded
  once for fp32 scales, already counted among the reference's 3 roundings.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from humming_core.spec import ActSpec, EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec

UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8, "fp32": 2.0**-24}
TINY = {"fp16": 2.0**-24, "bf16": 2.0**-133, "fp32": 2.0**-149}
FP8_BLOCK_SUM = 2.0**-10

# (code, act mode, weight scale)
FORMATS = (
    ("int8", "token", "channel"),  # W8A8_INT8
    ("int8", "static", "tensor"),
    ("int8", "group", "block"),
    ("e4m3", "token", "channel"),  # W8A8_FP8
    ("e4m3", "group", "block"),  # FP8_BLOCK128
    ("e4m3", "static", "channel"),
    ("e4m3", "group", "channel"),
    ("e4m3", "token", "block"),
)
# 4-bit weights: (weight dtype, activation code, act mode, weight group, scale dtype); uint4 with
# integer zero points.
W4_FORMATS = (
    ("int4", "int8", "token", 128, "fp16"),  # W4A8_INT8
    ("uint4", "int8", "token", 128, "fp16"),
    ("int4", "int8", "group", 64, "bf16"),
    ("uint4", "int8", "static", 32, "fp32"),
    ("int4", "e4m3", "token", 128, "fp16"),  # W4A8_FP8
    ("e2m1", "e4m3", "token", 32, "e8m0"),  # MXFP4_A8
    ("int4", "e4m3", "static", 256, "fp32"),
    ("e2m1", "e4m3", "group", 64, "bf16"),
)
# (M, N, K): N tails against 64/128-wide tiles and blocks, K tails against 128-deep iterations.
SHAPES = (
    (1, 64, 128),
    (7, 200, 384),
    (16, 72, 144),
    (33, 520, 1040),
    (130, 256, 512),
    (300, 136, 272),
)


def _act(code: str, act_mode: str) -> ActSpec:
    if act_mode == "static":
        act = ActSpec(dtype=code, quant="static", granularity="tensor")
    elif act_mode == "group":
        act = ActSpec(dtype=code, quant="dynamic", granularity="group", group_size=128)
    else:
        act = ActSpec(dtype=code, quant="dynamic", granularity="token")
    return act


def make_spec(code: str, act_mode: str, weight_scale: str, bias: bool, out: str) -> QuantSpec:
    """An 8-bit (W8A8) spec of FORMATS."""
    if weight_scale == "block":
        scale = ScaleSpec(granularity="block", block=(128, 128), dtype="fp32")
    else:
        scale = ScaleSpec(granularity=weight_scale, dtype="fp32")
    return QuantSpec(
        weight=WeightSpec(dtype=code, scale=scale),
        act=_act(code, act_mode),
        epilogue=EpilogueSpec(bias=bias, out_dtype=out),
    )


def make_w4_spec(
    weight: str, code: str, act_mode: str, group: int, scale_dtype: str, bias: bool, out: str
) -> QuantSpec:
    """A 4-bit (W4A8) spec of W4_FORMATS."""
    scale = ScaleSpec(granularity="group", group_size=group, dtype=scale_dtype)
    zero = "int" if weight == "uint4" else "none"
    return QuantSpec(
        weight=WeightSpec(dtype=weight, scale=scale, zero_point=zero),
        act=_act(code, act_mode),
        epilogue=EpilogueSpec(bias=bias, out_dtype=out),
    )


def all_specs(bias: bool, out: str) -> list[QuantSpec]:
    """Every format of FORMATS and W4_FORMATS."""
    return [make_spec(*f, bias=bias, out=out) for f in FORMATS] + [
        make_w4_spec(*f, bias=bias, out=out) for f in W4_FORMATS
    ]


@dataclass(frozen=True)
class Case:
    spec: QuantSpec
    x_dtype: str
    m: int
    n: int
    k: int
    seed: int

    @property
    def id(self) -> str:
        s = self.spec
        mode = "static" if s.act.quant == "static" else s.act.granularity
        bias = "-bias" if s.epilogue.bias else ""
        ws = s.weight.scale
        scale = f"g{ws.group_size}{ws.dtype.name}" if ws.granularity == "group" else ws.granularity
        return (
            f"{s.weight.dtype.name}x{s.act.dtype.name}-a{mode}-w{scale}-x{self.x_dtype}"
            f"-o{s.output_dtype}{bias}-m{self.m}n{self.n}k{self.k}"
        )


def conformance_cases() -> list[Case]:
    """Every format (8- and 4-bit) on every shape; input, output dtype and bias rotate
    deterministically."""
    outs = ("bf16", "fp16", "fp32")
    makers = [(make_spec, f) for f in FORMATS] + [(make_w4_spec, f) for f in W4_FORMATS]
    cases = []
    for i, (make, fmt) in enumerate(makers):
        for j, (m, n, k) in enumerate(SHAPES):
            seed = i * len(SHAPES) + j
            spec = make(*fmt, bias=seed % 2 == 1, out=outs[seed % 3])
            cases.append(Case(spec, ("bf16", "fp16")[seed % 2], m, n, k, seed))
    return cases


def static_scale(x: torch.Tensor, code: str) -> torch.Tensor:
    """A calibrated-looking per-tensor scale: amax / code max, a little below so some values clip."""
    top = 127.0 if code == "int8" else 448.0
    return (x.float().abs().amax() / top * 0.9).reshape(1).to(torch.float32)


def error_bound(
    x: torch.Tensor, cw, ref: torch.Tensor, act_scale: torch.Tensor | None
) -> torch.Tensor:
    """The elementwise float64 bound of the module docstring."""
    from humming_core.numerics import dequantize_weight
    from humming_core.numerics.gemm import prepare_act

    spec = cw.spec
    xa = prepare_act(x, spec.act, act_scale).double().abs()
    w = dequantize_weight(cw).double().abs()
    k = x.shape[-1]
    rel = (FP8_BLOCK_SUM if spec.act.dtype.name == "e4m3" else 0.0) + k * 2.0**-23 + 8 * 2.0**-24
    ws = spec.weight.scale
    if ws.granularity == "group":
        promote_k = min(ws.group_size, 128)
        rel += (-(-k // promote_k) + 2) * 2.0**-24
    bound = rel * (xa @ w.T)
    if cw.bias is not None:
        bound = bound + 2.0**-23 * cw.bias.double().abs()
    u_out = UNIT_ROUNDOFF[spec.output_dtype]
    return bound + 2 * u_out * ref.double().abs() + TINY[spec.output_dtype]
