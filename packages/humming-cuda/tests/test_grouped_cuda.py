"""ops.grouped_gemm on the GPU: the grouped layouts run the verified indexed MoE kernels (moe_wna16,
moe_w8a8) on a routing table built on the device. Checks that the table equals moe_align's (so the
kernels are called exactly as their conformance suites call them, and the outputs are identical),
that rows outside the groups stay zero, that no call synchronises with the host, and that a CUDA
graph replays the op with new counts."""

from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]


def _layer(preset: str, e: int = 8, n: int = 256, k: int = 512):
    from humming_core.numerics import quantize_weight
    from humming_core.ops import PreparedMoe
    from humming_core.spec import preset as get_preset

    gen = torch.Generator(device="cuda").manual_seed(11)
    spec = get_preset(preset).replace(layout="moe")
    cw = quantize_weight(torch.randn(e, n, k, generator=gen, device="cuda") / k**0.5, spec)
    return PreparedMoe(cw, "cuda")


@pytest.mark.parametrize("preset", ["W4A16_G128", "MXFP4_A8"])
def test_masked_layout_equals_the_indexed_kernel_without_host_sync(preset):
    from humming_core.numerics.moe import moe_align
    from humming_core.ops import grouped_gemm

    layer = _layer(preset)
    e, max_m = layer.num_experts, 96
    x = torch.randn(e, max_m, layer.k, device="cuda", dtype=torch.float16)
    counts = torch.tensor([96, 0, 5, 33, 64, 1, 0, 17], device="cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = grouped_gemm(x, layer, counts=counts)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    rows = e * max_m
    ids = torch.full((rows, 1), -1, dtype=torch.int32)
    for i, c in enumerate(counts.tolist()):
        ids[i * max_m : i * max_m + c] = i
    block = layer.block_size(rows)
    table = [t.cuda() for t in moe_align(ids, block, e, pad_sorted_ids=True)]
    want = torch.zeros(rows, layer.n_out, dtype=layer.out_dtype, device="cuda")
    layer.run(x.reshape(rows, -1), *table, 1, block, out=want)
    assert torch.equal(out.reshape(rows, -1), want)
    for i, c in enumerate(counts.tolist()):
        assert (out[i, c:] == 0).all()


def test_contiguous_layout_replays_in_a_graph_with_new_offsets():
    """The table is rebuilt inside the graph from the offsets tensor: new offsets, new groups."""
    from humming_core.ops import grouped_gemm

    layer = _layer("W4A16_G128")
    x = torch.randn(300, layer.k, device="cuda", dtype=torch.float16)
    offsets = torch.tensor([0, 40, 40, 100, 180, 181, 250, 290, 300], device="cuda")
    out = torch.zeros(300, layer.n_out, dtype=layer.out_dtype, device="cuda")
    grouped_gemm(x, layer, offsets=offsets, out=out)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out.zero_()
        grouped_gemm(x, layer, offsets=offsets, out=out)
    for bounds in ([0, 10, 20, 30, 40, 50, 60, 70, 80], [0, 0, 0, 150, 150, 150, 299, 299, 299]):
        offsets.copy_(torch.tensor(bounds))
        graph.replay()
        torch.cuda.synchronize()
        eager = torch.zeros_like(out)
        grouped_gemm(x, layer, offsets=offsets, out=eager)
        assert torch.equal(out, eager), bounds
        assert (out[bounds[-1] :] == 0).all() and out[: bounds[-1]].abs().sum() > 0
