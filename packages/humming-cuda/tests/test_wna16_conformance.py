"""WnA16 conformance on the GPU: the format matrix against humming_core.numerics.reference_gemm.

Every case checks (1) |out - ref| within the bound derived in wna16_cases.py, (2) no write outside
the [M, N] output view (poisoned rows and columns around it keep their bits), (3) no read past K of
an activation row (NaN-poisoned columns after K would turn the result into NaN).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from wna16_cases import Case, conformance_cases, random_weight

from humming_core.testing.conformance import error_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = conformance_cases()
POISON = -7777.0


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    torch.backends.cuda.matmul.allow_tf32 = False
    return CudaDevice()


def _build(device, case: Case):
    """The wna16 family's own kernel: these cases verify the mma.sync kernels at every M, also
    where the device would route a large grid to wna16_wgmma (test_wna16_wgmma_conformance.py)."""
    from humming_core.device import GemmProblem
    from humming_cuda.kernels.wna16 import FAMILY

    problem = GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)
    config = FAMILY.candidates(case.spec, problem, device.caps())[0]
    return config, device.load(device.compile(device.render(case.spec, config)))


@pytest.fixture(scope="module")
def kernels(device):
    """Every case's kernel, compiled in parallel up front (NVRTC releases the GIL)."""
    with ThreadPoolExecutor(max_workers=16) as pool:
        built = list(pool.map(lambda c: _build(device, c), CASES))
    return {case.id + str(case.seed): b for case, b in zip(CASES, built, strict=True)}


def _poisoned(rows: int, cols: int, dtype: torch.dtype, fill: float, pad: int) -> torch.Tensor:
    return torch.full((rows + 2, cols + pad), fill, dtype=dtype, device="cuda")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[case.id + str(case.seed)]
    check_wna16_case(case, device, config, kernel)


def check_wna16_case(case: Case, device, config, kernel) -> None:
    """Run `kernel` (built for `config`) on the case and check the three properties above; the
    wna16_decode conformance reuses it."""
    from humming_core.numerics import quantize_weight, reference_gemm

    act = torch.float16 if case.spec.act.dtype.name == "fp16" else torch.bfloat16
    out_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[
        case.spec.output_dtype
    ]
    gen = torch.Generator(device="cuda").manual_seed(case.seed)
    bias = torch.randn(case.n, device="cuda", generator=gen) if case.spec.epilogue.bias else None
    cw = quantize_weight(random_weight(case, "cuda"), case.spec, bias=bias)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")

    x_big = torch.full((case.m + 1, case.k + 8), float("nan"), dtype=act, device="cuda")
    x = x_big[: case.m, : case.k]
    x.copy_(torch.randn(case.m, case.k, device="cuda", generator=gen).to(act))
    out_big = _poisoned(case.m, case.n, out_dtype, POISON, pad=6)
    before = out_big.clone()
    out = out_big[1 : case.m + 1, 2 : case.n + 2]
    kernel(x=x, out=out, **weights)
    torch.cuda.synchronize()

    inside = torch.zeros_like(out_big, dtype=torch.bool)
    inside[1 : case.m + 1, 2 : case.n + 2] = True
    assert torch.equal(out_big[~inside].view(torch.uint8), before[~inside].view(torch.uint8)), (
        "wrote outside [M, N]"
    )

    ref = reference_gemm(x, cw)
    bound = error_bound(x, cw, ref)
    err = (out.double() - ref.double()).abs()
    assert not torch.isnan(out).any(), "NaN in the output (read past K, or a bad dequant)"
    worst = (err / bound).max().item()
    assert worst <= 1.0, (
        f"max err/bound {worst:.3f} (max err {err.max().item():.3g}, config {config})"
    )
