"""What the sm_90a wgmma conformance tests (test_w8a8_wgmma_conformance.py,
test_wna16_wgmma_conformance.py) share: the device fixture's arch check, the parallel build of
every case's kernel, the guarded call (x padded with NaN columns after K, the output a view inside
a poisoned buffer) and the CUDA graph replay.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

POISON = -7777.0
TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def sm90_device(family: str):
    """A CudaDevice on an sm_90a GPU; skips on any other arch (the wgmma families need sm_90a)."""
    from humming_cuda.device import CudaDevice

    dev = CudaDevice()
    if dev.caps().arch != "sm_90a":
        pytest.skip(f"the {family} family needs sm_90a, this GPU is {dev.caps().arch}")
    return dev


def problem_of(case):
    """The GemmProblem of a dense case (w8a8_cases.Case or wna16_cases.Case)."""
    from humming_core.device import GemmProblem

    return GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)


def build_kernels(device, family, jobs: list[tuple[object, int]]) -> list[tuple[object, object]]:
    """(config, kernel) per (case, candidate index) job, compiled in parallel up front; index 0
    is the heuristic's choice."""

    def build(job):
        case, index = job
        config = family.candidates(case.spec, problem_of(case), device.caps())[index]
        return config, device.load(device.compile(device.render(case.spec, config)))

    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(build, jobs))


def guarded_call(kernel, x: torch.Tensor, n: int, out_dtype: str, k_pad: int, **args):
    """Run kernel(x=..., out=..., **args) with x copied into a NaN-filled buffer (k_pad NaN columns
    after K, a NaN row below) and out a [M, N] view inside a poisoned buffer; asserts that nothing
    outside the view was written and that no NaN (a read past K) reached the output. Returns out."""
    m, k = x.shape
    x_big = torch.full((m + 1, k + k_pad), float("nan"), dtype=x.dtype, device="cuda")
    x_dev = x_big[:m, :k]
    x_dev.copy_(x)
    out_big = torch.full((m + 2, n + 6), POISON, dtype=TORCH_DTYPES[out_dtype], device="cuda")
    before = out_big.clone()
    out = out_big[1 : m + 1, 2 : n + 2]
    kernel(x=x_dev, out=out, **args)
    torch.cuda.synchronize()

    inside = torch.zeros_like(out_big, dtype=torch.bool)
    inside[1 : m + 1, 2 : n + 2] = True
    assert torch.equal(out_big[~inside].view(torch.uint8), before[~inside].view(torch.uint8)), (
        "wrote outside [M, N]"
    )
    assert not torch.isnan(out).any(), "NaN in the output (read past K, or a bad dequant)"
    return out


def replay_in_graph(kernel, x: torch.Tensor, out: torch.Tensor, weights: dict) -> None:
    """Capture kernel(x, out, weights) in a CUDA graph and replay it into a zeroed `out`. A warm-up
    call runs outside the capture first: it encodes the TMA tensor maps."""
    kernel(x=x, out=out, **weights)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(x=x, out=out, **weights)
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
