"""The shared conformance suite: presets × shapes × epilogues, run on a device, against the numerics.

Error bound per output element (the derivation every device's tests use):
- Activations are rounded to the act dtype before the GEMM, by the caller and the reference alike,
  so x contributes no error.
- A device may form each weight in the 16-bit act dtype as round(value * s) (or fma(q, s, -z)):
  value (or q - z) is exact, the scale may be rounded once when converted to the act dtype, a float
  zero point once too. With u = 2^-p (p = 11 fp16, 8 bf16): |w16 - w| <= 2u|w| + u|z|, plus 2^-24
  absolute for results in the fp16 subnormal range.
- Products accumulate in fp32 (tensor cores, split-K partials): error <= K·2^-23·Σ_k|x_k w_k|
  (twice the classical gamma_K, for the MMA's internal alignment).
- Epilogue scales and bias in fp32 are exact to 2^-24 relative; device and reference each round
  once to the output dtype: 2·u_out·|ref| plus the output's smallest subnormal.
So |out − ref| <= (2u + K·2^-23)(|x|@|W|ᵀ) + u(|x|@|Z|ᵀ) + 2^-24·Σ|x| + 2·u_out·|ref| + tiny.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from ..device import Device
from ..spec import QuantSpec, preset

WNA16_PRESETS = (
    "W4A16_G128",
    "W8A16",
    "W3A16_G128",
    "W2A16_G64",
    "GPTQ_INT4",
    "GGUF_Q4_K",
    "MXFP4",
    "MXINT4",
    "NVFP4",
    "FP8_CHANNEL",
    "E4M3_G128",
)
SHAPES = (
    (1, 256, 512),
    (7, 320, 384),
    (33, 128, 1024),
    (128, 192, 256),
)  # (M, N, K); K divisible by 128
UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8, "fp32": 2.0**-24}
_TINY = {"fp16": 2.0**-24, "bf16": 2.0**-133, "fp32": 2.0**-149}
_ACT_NAMES = {torch.float16: "fp16", torch.bfloat16: "bf16"}
_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Case:
    preset: str
    m: int
    n: int
    k: int
    act_dtype: str
    bias: bool
    seed: int

    @property
    def id(self) -> str:
        return f"{self.preset}-{self.act_dtype}-m{self.m}n{self.n}k{self.k}{'-bias' if self.bias else ''}"

    def spec(self) -> QuantSpec:
        base = preset(self.preset)
        return base.replace(act={"dtype": self.act_dtype}, epilogue={"bias": self.bias})


@dataclass(frozen=True)
class Result:
    case: Case
    worst: float  # max over elements of |out - ref| / bound; the case passes when <= 1
    unwritten: int  # output elements still holding the poison value

    @property
    def ok(self) -> bool:
        return self.worst <= 1.0 and self.unwritten == 0


def cases(presets=WNA16_PRESETS, shapes=SHAPES) -> list[Case]:
    """Every preset × shape × act dtype, bias on every other shape (deterministic)."""
    out = []
    for i, (name, (m, n, k), dt) in enumerate(itertools.product(presets, shapes, ("fp16", "bf16"))):
        out.append(Case(name, m, n, k, dt, bias=i % 2 == 1, seed=i))
    return out


def zero_offsets(cw) -> torch.Tensor | None:
    """|z| per weight element for float zero points (w = s·q − z), else None."""
    if cw.spec.weight.zero_point != "float":
        return None
    z = cw.zeros.float().abs()
    per = -(-cw.k // z.shape[-1])
    return z.repeat_interleave(per, dim=-1)[..., : cw.k]


def error_bound(x: torch.Tensor, cw, ref: torch.Tensor) -> torch.Tensor:
    """The elementwise float64 bound of the module docstring for out = x @ dequant(cw)^T."""
    from ..numerics import dequantize_weight

    u, u_out = UNIT_ROUNDOFF[_ACT_NAMES[x.dtype]], UNIT_ROUNDOFF[cw.spec.output_dtype]
    xa = x.double().abs()
    bound = (2 * u + x.shape[-1] * 2.0**-23) * (xa @ dequantize_weight(cw).double().abs().T)
    z = zero_offsets(cw)
    if z is not None:
        bound += u * (xa @ z.double().T)
    bound += 2.0**-24 * xa.sum(dim=-1, keepdim=True)
    return bound + 2 * u_out * ref.double().abs() + _TINY[cw.spec.output_dtype]


def within_bound(out: torch.Tensor, x: torch.Tensor, cw) -> float:
    """max |out - reference| / bound over all elements (<= 1 passes)."""
    from ..numerics import reference_gemm

    x, cw = x.detach().cpu(), cw.to("cpu")
    ref = reference_gemm(x, cw).double()
    return float(((out.detach().double().cpu() - ref).abs() / error_bound(x, cw, ref)).max())


def run_case(case: Case, device: Device) -> Result:
    from ..numerics import quantize_weight, reference_gemm
    from ..ops import PreparedGemm

    spec = case.spec()
    dtype = _DTYPES[case.act_dtype]
    gen = torch.Generator().manual_seed(case.seed)
    w = torch.randn(case.n, case.k, generator=gen) * 0.05
    x = torch.randn(case.m, case.k, generator=gen).to(dtype)
    bias = (torch.randn(case.n, generator=gen) * 0.1).to(dtype) if case.bias else None
    cw = quantize_weight(w, spec, bias=bias)
    ref = reference_gemm(x, cw).double()
    layer = PreparedGemm(cw, device)
    target = getattr(device, "torch_device", None) or torch.device("cpu")
    poisoned = torch.full((case.m, layer.n_out), float("nan"), dtype=layer.out_dtype, device=target)
    out = layer.run(x.to(target), out=poisoned).double().cpu()
    bound = error_bound(x, cw, ref)
    err = (out - ref).abs()
    unwritten = torch.isnan(out) & ~torch.isnan(ref)
    worst = float((err / bound)[~unwritten].max()) if (~unwritten).any() else 0.0
    return Result(case, worst, int(unwritten.sum()))
