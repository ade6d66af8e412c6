"""Deterministic W8A8 test cases and their error bound.

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
with c = 0 for int8 and 2^-10 for fp8. A wrong scale, fragment or tail is an O(|ref|) error, far
above this bound.
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
# (M, N, K): N tails against 64/128-wide tiles and blocks, K tails against 128-deep iterations.
SHAPES = (
    (1, 64, 128),
    (7, 200, 384),
    (16, 72, 144),
    (33, 520, 1040),
    (130, 256, 512),
    (300, 136, 272),
)


def make_spec(code: str, act_mode: str, weight_scale: str, bias: bool, out: str) -> QuantSpec:
    if weight_scale == "block":
        scale = ScaleSpec(granularity="block", block=(128, 128), dtype="fp32")
    else:
        scale = ScaleSpec(granularity=weight_scale, dtype="fp32")
    if act_mode == "static":
        act = ActSpec(dtype=code, quant="static", granularity="tensor")
    elif act_mode == "group":
        act = ActSpec(dtype=code, quant="dynamic", granularity="group", group_size=128)
    else:
        act = ActSpec(dtype=code, quant="dynamic", granularity="token")
    return QuantSpec(
        weight=WeightSpec(dtype=code, scale=scale),
        act=act,
        epilogue=EpilogueSpec(bias=bias, out_dtype=out),
    )


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
        return (
            f"{s.weight.dtype.name}-a{mode}-w{s.weight.scale.granularity}-x{self.x_dtype}"
            f"-o{s.output_dtype}{bias}-m{self.m}n{self.n}k{self.k}"
        )


def conformance_cases() -> list[Case]:
    """Every format on every shape; input, output dtype and bias rotate deterministically."""
    outs = ("bf16", "fp16", "fp32")
    cases = []
    for i, fmt in enumerate(FORMATS):
        for j, (m, n, k) in enumerate(SHAPES):
            seed = i * len(SHAPES) + j
            spec = make_spec(*fmt, bias=seed % 2 == 1, out=outs[seed % 3])
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
    c = FP8_BLOCK_SUM if spec.weight.dtype.name == "e4m3" else 0.0
    bound = (c + x.shape[-1] * 2.0**-23 + 8 * 2.0**-24) * (xa @ w.T)
    if cw.bias is not None:
        bound = bound + 2.0**-23 * cw.bias.double().abs()
    u_out = UNIT_ROUNDOFF[spec.output_dtype]
    return bound + 2 * u_out * ref.double().abs() + TINY[spec.output_dtype]
