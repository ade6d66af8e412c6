"""The prepared WnA16 call on a GPU: same result as the fully checked call, split-K workspace,
other threads and streams, CUDA-graph capture, and the refusals."""

from __future__ import annotations

import threading

import pytest
import torch

from humming_core import jit
from humming_core.device import GemmProblem, get_device
from humming_core.numerics import quantize_weight
from humming_core.ops import prepare
from humming_core.spec import W4A16_G128
from humming_core.testing.conformance import within_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
N, K = 320, 1024


@pytest.fixture(scope="module")
def weights():
    torch.manual_seed(0)
    return quantize_weight(torch.randn(N, K) * 0.05, W4A16_G128)


def _kernel(weights, split_k):
    from humming_cuda.kernels.wna16 import FAMILY as WNA16

    device = get_device("cuda")
    # the wna16 kernel (M <= 8 routes to wna16_decode, which refuses the larger M below)
    config = WNA16.candidates(W4A16_G128, GemmProblem(n=N, k=K, m=1), device.caps())[0]
    config = config.model_copy(update={"split_k": split_k})
    packed = device.weight_layout(W4A16_G128, config).pack(weights, "cuda")
    kernel = device.load(jit.get_or_build(device, device.render(W4A16_G128, config)))
    return kernel, packed


@pytest.mark.parametrize("split_k", [1, 4])
def test_prepared_call_equals_the_checked_call(weights, split_k):
    kernel, packed = _kernel(weights, split_k)
    call = kernel.prepare(**packed)
    for m in (1, 3, 40, 1, 300):  # grows the split-K workspace on the way
        x = torch.randn(m, K, device="cuda").half()
        fast, full = (torch.full((m, N), float("nan"), device="cuda").half() for _ in range(2))
        call(x, fast)
        kernel(x=x, out=full, **packed)
        assert within_bound(fast, x, weights) <= 1.0, f"M={m} split_k={split_k}"
        if split_k == 1:
            assert torch.equal(fast, full), f"M={m}"


def test_threads_streams_and_graph_capture(weights):
    kernel, packed = _kernel(weights, 2)
    call = kernel.prepare(**packed)
    x = torch.randn(8, K, device="cuda").half()
    want = torch.empty(8, N, device="cuda").half()
    call(x, want)
    out = torch.zeros_like(want)
    errors = []

    def other_thread():  # no current context, its own parameter block
        try:
            call(x, out)
            torch.cuda.synchronize()
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=other_thread)
    thread.start(), thread.join()
    assert not errors and torch.equal(out, want)
    stream, out = torch.cuda.Stream(), torch.zeros_like(want)
    with torch.cuda.stream(stream):
        call(x, out)
    stream.synchronize()
    assert torch.equal(out, want)
    graph, out = torch.cuda.CUDAGraph(), torch.zeros_like(want)
    with torch.cuda.graph(graph):
        call(x, out)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    call(x, want)
    assert torch.equal(out, want)


def test_refusals_after_the_template_exists(weights):
    layer = prepare(weights, get_device("cuda"))
    call = layer._calls[0]
    x = torch.randn(4, K, device="cuda").half()
    out = torch.empty(4, N, device="cuda").half()
    call(x, out)
    with pytest.raises(ValueError, match=r"'x': expected dtype float16, got bfloat16"):
        call(x.bfloat16(), out)
    with pytest.raises(ValueError, match=r"'x': expected a data pointer aligned to 16 bytes"):
        call(torch.randn(4, K + 8, device="cuda").half()[:, 1 : K + 1], out)
    with pytest.raises(ValueError, match=r"'out': expected a tensor on cuda:0 .* got one on cpu"):
        call(x, out.cpu())
    with pytest.raises(ValueError, match=r"'out': expected shape \(4, N\) \(dim 0 is M=4\)"):
        call(x, out[:3])
