"""The shared conformance suite: presets × shapes × epilogues, run on a device, against the numerics.

Tolerance (derived, not fitted). The reference computes exactly in fp32 from the dequantized
weights and rounds once to the output dtype. A device may in addition (a) form each dequantized
weight, or each weight×scale product, in the 16-bit compute type: a relative error of at most
eps/2 per term, eps = 2^-10 (fp16) or 2^-7 (bf16), so at most eps/2 · Σ_k |x_k·w_k| in total;
(b) add the fp32 accumulation error of a different summation order, ≤ K·2^-24 · Σ|x·w| (far below
(a) for K < 2^14); and (c) round the output differently by one unit: ulp(out dtype) at |ref|. The
bound used is  |out − ref| ≤ ulp(|ref|) + (eps/2 + K·2^-24) · Σ_k |x_k·w_k|  elementwise.
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
_EPS = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 2.0**-23}
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


def run_case(case: Case, device: Device) -> Result:
    from ..numerics import dequantize_weight, quantize_weight, reference_gemm
    from ..ops import PreparedGemm

    spec = case.spec()
    dtype = _DTYPES[case.act_dtype]
    gen = torch.Generator().manual_seed(case.seed)
    w = torch.randn(case.n, case.k, generator=gen) * 0.05
    x = torch.randn(case.m, case.k, generator=gen).to(dtype)
    bias = (torch.randn(case.n, generator=gen) * 0.1).to(dtype) if case.bias else None
    cw = quantize_weight(w, spec)
    ref = reference_gemm(x, cw, bias=bias).float()
    layer = PreparedGemm(cw, device)
    target = getattr(device, "torch_device", None) or torch.device("cpu")
    poisoned = torch.full((case.m, layer.n_out), float("nan"), dtype=layer.out_dtype, device=target)
    out = (
        layer.run(x.to(target), None if bias is None else bias.to(target), out=poisoned)
        .float()
        .cpu()
    )
    wd = dequantize_weight(cw)
    mass = x.float().abs() @ wd.abs().T
    out_dtype = _DTYPES.get(spec.output_dtype, torch.float32)
    ulp = torch.finfo(out_dtype).eps * ref.abs().clamp_min(torch.finfo(out_dtype).tiny)
    bound = ulp + (_EPS[dtype] / 2 + case.k * 2.0**-24) * mass
    err = (out - ref).abs()
    unwritten = torch.isnan(out) & ~torch.isnan(ref)
    worst = float((err / bound)[~unwritten].max()) if (~unwritten).any() else 0.0
    return Result(case, worst, int(unwritten.sum()))
