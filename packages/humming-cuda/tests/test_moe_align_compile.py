"""The moe_align phase kernels compile for every arch row, without spills, within their bounds."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from humming_cuda.caps import ARCHS
from humming_cuda.kernels.moe_align import PHASES, render
from humming_cuda.kernels.moe_align.plan import MAX_THREADS

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.compiler import compile_source, supported_archs


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_phase_kernels_compile(arch):
    if int(arch[3:].rstrip("af")) not in supported_archs():
        pytest.skip(f"this NVRTC cannot target {arch}")
    sources = [render(p, d, arch) for p in PHASES for d in (torch.int32, torch.int64)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        artifacts = list(pool.map(compile_source, sources))
    for source, artifact in zip(sources, artifacts, strict=True):
        res = artifact.meta["resources"]
        assert artifact.meta["symbol"] == source.name  # extern "C": the name is the symbol
        assert res["spill_stores"] == 0 and res["stack_bytes"] == 0, f"{source.name}: {res}"
        # __launch_bounds__(MAX_THREADS): a full CTA must fit the 64K-register file
        assert 0 < res["registers"] <= 65536 // MAX_THREADS, f"{source.name}: {res}"
