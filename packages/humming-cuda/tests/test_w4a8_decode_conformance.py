"""W4A8 decode conformance on the GPU (the w4a8_decode family) against
humming_core.numerics.reference_gemm, with test_w8a8_conformance's checks (the error bound of
w8a8_cases, no write outside [M, N], no read past K) on every W4A8 format at M = 1-16, split along
K, and through the user API."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from test_w8a8_conformance import _check
from w8a8_cases import W4_FORMATS, Case, make_w4_spec

from humming_core.device import GemmProblem
from humming_cuda.kernels.w4a8_decode import FAMILY

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

# (M, N, K): one and two token blocks (M = 8 the last of one, 9 the first of two), N tails against
# the 128-row CTA tile and its 32-row warps, K tails against 128-deep stages and the groups
SHAPES = ((1, 64, 128), (7, 200, 384), (8, 72, 144), (9, 136, 1040), (16, 264, 2176))


def _cases() -> list[Case]:
    outs = ("bf16", "fp16", "fp32")
    cases = []
    for i, fmt in enumerate(W4_FORMATS):
        for j, (m, n, k) in enumerate(SHAPES):
            seed = 500 + i * len(SHAPES) + j
            spec = make_w4_spec(*fmt, bias=seed % 2 == 1, out=outs[seed % 3])
            cases.append(Case(spec, ("bf16", "fp16")[seed % 2], m, n, k, seed))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    return CudaDevice()


def _config(device, case: Case, split: int | None = None):
    problem = GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)
    support = FAMILY.supports(case.spec, problem, device.caps())
    if not support:
        return None
    config = FAMILY.candidates(case.spec, problem, device.caps())[0]
    return config if split is None else config.model_copy(update={"split_k": split})


def _load(device, case: Case, config):
    return device.load(device.compile(device.render(case.spec, config)))


@pytest.fixture(scope="module")
def kernels(device):
    """Every case's kernel (the heuristic's config), compiled in parallel up front."""

    def build(case):
        config = _config(device, case)
        return (config, _load(device, case, config)) if config is not None else (None, None)

    with ThreadPoolExecutor(max_workers=16) as pool:
        built = list(pool.map(build, CASES))
    return {case.id: b for case, b in zip(CASES, built, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[case.id]
    if config is None:
        pytest.skip(f"{device.caps().arch} has no kernel for {case.id}")
    assert config.tokens == (8 if case.m <= 8 else 16)
    _check(case, device, config, kernel)


@pytest.mark.parametrize("slabs", [1, 4])
@pytest.mark.parametrize("case", [c for c in CASES if c.k in (384, 2176)], ids=lambda c: c.id)
def test_other_slab_counts_match_reference(case: Case, slabs, device):
    """One and four 128-deep slabs per stage (the heuristic's is two) on K = 384 (three slabs: a
    partial last stage at both) and 2176 (17)."""
    config = _config(device, case)
    if config is None:
        pytest.skip(f"{device.caps().arch} has no kernel for {case.id}")
    config = config.model_copy(update={"slabs": slabs})
    _check(case, device, config, _load(device, case, config))


# K of 17 slabs (the last partial), so splits of 2, 5 and 16 leave uneven and single-stage
# remainders; one format per weight kind
SPLIT_FORMATS = (
    ("int4", "e4m3", "token", 128, "fp16"),  # W4A8_FP8
    ("e2m1", "e4m3", "token", 32, "e8m0"),  # MXFP4_A8
    ("uint4", "int8", "group", 64, "bf16"),  # zero points, activation group scales
)


def _split_cases() -> list[Case]:
    specs = [make_w4_spec(*f, bias=True, out="bf16") for f in SPLIT_FORMATS]
    return [
        Case(spec, "fp16", m, 200, 17 * 128 - 48, 700 + i)
        for i, spec in enumerate(specs)
        for m in (1, 12)
    ]


@pytest.mark.parametrize("case", _split_cases(), ids=lambda c: c.id)
def test_split_k_matches_reference_and_replays(case: Case, device):
    """Every split count against the reference, twice in a row (the tile counters must be left at
    zero for the next launch, and the fixed summation order gives the same bits)."""
    for split in (2, 5, 16):
        config = _config(device, case, split)
        if config is None:
            pytest.skip(f"{device.caps().arch} has no kernel for {case.id}")
        kernel = _load(device, case, config)
        first = _check(case, device, config, kernel)
        assert torch.equal(first, _check(case, device, config, kernel)), f"split {split} replay"


@pytest.mark.parametrize("name", ["W4A8_INT8", "W4A8_FP8", "MXFP4_A8"])
def test_user_api_routes_decode_here(name, device):
    """PreparedGemm at M = 1, 5, 8 on the H200 runs this family (this small layer leaves M = 9-16
    to w8a8), against the reference (the prepared call's quick path from the second call on)."""
    from w8a8_cases import error_bound

    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    if device.caps().arch != "sm_90a":
        pytest.skip(f"the family is preferred on sm_90a only, not {device.caps().arch}")
    spec = presets.preset(name)
    for m in (1, 5, 8):
        assert device.candidates(spec, GemmProblem(n=384, k=512, m=m))[0].family == "w4a8_decode"
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight(torch.randn(384, 512, generator=gen) * 0.05, spec)
    layer = PreparedGemm(cw, device)
    for m in (1, 5, 8, 5, 1):
        x = torch.randn(m, 512, generator=gen).to(torch.bfloat16)
        out = layer.run(x.cuda())
        ref = reference_gemm(x, cw)
        bound = error_bound(x, cw, ref, None)
        assert ((out.cpu().double() - ref.double()).abs() <= bound).all(), f"{name} M={m}"
