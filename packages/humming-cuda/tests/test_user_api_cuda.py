"""The user API on the cuda device: the shared conformance suite through ops, QuantLinear in a CUDA
graph and under torch.compile, and no kernel compiled after the layer is built."""

from __future__ import annotations

import pytest
import torch

from humming_core import jit
from humming_core.device import get_device
from humming_core.nn import QuantLinear
from humming_core.numerics import quantize_weight
from humming_core.ops import gemm, prepare
from humming_core.spec import MXFP4, W4A16_G128
from humming_core.testing.conformance import cases, run_case, within_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]


@pytest.fixture(scope="module")
def cuda():
    """The verified families only: no opt-in to unverified ones (w4a4)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
        yield get_device("cuda")


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_shared_conformance_suite(case, cuda):
    result = run_case(case, cuda)
    assert result.unwritten == 0, f"{case.id}: {result.unwritten} output elements never written"
    assert result.worst <= 1.0, f"{case.id}: worst |err|/bound = {result.worst:.3g}"


def test_quant_linear_graph_compile_and_no_recompile(cuda):
    torch.manual_seed(0)
    w, b = torch.randn(320, 512) * 0.05, torch.randn(320).half()
    layer = QuantLinear.from_float(w, W4A16_G128, bias=b, device="cuda")
    ref_cw = quantize_weight(w, W4A16_G128, bias=b)
    x = torch.randn(8, 512, device="cuda").half()
    before = jit.compile_count()
    eager = layer(x)  # also grows any split-K workspace before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    static_x = x.clone()
    with torch.cuda.graph(graph):
        static_y = layer(static_x)
    for _ in range(3):
        static_x.copy_(torch.randn_like(static_x))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static_y, layer(static_x), rtol=0, atol=0)
    compiled = torch.compile(lambda t: layer(t) + 1, fullgraph=True)
    torch.testing.assert_close(compiled(x), eager + 1, rtol=0, atol=0)
    assert jit.compile_count() == before, "a forward pass compiled a kernel"
    assert within_bound(eager, x, ref_cw) <= 1.0


def test_every_m_bucket_runs(cuda):
    cw = quantize_weight(torch.randn(192, 256) * 0.05, MXFP4)
    layer = prepare(cw, cuda)
    for m in (1, 3, 17, 100, 300, 5000, 9000):
        x = torch.randn(m, 256, device="cuda").bfloat16()
        worst = within_bound(gemm(x, layer), x, cw)
        assert worst <= 1.0, f"M={m}: worst |err|/bound = {worst:.3g}"
