"""W8A8-int8 and W4A8-int8 through the PPU data paths, emulated on an NVIDIA GPU (cuda marker).

PpuEmulationDevice renders humming-cuda's w8a8 family with dialect="ppu_emulation": weights (and
W4A8 integer zero points) in the PPU row order, N=16 int8 MMAs as two sm80 m16n8k32 in the PPU
accumulator order, columns written through the PPU B-row map. Every case is checked against
humming_core.numerics.reference_gemm within the shared conformance bound
(humming_core.testing.conformance.error_bound) and within the tighter W8A8 bound derived in
humming-cuda's w8a8_cases.py (int8 products and s32 sums are exact, so only fp32 scaling and the
output rounding remain); no write outside [M, N]; no read past K. The weight rows are scaled by
1..8 within every group of 8, so a weight, scale or zero point read from the wrong row of a group
is an error of the order of |ref| itself.
"""

from __future__ import annotations

import pytest
import torch
from w8a8_cases import SHAPES, make_spec, make_w4_spec, static_scale
from w8a8_cases import error_bound as w8a8_bound

from humming_core.device import GemmProblem
from humming_core.jit import build_many
from humming_core.testing.conformance import error_bound as shared_bound

_ON_NVIDIA = torch.cuda.is_available() and "NVIDIA" in torch.cuda.get_device_name(0).upper()
pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not _ON_NVIDIA, reason="needs an NVIDIA GPU (torch.cuda) to run the PPU emulation"
    ),
]

# The W8A8-int8 (dynamic per-token activations, channel and tensor weight scales), its
# static and group/block variants, and W4A8-int8 (int4; uint4 with integer zero points).
SPECS = (
    ("w8-token-channel", lambda bias, out: make_spec("int8", "token", "channel", bias, out)),
    ("w8-token-tensor", lambda bias, out: make_spec("int8", "token", "tensor", bias, out)),
    ("w8-static-tensor", lambda bias, out: make_spec("int8", "static", "tensor", bias, out)),
    ("w8-group-block", lambda bias, out: make_spec("int8", "group", "block", bias, out)),
    ("w4-token-g128", lambda b, o: make_w4_spec("int4", "int8", "token", 128, "fp16", b, o)),
    ("u4-token-g128", lambda b, o: make_w4_spec("uint4", "int8", "token", 128, "fp16", b, o)),
    ("w4-group-g64", lambda b, o: make_w4_spec("int4", "int8", "group", 64, "bf16", b, o)),
    ("u4-static-g32", lambda b, o: make_w4_spec("uint4", "int8", "static", 32, "fp32", b, o)),
)
_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
POISON = -7777.0


def _cases() -> list[tuple[str, object, str, tuple[int, int, int], int]]:
    """(id, spec, x dtype, (M, N, K), seed): every spec on every shape of w8a8_cases (N and K
    tails against the tiles, M from 1 to 300), output dtype, bias and x dtype rotating."""
    out = []
    for i, (name, make) in enumerate(SPECS):
        for j, (m, n, k) in enumerate(SHAPES):
            seed = i * len(SHAPES) + j
            o = ("bf16", "fp16", "fp32")[seed % 3]
            x = ("fp16", "bf16")[seed % 2]
            spec = make(seed % 2 == 1, o)
            out.append((f"{name}-x{x}-o{o}-m{m}n{n}k{k}", spec, x, (m, n, k), seed))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def emulation():
    from humming_ppu.emulation import PpuEmulationDevice

    return PpuEmulationDevice()


def _config(device, spec, m, n, k):
    problem = GemmProblem(n=n, k=k, m=m, act_dtype=spec.act.dtype.name)
    support = device.check(spec, problem)
    assert support, support.reason  # the PPU accepts every int8 case here
    return device.candidates(spec, problem)[0]


@pytest.fixture(scope="module")
def kernels(emulation):
    """Every case's (config, kernel), compiled in one parallel batch through the cache."""
    configs = [_config(emulation, spec, *shape) for _, spec, _, shape, _ in CASES]
    sources = [emulation.render(c[1], cfg) for c, cfg in zip(CASES, configs, strict=True)]
    artifacts = build_many(emulation, sources, progress=False)
    return {
        case[0]: (cfg, emulation.load(a))
        for case, cfg, a in zip(CASES, configs, artifacts, strict=True)
    }


def _inputs(spec, x_dtype, m, n, k, seed):
    from humming_core.numerics import quantize_weight

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=gen).to(_TORCH[x_dtype])
    x[0, : min(k, 16)] *= 40.0  # an outlier segment: token and group scales differ per row
    rows = 1.0 + torch.arange(n) % 8  # rows of a group of 8 differ by up to 8x in magnitude
    w = torch.randn(n, k, generator=gen) * 0.05 * rows[:, None]
    bias = torch.randn(n, generator=gen) * 0.1 if spec.epilogue.bias else None
    cw = quantize_weight(w, spec, bias=bias)
    scale = static_scale(x, "int8") if spec.act.quant == "static" else None
    return x, cw, scale


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_w8a8_int8_emulation_matches_reference(case, emulation, kernels):
    from humming_core.numerics import reference_gemm

    cid, spec, x_dtype, (m, n, k), seed = case
    config, kernel = kernels[cid]
    x, cw, scale = _inputs(spec, x_dtype, m, n, k, seed)
    weights = emulation.weight_layout(spec, config).pack(cw, "cuda")
    x_big = torch.full((m + 1, k + 16), float("nan"), dtype=x.dtype, device="cuda")
    x_dev = x_big[:m, :k]
    x_dev.copy_(x.cuda())
    out_big = torch.full((m + 2, n + 6), POISON, dtype=_TORCH[spec.output_dtype], device="cuda")
    before = out_big.clone()
    out = out_big[1 : m + 1, 2 : n + 2]
    extra = {} if scale is None else {"act_scale": scale.cuda()}
    kernel(x=x_dev, out=out, **extra, **weights)
    torch.cuda.synchronize()

    inside = torch.zeros_like(out_big, dtype=torch.bool)
    inside[1 : m + 1, 2 : n + 2] = True
    assert torch.equal(out_big[~inside].view(torch.uint8), before[~inside].view(torch.uint8)), (
        "wrote outside [M, N]"
    )
    assert not torch.isnan(out).any(), "NaN in the output (read past K)"
    ref = reference_gemm(x, cw, act_scale_static=scale)
    err = (out.cpu().double() - ref.double()).abs()
    for name, bound in (
        ("shared", shared_bound(x, cw, ref)),
        ("w8a8", w8a8_bound(x, cw, ref, scale)),
    ):
        worst = (err / bound).max().item()
        assert worst <= 1.0, f"{name} bound: max err/bound {worst:.3f} ({config})"


@pytest.mark.parametrize("name", ["W8A8_INT8", "W4A8_INT8"])
def test_user_api_on_the_emulation(name, emulation):
    """ops.PreparedGemm end to end: PPU layout packed once, a kernel per M bucket."""
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    spec = presets.preset(name)
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight(torch.randn(384, 512, generator=gen) * 0.05, spec)
    layer = PreparedGemm(cw, emulation)
    for m in (1, 5, 100):
        x = torch.randn(m, 512, generator=gen).to(torch.bfloat16)
        out = layer.run(x.cuda()).cpu().double()
        ref = reference_gemm(x, cw)
        assert ((out - ref.double()).abs() <= w8a8_bound(x, cw, ref, None)).all(), f"{name} M={m}"
