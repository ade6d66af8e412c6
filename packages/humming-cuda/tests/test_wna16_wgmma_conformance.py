"""WnA16-wgmma conformance on an sm_90a GPU against humming_core.numerics.reference_gemm.

The family is unverified, so these tests opt in with HUMMING_UNVERIFIED_KERNELS=1; they are its
hardware verification. Each case checks (1) |out - ref| within error_bound, (2) no write outside
the [M, N] output view, (3) no NaN (x columns after K are NaN: a read past K would reach the
output). Both ring depths run on the largest-K shape; the device routes large-M integer WnA16 here
under the opt-in (small M stays wna16, one packed copy serves both); a call replays correctly from
a CUDA graph.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from wna16_cases import Case, random_weight
from wna16_wgmma_cases import SHAPES, matrix_cases, wgmma_cases

from humming_core.testing.conformance import error_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = wgmma_cases() + matrix_cases()
# the largest-K shape of each own format also runs the second (6-stage) config
DEEP = wgmma_cases()[len(SHAPES) - 1 :: len(SHAPES)]
POISON = -7777.0
_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@pytest.fixture(autouse=True)
def allow_unverified(monkeypatch):
    monkeypatch.setenv("HUMMING_UNVERIFIED_KERNELS", "1")


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = CudaDevice()
    if dev.caps().arch != "sm_90a":
        pytest.skip(f"the wna16_wgmma family needs sm_90a, this GPU is {dev.caps().arch}")
    return dev


def _problem(case: Case):
    from humming_core.device import GemmProblem

    return GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)


def _build(device, case: Case, index: int):
    """(config, kernel) for `case`: the family's candidate `index` (0 = the heuristic's choice)."""
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    config = FAMILY.candidates(case.spec, _problem(case), device.caps())[index]
    return config, device.load(device.compile(device.render(case.spec, config)))


@pytest.fixture(scope="module")
def kernels(device):
    """Every case's kernel (first candidate), and DEEP's with the second, compiled in parallel."""
    jobs = [(c, 0) for c in CASES] + [(c, 1) for c in DEEP]
    with ThreadPoolExecutor(max_workers=16) as pool:
        built = list(pool.map(lambda j: _build(device, *j), jobs))
    return {(c.id, c.seed, i): b for (c, i), b in zip(jobs, built, strict=True)}


def _check(case: Case, device, config, kernel) -> None:
    from humming_core.numerics import quantize_weight, reference_gemm

    act = _TORCH[case.spec.act.dtype.name]
    gen = torch.Generator(device="cuda").manual_seed(case.seed)
    bias = torch.randn(case.n, device="cuda", generator=gen) if case.spec.epilogue.bias else None
    cw = quantize_weight(random_weight(case, "cuda"), case.spec, bias=bias)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")

    x_big = torch.full((case.m + 1, case.k + 8), float("nan"), dtype=act, device="cuda")
    x = x_big[: case.m, : case.k]
    x.copy_(torch.randn(case.m, case.k, device="cuda", generator=gen).to(act))
    out_dtype = _TORCH[case.spec.output_dtype]
    out_big = torch.full((case.m + 2, case.n + 6), POISON, dtype=out_dtype, device="cuda")
    before = out_big.clone()
    out = out_big[1 : case.m + 1, 2 : case.n + 2]
    kernel(x=x, out=out, **weights)
    torch.cuda.synchronize()

    inside = torch.zeros_like(out_big, dtype=torch.bool)
    inside[1 : case.m + 1, 2 : case.n + 2] = True
    assert torch.equal(out_big[~inside].view(torch.uint8), before[~inside].view(torch.uint8)), (
        "wrote outside [M, N]"
    )
    assert not torch.isnan(out).any(), "NaN in the output (read past K, or a bad dequant)"
    ref = reference_gemm(x, cw)
    err = (out.double() - ref.double()).abs()
    worst = (err / error_bound(x, cw, ref)).max().item()
    assert worst <= 1.0, f"max err/bound {worst:.3f} (max err {err.max().item():.3g}, {config})"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.id}-s{c.seed}" for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    _check(case, device, *kernels[(case.id, case.seed, 0)])


@pytest.mark.parametrize("case", DEEP, ids=lambda c: c.id)
def test_deeper_ring_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, case.seed, 1)]
    assert config.stages == 6
    _check(case, device, config, kernel)


def test_device_routes_large_m_here_and_replays_in_a_graph(device):
    from humming_core.device import GemmProblem
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.spec import presets

    spec = presets.W4A16_G128
    gen = torch.Generator().manual_seed(7)
    cw = quantize_weight(torch.randn(384, 512, generator=gen) * 0.05, spec)
    small = device.candidates(spec, GemmProblem(n=384, k=512, m=16, act_dtype="fp16"))[0]
    assert small.family == "wna16"
    config = device.candidates(spec, GemmProblem(n=384, k=512, m=1030, act_dtype="fp16"))[0]
    assert config.family == "wna16_wgmma"
    kernel = device.load(device.compile(device.render(spec, config)))
    weights = device.weight_layout(spec, config).pack(cw, "cuda")
    x = torch.randn(1030, 512, generator=gen).to(torch.float16).cuda()
    out = torch.empty(1030, 384, dtype=torch.float16, device="cuda")
    kernel(x=x, out=out, **weights)  # warm-up outside the capture: encodes the tensor map
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(x=x, out=out, **weights)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    ref = reference_gemm(x, cw)
    assert ((out.double() - ref.double()).abs() <= error_bound(x, cw, ref)).all()


def test_user_api_switches_families_per_m_on_one_packed_copy(device):
    """PreparedGemm: small M runs the mma.sync wna16 kernels, large M these, same packed weights."""
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    spec = presets.GPTQ_INT4
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight(torch.randn(256, 640, generator=gen) * 0.05, spec)
    layer = PreparedGemm(cw, device)
    families = {c.family for c in layer.configs.values()}
    assert families == {"wna16", "wna16_wgmma"}, families
    for m in (5, 200, 1030):
        x = torch.randn(m, 640, generator=gen).to(torch.float16).cuda()
        out = layer.run(x)
        ref = reference_gemm(x, cw)
        assert ((out.double() - ref.double()).abs() <= error_bound(x, cw, ref)).all(), f"M={m}"
