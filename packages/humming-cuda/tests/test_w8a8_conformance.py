"""W8A8 / W4A8 conformance on the GPU against humming_core.numerics.reference_gemm.

Every case checks (1) |out - ref| within the bound derived in w8a8_cases.py, (2) no write outside
the [M, N] output view (poisoned rows and columns around it keep their bits), (3) no read past K of
an activation row (NaN columns after K would reach the output through the quantizer's amax).
Plus the user API (PreparedGemm, both input dtypes) on the W8A8 and W4A8 presets.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from w8a8_cases import Case, conformance_cases, error_bound, static_scale

from humming_cuda.kernels.w8a8.config import W8a8Format

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = conformance_cases()
POISON = -7777.0
_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    return CudaDevice()


def _build(device, case: Case):
    """The w8a8 family's own kernel: on sm_90a the device routes fp8 at M >= 128 to w8a8_wgmma
    (test_w8a8_wgmma_conformance.py), but these cases verify the mma.sync kernels at every M."""
    from humming_core.device import GemmProblem
    from humming_cuda.kernels.w8a8 import FAMILY

    problem = GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)
    support = FAMILY.supports(case.spec, problem, device.caps())
    if not support:
        return None, support.reason
    config = FAMILY.candidates(case.spec, problem, device.caps())[0]
    return config, device.load(device.compile(device.render(case.spec, config)))


@pytest.fixture(scope="module")
def kernels(device):
    """Every case's kernel, compiled in parallel up front (NVRTC releases the GIL)."""
    with ThreadPoolExecutor(max_workers=16) as pool:
        built = list(pool.map(lambda c: _build(device, c), CASES))
    return {case.id: b for case, b in zip(CASES, built, strict=True)}


def _inputs(case: Case):
    from humming_core.numerics import quantize_weight

    gen = torch.Generator().manual_seed(case.seed)
    x = torch.randn(case.m, case.k, generator=gen).to(_TORCH[case.x_dtype])
    x[0, : min(case.k, 16)] *= 40.0  # an outlier row segment: token and group scales differ
    bias = torch.randn(case.n, generator=gen) * 0.1 if case.spec.epilogue.bias else None
    cw = quantize_weight(torch.randn(case.n, case.k, generator=gen) * 0.05, case.spec, bias=bias)
    scale = static_scale(x, case.spec.act.dtype.name) if case.spec.act.quant == "static" else None
    return x, cw, scale


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[case.id]
    if config is None:
        pytest.skip(f"{device.caps().arch}: {kernel}")
    _check(case, device, config, kernel)


def _check(case: Case, device, config, kernel) -> torch.Tensor:
    """Run `kernel` on the case's inputs and check the three properties; returns the output."""
    from humming_core.numerics import reference_gemm

    x, cw, scale = _inputs(case)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")

    x_big = torch.full((case.m + 1, case.k + 16), float("nan"), dtype=x.dtype, device="cuda")
    x_dev = x_big[: case.m, : case.k]
    x_dev.copy_(x.cuda())
    out_dtype = _TORCH[case.spec.output_dtype]
    out_big = torch.full((case.m + 2, case.n + 6), POISON, dtype=out_dtype, device="cuda")
    before = out_big.clone()
    out = out_big[1 : case.m + 1, 2 : case.n + 2]
    extra = {} if scale is None else {"act_scale": scale.cuda()}
    kernel(x=x_dev, out=out, **extra, **weights)
    torch.cuda.synchronize()

    inside = torch.zeros_like(out_big, dtype=torch.bool)
    inside[1 : case.m + 1, 2 : case.n + 2] = True
    assert torch.equal(out_big[~inside].view(torch.uint8), before[~inside].view(torch.uint8)), (
        "wrote outside [M, N]"
    )
    assert not torch.isnan(out).any(), "NaN in the output (read past K)"
    ref = reference_gemm(x, cw, act_scale_static=scale)
    bound = error_bound(x, cw, ref, scale)
    err = (out.cpu().double() - ref.double()).abs()
    worst = (err / bound).max().item()
    assert worst <= 1.0, f"max err/bound {worst:.3f} (max err {err.max().item():.3g}, {config})"
    return out.clone()


# Split-K (config.split_k): K of 17 iterations, so splits of 2, 5 and 16 leave uneven and
# single-iteration remainders; int8 without groups sums its s32 partials as ints (bit-equal to the
# unsplit kernel); fp8 channel, 128x128 block and group-scaled 4-bit weights sum fp32 totals.
SPLIT_FORMATS = {
    "int8-channel": ("int8", "token", "channel"),
    "fp8-channel": ("e4m3", "token", "channel"),
    "fp8-block": ("e4m3", "group", "block"),
}
SPLIT_W4 = {
    "uint4-int8-g128": ("uint4", "int8", "token", 128, "fp16"),
    "e2m1-fp8-g32": ("e2m1", "e4m3", "token", 32, "e8m0"),
}


def _split_cases() -> list[Case]:
    from w8a8_cases import make_spec, make_w4_spec

    specs = [make_spec(*f, bias=True, out="bf16") for f in SPLIT_FORMATS.values()]
    specs += [make_w4_spec(*f, bias=False, out="fp16") for f in SPLIT_W4.values()]
    return [
        Case(spec, "bf16", m, 200, 17 * 128 - 48, 900 + i)
        for i, spec in enumerate(specs)
        for m in (1, 16, 40)
    ]


@pytest.mark.parametrize("case", _split_cases(), ids=lambda c: c.id)
def test_split_k_matches_reference_and_replays(case: Case, device):
    """Every split count against the reference, twice in a row (the tile counters must be left at
    zero for the next launch); int8 s32 partials bit-equal to the unsplit kernel."""
    from humming_core.device import GemmProblem
    from humming_cuda.kernels.w8a8 import FAMILY

    problem = GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)
    base = FAMILY.candidates(case.spec, problem, device.caps())[-1].model_copy(
        update={"split_k": 1}
    )
    unsplit = _check(
        case, device, base, device.load(device.compile(device.render(case.spec, base)))
    )
    for split in (2, 5, 16):
        config = base.model_copy(update={"split_k": split})
        kernel = device.load(device.compile(device.render(case.spec, config)))
        first = _check(case, device, config, kernel)
        assert torch.equal(first, _check(case, device, config, kernel)), f"split {split} replay"
        if not W8a8Format.from_spec(case.spec).promotes:
            assert torch.equal(first, unsplit), f"split {split}: s32 partials must sum exactly"


@pytest.mark.parametrize(
    "name", ["W8A8_INT8", "W8A8_FP8", "FP8_BLOCK128", "W4A8_INT8", "W4A8_FP8", "MXFP4_A8"]
)
@pytest.mark.parametrize("x_dtype", [torch.float16, torch.bfloat16])
def test_user_api(name, x_dtype, device):
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    spec = presets.preset(name)
    gen = torch.Generator().manual_seed(1)
    cw = quantize_weight(torch.randn(384, 512, generator=gen) * 0.05, spec)
    layer = PreparedGemm(cw, device)
    for m in (1, 5, 100, 1030):
        x = torch.randn(m, 512, generator=gen).to(x_dtype)
        out = layer.run(x.cuda())
        ref = reference_gemm(x, cw)
        bound = error_bound(x, cw, ref, None)
        assert ((out.cpu().double() - ref.double()).abs() <= bound).all(), f"{name} M={m}"


@pytest.mark.parametrize("m, family", [(1, "w4a8_decode"), (16, "w8a8"), (32, "w4a8_wgmma")])
def test_quantizer_pdl_chain_reads_each_input_after_its_producer(m, family, device):
    """W4A8-fp8 layers, each reading the one before: the quantizer launches with PDL on sm_90+
    (the decode GEMMs after it too), so a quantizer that read x before griddepcontrol.wait would
    see the NaNs of an unwritten output."""
    from pdl_chain import check_quantized_chain

    from humming_core.spec import presets

    if device.caps().arch != "sm_90a":
        pytest.skip(f"the W4A8 family routing is the H200's (sm_90a), not {device.caps().arch}")
    assert check_quantized_chain(presets.W4A8_FP8, m) == family
