"""W8A8-wgmma conformance on an sm_90a GPU against humming_core.numerics.reference_gemm.

These tests are the family's hardware verification (first passed on an H200 on 2026-11-29). Each
case checks (1) |out - ref| within w8a8_cases.error_bound, (2) no
write outside the [M, N] output view, (3) no NaN (x columns after K are NaN: a read past K would
reach the output). Both ring depths the heuristics offer run; the device routes large-M fp8 to
this family; a call replays correctly from a CUDA graph (tensor maps are kernel
parameters captured by value).
"""

from __future__ import annotations

import pytest
import torch
from w8a8_cases import Case, error_bound, static_scale
from w8a8_wgmma_cases import SHAPES, wgmma_cases
from wgmma_conformance import (
    TORCH_DTYPES,
    build_kernels,
    guarded_call,
    problem_of,
    replay_in_graph,
    sm90_device,
)

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = wgmma_cases()
# the largest-K shape of each format (16 K blocks: both rings wrap) also runs the 6-stage config
DEEP = CASES[len(SHAPES) - 1 :: len(SHAPES)]


@pytest.fixture(scope="module")
def device():
    return sm90_device("w8a8_wgmma")


@pytest.fixture(scope="module")
def kernels(device):
    """Every case's kernel with the first candidate, and DEEP's with the second (the 6-stage ring),
    compiled in parallel up front."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    jobs = [(c, 0) for c in CASES] + [(c, 1) for c in DEEP]
    built = build_kernels(device, FAMILY, jobs)
    return {(c.id, i): b for (c, i), b in zip(jobs, built, strict=True)}


def _inputs(case: Case):
    from humming_core.numerics import quantize_weight

    gen = torch.Generator().manual_seed(case.seed)
    x = torch.randn(case.m, case.k, generator=gen).to(TORCH_DTYPES[case.x_dtype])
    x[0, : min(case.k, 16)] *= 40.0  # an outlier row segment: token and group scales differ
    bias = torch.randn(case.n, generator=gen) * 0.1 if case.spec.epilogue.bias else None
    cw = quantize_weight(torch.randn(case.n, case.k, generator=gen) * 0.05, case.spec, bias=bias)
    scale = static_scale(x, case.spec.act.dtype.name) if case.spec.act.quant == "static" else None
    return x, cw, scale


def _check(case: Case, device, config, kernel) -> None:
    from humming_core.numerics import reference_gemm

    x, cw, scale = _inputs(case)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")
    extra = {} if scale is None else {"act_scale": scale.cuda()}
    out = guarded_call(kernel, x.cuda(), case.n, case.spec.output_dtype, 16, **extra, **weights)
    ref = reference_gemm(x, cw, act_scale_static=scale)
    err = (out.cpu().double() - ref.double()).abs()
    worst = (err / error_bound(x, cw, ref, scale)).max().item()
    assert worst <= 1.0, f"max err/bound {worst:.3f} (max err {err.max().item():.3g}, {config})"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    _check(case, device, *kernels[(case.id, 0)])


@pytest.mark.parametrize("case", DEEP, ids=lambda c: c.id)
def test_deeper_ring_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, 1)]
    assert config.stages == 6
    _check(case, device, config, kernel)


@pytest.mark.parametrize("name", ["W8A8_FP8", "FP8_BLOCK128"])
def test_device_routes_large_m_here_and_replays_in_a_graph(name, device):
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.spec import presets

    spec = presets.preset(name)
    gen = torch.Generator().manual_seed(7)
    cw = quantize_weight(torch.randn(384, 512, generator=gen) * 0.05, spec)
    x = torch.randn(1030, 512, generator=gen).to(torch.bfloat16)
    problem = problem_of(Case(spec, "bf16", 1030, 384, 512, 0))
    config = device.candidates(spec, problem)[0]
    assert config.family == "w8a8_wgmma"
    kernel = device.load(device.compile(device.render(spec, config)))
    weights = device.weight_layout(spec, config).pack(cw, "cuda")
    x_dev = x.cuda()
    out = torch.empty(1030, 384, dtype=torch.bfloat16, device="cuda")
    replay_in_graph(kernel, x_dev, out, weights)
    ref = reference_gemm(x, cw)
    assert ((out.cpu().double() - ref.double()).abs() <= error_bound(x, cw, ref, None)).all()


def test_user_api_switches_families_per_m_on_one_packed_copy(device):
    """PreparedGemm: decode M runs the mma.sync w8a8 kernels, M > 16 these (M=40 in a 128-row tile
    that TMA fills with zero rows past M), same packed weights."""
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    spec = presets.FP8_BLOCK128
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight(torch.randn(256, 640, generator=gen) * 0.05, spec)
    layer = PreparedGemm(cw, device)
    families = {b: c.family for b, c in layer.configs.items()}
    assert families[16] == "w8a8" and families[32] == families[64] == "w8a8_wgmma", families
    for m in (5, 40, 200, 1030):
        x = torch.randn(m, 640, generator=gen).to(torch.float16)
        out = layer.run(x.cuda())
        ref = reference_gemm(x, cw)
        bound = error_bound(x, cw, ref, None)
        assert ((out.cpu().double() - ref.double()).abs() <= bound).all(), f"M={m}"
