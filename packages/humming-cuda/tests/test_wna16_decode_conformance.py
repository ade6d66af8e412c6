"""wna16_decode conformance on the GPU: the shared WnA16 format matrix at M <= 16 against
humming_core.numerics.reference_gemm, with test_wna16_conformance's checks (error bound, no write
outside [M, N], no read past K).

These tests are the family's hardware verification (first passed on the H200 on 2026-11-29). A
split-K case routed by the device replays from a CUDA graph (the tile counters must come back to
0), and the kernel refuses more rows of x than its token blocks hold (8, or 16 with two).
"""

from __future__ import annotations

import pytest
import torch
from pdl_chain import check_pdl_chain
from test_wna16_conformance import check_wna16_case
from wgmma_conformance import build_kernels
from wna16_cases import Case, conformance_cases

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]


def _cases() -> list[Case]:
    from humming_core.device import GemmProblem
    from humming_cuda.caps import caps_for_arch
    from humming_cuda.kernels.wna16_decode import FAMILY

    caps = caps_for_arch("sm_90a")
    return [
        c
        for c in conformance_cases()
        if c.m <= 16
        and FAMILY.supports(
            c.spec, GemmProblem(n=c.n, k=c.k, m=c.m, act_dtype=c.spec.act.dtype.name), caps
        )
    ]


CASES = _cases()


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    torch.backends.cuda.matmul.allow_tf32 = False
    return CudaDevice()


@pytest.fixture(scope="module")
def kernels(device):
    """The family's first candidate for every case, compiled in parallel up front."""
    from humming_cuda.kernels.wna16_decode import FAMILY

    built = build_kernels(device, FAMILY, [(c, 0) for c in CASES])
    return {(c.id, c.seed): b for c, b in zip(CASES, built, strict=True)}


TWO_BLOCKS = [c for c in CASES if c.m > 8]


@pytest.fixture(scope="module")
def three_ctas_kernels(device):
    """The two-block cases with registers capped for three CTAs per SM (the heuristic's choice
    on grids longer than a wave of two, which the matrix's small N does not reach)."""
    from humming_cuda.kernels.wna16_decode import FAMILY

    built = build_kernels(device, FAMILY, [(c, 0) for c in TWO_BLOCKS], {"ctas_per_sm": 3})
    return {(c.id, c.seed): b for c, b in zip(TWO_BLOCKS, built, strict=True)}


def test_the_matrix_reaches_every_kind_of_weight():
    kinds = {c.spec.weight.dtype.kind for c in CASES}
    assert kinds == {"int", "uint", "float"}, kinds
    assert any(c.spec.weight.zero_point == "int" for c in CASES)
    assert {1, 7, 16} <= {c.m for c in CASES}  # one block of tokens, and two


@pytest.mark.parametrize("case", CASES, ids=[f"{c.id}-s{c.seed}" for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, case.seed)]
    check_wna16_case(case, device, config, kernel)


@pytest.mark.parametrize("case", TWO_BLOCKS, ids=[f"{c.id}-s{c.seed}" for c in TWO_BLOCKS])
def test_three_ctas_per_sm_match_reference(case: Case, device, three_ctas_kernels):
    config, kernel = three_ctas_kernels[(case.id, case.seed)]
    assert config.tokens == 16 and config.ctas_per_sm == 3
    check_wna16_case(case, device, config, kernel)


def test_device_routes_decode_here_and_split_k_replays_in_a_graph(device):
    from humming_core.device import GemmProblem
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.spec import presets
    from humming_core.testing.conformance import error_bound

    spec = presets.W4A16_G128
    gen = torch.Generator().manual_seed(11)
    cw = quantize_weight((torch.randn(1024, 4096, generator=gen) * 0.05).cuda(), spec)
    config = device.candidates(spec, GemmProblem(n=1024, k=4096, m=3, act_dtype="fp16"))[0]
    assert config.family == "wna16_decode" and config.split_k > 1, config
    kernel = device.load(device.compile(device.render(spec, config)))
    call = kernel.prepare(**device.weight_layout(spec, config).pack(cw, "cuda"))
    x = torch.randn(3, 4096, generator=gen).half().cuda()
    out = torch.empty(3, 1024, dtype=torch.float16, device="cuda")
    call(x, out)  # warm-up: grows the split-K workspace before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call(x, out)
    for _ in range(3):
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        ref = reference_gemm(x, cw)
        assert ((out.double() - ref.double()).abs() <= error_bound(x, cw, ref)).all()
    # its tile computes 8 tokens: a ninth row is refused, in the prepared call and the kernel
    x9, out9 = torch.zeros(9, 4096).half().cuda(), torch.zeros(9, 1024).half().cuda()
    with pytest.raises(ValueError, match="at most 8"):
        call(x9, out9)
    with pytest.raises(ValueError, match="at most 8"):
        kernel(x=x9, out=out9, **device.weight_layout(spec, config).pack(cw, "cuda"))


def test_two_token_blocks_route_here_and_replay_in_a_graph(device):
    """M = 9-16: two n8 blocks of tokens (config.tokens = 16); the prepared call's quick path
    equals the first, checked call; graph replays match; a 17th row is refused."""
    from humming_core.device import GemmProblem
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.spec import presets
    from humming_core.testing.conformance import error_bound

    spec = presets.W4A16_G128
    gen = torch.Generator().manual_seed(12)
    cw = quantize_weight((torch.randn(1024, 4096, generator=gen) * 0.05).cuda(), spec)
    config = device.candidates(spec, GemmProblem(n=1024, k=4096, m=13, act_dtype="fp16"))[0]
    assert config.family == "wna16_decode" and config.tokens == 16, config
    kernel = device.load(device.compile(device.render(spec, config)))
    call = kernel.prepare(**device.weight_layout(spec, config).pack(cw, "cuda"))
    x = torch.randn(13, 4096, generator=gen).half().cuda()
    out = torch.empty(13, 1024, dtype=torch.float16, device="cuda")
    call(x, out)
    first = out.clone()
    ref = reference_gemm(x, cw)
    assert ((first.double() - ref.double()).abs() <= error_bound(x, cw, ref)).all()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call(x, out)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, first)
    x17, out17 = torch.zeros(17, 4096).half().cuda(), torch.zeros(17, 1024).half().cuda()
    with pytest.raises(ValueError, match="at most 16"):
        call(x17, out17)


@pytest.mark.parametrize("m", [4, 13])
def test_pdl_chain_reads_each_input_after_its_producer(device, m):
    config = check_pdl_chain(device, m)
    assert config.family == "wna16_decode"
