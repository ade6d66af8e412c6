"""The prepared W8A8 / W4A8 calls on a GPU (kernels/w8a8/call.py, and kernels/w8a8_wgmma/call.py
for the sm_90a wgmma kernels): the same result as the fully checked call (bit-identical: split-K
partials are summed in split order), within the format's bound of the reference, unsplit and
split, over growing M (the wgmma kernels' activation boxes change at 64 rows), and replayed from
a CUDA graph."""

from __future__ import annotations

import pytest
import torch

from humming_core import jit
from humming_core.device import GemmProblem, get_device
from humming_core.numerics import quantize_weight
from humming_core.spec import presets
from humming_core.testing.conformance import within_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]
N, K = 320, 1024


def _kernel(spec, split_k: int, family=None, m: int = 1, **fields):
    from humming_cuda.kernels.w8a8 import FAMILY as W8A8

    device = get_device("cuda")
    weights = quantize_weight(
        torch.randn(N, K, generator=torch.Generator().manual_seed(5)) * 0.05, spec
    )
    config = (family or W8A8).candidates(spec, GemmProblem(n=N, k=K, m=m), device.caps())[0]
    config = config.model_copy(update={"split_k": split_k, **fields})
    packed = device.weight_layout(spec, config).pack(weights, "cuda")
    kernel = device.load(jit.get_or_build(device, device.render(spec, config)))
    return kernel, packed, weights


@pytest.mark.parametrize("name", ["W4A8_FP8", "W8A8_FP8", "W8A8_INT8"])
@pytest.mark.parametrize("split_k", [1, 4])
def test_prepared_call_equals_the_checked_call(name, split_k):
    spec = presets.preset(name)
    # the quick path from the second call; the workspace grows
    _check_prepared(spec, *_kernel(spec, split_k), (1, 3, 16, 1, 40), f"{name} split_k={split_k}")


def _check_prepared(spec, kernel, packed, weights, ms, label: str) -> None:
    """The prepared call's output equals the checked call's bit for bit, within the reference
    bound, for each M of `ms` in turn (the first builds the template)."""
    call = kernel.prepare(**packed)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[spec.output_dtype]
    for m in ms:
        x = torch.randn(m, K, device="cuda").to(torch.bfloat16)
        fast, full = (torch.full((m, N), float("nan"), device="cuda").to(dtype) for _ in range(2))
        call(x, fast)
        kernel(x=x, out=full, **packed)
        assert torch.equal(fast, full), f"{label} M={m}"
        assert within_bound(fast, x, weights) <= 1.0, f"{label} M={m}"
    assert call.template is not None


WGMMA = [  # (preset, split_k, config fields)
    ("W8A8_FP8", 1, {"persistent": True}),
    ("FP8_BLOCK128", 3, {}),
    ("W4A8_FP8", 2, {}),
]


@pytest.mark.parametrize(("name", "split_k", "fields"), WGMMA, ids=[w[0] for w in WGMMA])
def test_wgmma_prepared_call_equals_the_checked_call(name, split_k, fields):
    from humming_cuda.kernels.w4a8_wgmma import FAMILY as W4A8_WGMMA
    from humming_cuda.kernels.w8a8_wgmma import FAMILY as W8A8_WGMMA

    spec = presets.preset(name)
    family = W4A8_WGMMA if name == "W4A8_FP8" else W8A8_WGMMA
    built = _kernel(spec, split_k, family, 300, **fields)
    _check_prepared(spec, *built, (300, 40, 17, 300, 130), name)  # across the 64-row boxes


def test_graph_replay_of_the_quick_path():
    spec = presets.W4A8_FP8
    kernel, packed, _ = _kernel(spec, 2)
    call = kernel.prepare(**packed)
    x = torch.randn(8, K, device="cuda").to(torch.bfloat16)
    eager = torch.empty(8, N, device="cuda", dtype=torch.bfloat16)
    call(x, eager)  # builds the templates
    call(x, eager)
    out = torch.full_like(eager, float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call(x, out)
    for _ in range(2):
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, eager)


@pytest.mark.parametrize("m", [16, 300])
def test_layers_on_one_stream_share_the_quantized_activation_buffer(m):
    """Prepared calls of two layers, alternating on one stream with no synchronisation, quantize
    into the same buffer (act_quant/scratch.py): each call's quantizer must not overwrite it
    before the GEMM before it has read it (PDL launches included). Every output equals its
    checked call's, computed beforehand."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY as W4A8_WGMMA
    from humming_cuda.kernels.w8a8_wgmma import FAMILY as W8A8_WGMMA

    layers = []
    for name, family in (("W8A8_FP8", W8A8_WGMMA), ("W4A8_FP8", W4A8_WGMMA)):
        spec = presets.preset(name)
        kernel, packed, _ = _kernel(spec, 1, family if m > 64 else None, m)
        call = kernel.prepare(**packed)
        xs = [torch.randn(m, K, device="cuda").to(torch.bfloat16) for _ in range(12)]
        expected = []
        for x in xs:
            out = torch.empty(m, N, device="cuda", dtype=torch.bfloat16)
            kernel(x=x, out=out, **packed)
            expected.append(out)
        call(xs[0], torch.empty(m, N, device="cuda", dtype=torch.bfloat16))  # the template
        layers.append((call, xs, expected))
    torch.cuda.synchronize()
    outs = [[torch.full((m, N), float("nan"), device="cuda").to(torch.bfloat16) for _ in xs]
            for _, xs, _ in layers]  # fmt: skip
    for i in range(12):
        for (call, xs, _), out in zip(layers, outs, strict=True):
            call(xs[i], out[i])
    torch.cuda.synchronize()
    for (_, _, expected), out in zip(layers, outs, strict=True):
        for i in range(12):
            assert torch.equal(out[i], expected[i]), f"call {i}"
