"""moe_align on a GPU against humming_core.numerics.moe.moe_align, position for position.

The kernel is deterministic (tokens ascend within an expert, like the reference), so every test
compares whole tensors exactly, not per-expert sets. Covers both launch paths (one fused CTA for
small batches, count/scan/scatter above plan.FUSED_MAX_NUMEL), int32 and int64 ids, expert_map in
both ignore modes, skewed routing, invalid ids, padding, empty input and CUDA-graph replay.
"""

from __future__ import annotations

import pytest
import torch

from humming_core.numerics.moe import moe_align as reference_align

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]


@pytest.fixture(scope="module")
def device():
    from humming_cuda.device import CudaDevice

    return CudaDevice()


def _routing(m: int, topk: int, num_experts: int, seed: int, dtype=torch.int32) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    scores = torch.rand(m, num_experts, generator=g, device="cuda")
    return scores.topk(topk, dim=-1).indices.to(dtype)


def _assert_matches(got, topk_ids, block, num_experts, expert_map=None, ignore=False, pad=False):
    want = reference_align(
        topk_ids.cpu(),
        block,
        num_experts,
        None if expert_map is None else expert_map.cpu(),
        ignore_invalid_experts=ignore,
        pad_sorted_ids=pad,
    )
    for name, g, w in zip(("sorted_token_ids", "expert_ids", "post"), got, want, strict=True):
        assert g.is_cuda and g.dtype == torch.int32, name
        assert g.shape == w.shape, f"{name}: shape {tuple(g.shape)} != {tuple(w.shape)}"
        diff = (g.cpu() != w).nonzero()
        assert diff.numel() == 0, (
            f"{name} differs first at {diff[0].tolist()} ({diff.shape[0]} entries)"
        )


def test_vllm_docstring_example(device):
    # num_experts=5: vLLM's example ids reach 4 (see core's test_moe_reference)
    ids = torch.tensor(
        [[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]], dtype=torch.int32, device="cuda"
    )
    sorted_ids, expert_ids, post = device.moe_align(ids, 4, 5)
    assert post.is_cuda and post.tolist() == [16]
    assert sorted_ids[:16].tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12]
    assert (sorted_ids[16:] == 12).all() and expert_ids.tolist() == [1, 2, 3, 4, 0, 0, 0]


@pytest.mark.parametrize(
    ("m", "topk", "num_experts"),
    [(1, 1, 8), (1, 8, 256), (7, 2, 8), (64, 8, 128), (512, 8, 256), (600, 8, 64), (2048, 4, 257)],
)
@pytest.mark.parametrize("block", [1, 16, 64])
def test_uniform_routing(device, m, topk, num_experts, block):
    ids = _routing(m, topk, num_experts, seed=m + num_experts + block)
    _assert_matches(device.moe_align(ids, block, num_experts), ids, block, num_experts)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_e256_top8_m8192(device, dtype):
    ids = _routing(8192, 8, 256, seed=3, dtype=dtype)
    for block in (16, 64, 128):
        _assert_matches(device.moe_align(ids, block, 256), ids, block, 256)


@pytest.mark.parametrize("m", [8, 8192])
def test_skewed_routing_all_to_one_expert(device, m):
    for topk in (1, 8):
        ids = torch.full((m, topk), 77, dtype=torch.int32, device="cuda")
        got = device.moe_align(ids, 16, 128)
        _assert_matches(got, ids, 16, 128)
        assert got[2].item() == -(-m * topk // 16) * 16


@pytest.mark.parametrize("m", [5, 1024, 8192])
@pytest.mark.parametrize("ignore", [False, True])
def test_expert_map(device, m, ignore):
    num_experts = 256
    ids = _routing(m, 8, num_experts, seed=m)
    # this rank holds experts 64..127 as local 0..63
    emap = torch.full((num_experts,), -1, dtype=torch.int32, device="cuda")
    emap[64:128] = torch.arange(64, dtype=torch.int32, device="cuda")
    for block in (16, 64):
        got = device.moe_align(ids, block, num_experts, emap, ignore_invalid_experts=ignore)
        _assert_matches(got, ids, block, num_experts, emap, ignore)


@pytest.mark.parametrize("m", [3, 4096])
def test_invalid_ids_are_dropped_and_padding_honoured(device, m):
    ids = _routing(m, 4, 32, seed=11)
    ids[::3, 0] = -1
    ids[1::5, 1] = 32  # == num_experts: out of range
    for pad in (False, True):
        got = device.moe_align(ids, 16, 32, pad_sorted_ids=pad)
        _assert_matches(got, ids, 16, 32, pad=pad)


def test_empty_batch(device):
    ids = torch.empty(0, 8, dtype=torch.int32, device="cuda")
    sorted_ids, expert_ids, post = device.moe_align(ids, 16, 64)
    assert sorted_ids.numel() == 0 and expert_ids.numel() == 0 and post.tolist() == [0]


def test_no_host_synchronisation(device):
    ids = _routing(4096 * 2, 8, 256, seed=5)
    emap = torch.arange(256, dtype=torch.int32, device="cuda")
    device.moe_align(ids, 16, 256, emap)  # warm-up: builds and loads the kernels
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for m in (1, 300, 8192):
            device.moe_align(ids[:m], 16, 256, emap, ignore_invalid_experts=True)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@pytest.mark.parametrize("m", [16, 8192])
def test_cuda_graph_capture_and_replay(device, m):
    from humming_core.jit import compile_count

    static_ids = _routing(m, 8, 256, seed=1)
    emap = torch.full((256,), -1, dtype=torch.int32, device="cuda")
    emap[::2] = torch.arange(128, dtype=torch.int32, device="cuda")
    device.moe_align(static_ids, 16, 256, emap)  # warm-up before capture
    torch.cuda.synchronize()
    compiles = compile_count()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = device.moe_align(static_ids, 16, 256, emap)
    for seed in (2, 3):
        static_ids.copy_(_routing(m, 8, 256, seed=seed))
        for t in outs:
            t.fill_(-7)  # replay must rewrite every entry, tail included
        graph.replay()
        torch.cuda.synchronize()
        _assert_matches(outs, static_ids, 16, 256, emap)
    assert compile_count() == compiles


def test_ops_moe_align_dispatches_to_cuda(device):
    from humming_core.ops import moe_align

    ids = _routing(40, 4, 16, seed=9)
    _assert_matches(moe_align(ids, 8, 16, device=device), ids, 8, 16)


def test_wrong_expert_map_is_refused(device):
    ids = _routing(4, 2, 16, seed=0)
    with pytest.raises(ValueError, match="expert_map has 8 entries but num_experts=16"):
        device.moe_align(ids, 8, 16, torch.zeros(8, dtype=torch.int32, device="cuda"))


@pytest.mark.parametrize("m", [3, 8192])  # the fused CTA and the split launches
@pytest.mark.parametrize(
    ("dtype", "width", "ld"),
    [(torch.bfloat16, 2048, 2048), (torch.float32, 5, 7), (torch.float16, 3, 3)],
    ids=["bf16-16B-stores", "fp32-4B-strided", "fp16-2B"],
)
def test_zero_rows_of_dropped_entries(device, m, dtype, width, ld):
    """zero_rows: the rows of dropped entries (non-local experts, ids out of range) come back zero,
    every other row and the columns past `width` keep their bits, the alignment is unchanged."""
    num_experts = 64
    ids = _routing(m, 4, num_experts, seed=21)
    ids[::7, 1] = num_experts  # out of range
    emap = torch.full((num_experts,), -1, dtype=torch.int32, device="cuda")
    emap[::3] = torch.arange(len(range(0, num_experts, 3)), dtype=torch.int32, device="cuda")
    store = torch.full((m * 4, ld), 5.0, dtype=dtype, device="cuda")
    rows = store[:, :width]
    got = device.moe_align(ids, 16, num_experts, emap, ignore_invalid_experts=True, zero_rows=rows)
    _assert_matches(got, ids, 16, num_experts, emap, ignore=True)
    want = torch.full_like(store, 5.0).cpu()
    reference_align(ids.cpu(), 16, num_experts, emap.cpu(), True, zero_rows=want[:, :width])
    assert (want == 0).any() and (want == 5).any()
    assert torch.equal(store.cpu(), want)


def test_zero_rows_of_the_wrong_shape_are_refused(device):
    ids = _routing(4, 2, 16, seed=0)
    rows = torch.zeros(9, 32, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match=r"zero_rows must be a \[8, n\] tensor"):
        device.moe_align(ids, 8, 16, zero_rows=rows)
