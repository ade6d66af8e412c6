"""PreparedMoe.run's and fused_moe_rows's one-comparison checks: a good `out` is used as it is, a
wrong x or out still raises naming it and runs nothing, block_size answers what config_for's config
says for every row count, and fused_moe_rows aligns once per block size (zeroing dropped rows in
the first), with w2 told its routing is ready only when it shares w13's."""

from __future__ import annotations

import pytest
import torch

from humming_core.device.reference import ReferenceConfig, ReferenceDevice
from humming_core.numerics import quantize_weight
from humming_core.numerics.moe import reference_fused_moe
from humming_core.ops import PreparedMoe, fused_moe_rows
from humming_core.spec import W4A16_G128

E, HIDDEN, INTER, TOPK = 6, 64, 32, 2


class BlockConfig(ReferenceConfig):
    block_m: int


class BlockDevice(ReferenceDevice):
    """The reference device with a block size per layer (K) and per bucket (M), recording every
    alignment it is asked for: (block_size, zero_rows)."""

    def __init__(self) -> None:
        self.aligned: list[tuple] = []

    def candidates(self, spec, problem):
        block = (16 if problem.k == HIDDEN else 32) * (1 if problem.m <= 8 else 4)
        return [BlockConfig(name=f"m{problem.m}", block_m=block)]

    def moe_align(self, topk_ids, block_size, num_experts, *args, zero_rows=None):
        self.aligned.append((block_size, zero_rows))
        return super().moe_align(topk_ids, block_size, num_experts, *args, zero_rows=zero_rows)


def _pair(device):
    w13 = quantize_weight(
        torch.randn(E, 2 * INTER, HIDDEN) * 0.1,
        W4A16_G128.replace(layout="moe", epilogue={"glu": "silu_mul"}),
    )
    w2_spec = W4A16_G128.replace(
        layout="moe", weight={"dtype": "int4", "scale": {"granularity": "group", "group_size": 32}}
    )
    w2 = quantize_weight(torch.randn(E, HIDDEN, INTER) * 0.1, w2_spec)
    return (w13, w2), (PreparedMoe(w13, device), PreparedMoe(w2, device))


def _routing(m: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([torch.randperm(E, generator=g)[:TOPK] for _ in range(m)]).int()
    return torch.rand(m, TOPK, generator=g), ids


def test_block_size_is_the_block_of_the_config_for_those_rows():
    (cw, _), (w13, _) = _pair(BlockDevice())
    for layer in (w13, w13.with_weights(dict(w13.packed))):
        for rows in (*range(1, 40), 4095, 4096, 4097, 65536, 65537, 10**6):
            assert layer.block_size(rows) == layer.config_for(rows).block_m
    assert {w13.block_size(8), w13.block_size(9)} == {16, 64}
    plain = PreparedMoe(cw, "reference", buckets=(1, 64))
    assert plain.block_size(1) == plain.block_size(10**6) == PreparedMoe.DEFAULT_BLOCK


@pytest.mark.parametrize("m", [3, 9])  # w13's and w2's blocks differ (16 / 32, 64 / 128)
def test_fused_moe_rows_aligns_once_per_block_and_zeroes_dropped_rows_in_the_first(m):
    device = BlockDevice()
    (cw13, cw2), (w13, w2) = _pair(device)
    ready = []
    call = w2._calls[-1]
    w2._calls = tuple(
        (lambda routing_ready=False, **v: (ready.append(routing_ready), call(**v)))
        for _ in w2._calls
    )
    weights, ids = _routing(m, 1)
    ids[0, 1] = -1  # dropped: its row must come back zero without a fill
    x = torch.randn(m, HIDDEN).half()
    out = torch.full((m * TOPK, HIDDEN), float("nan"), dtype=torch.float16)
    got = fused_moe_rows(x, weights, ids, w13, w2, out=out)
    blocks = [w13.block_size(m * TOPK), w2.block_size(m * TOPK)]
    assert blocks[0] != blocks[1]
    assert [b for b, _ in device.aligned] == blocks
    assert device.aligned[0][1] is out and device.aligned[1][1] is None
    assert ready == [False]  # aligned between w13 and w2: not ready before w13 ran
    assert got is out and (out[1] == 0).all() and not out.isnan().any()
    want = reference_fused_moe(x, weights, ids, cw13, cw2)
    torch.testing.assert_close(got.view(m, TOPK, -1).sum(dim=1), want, rtol=0, atol=0)


def test_a_good_out_is_used_as_it_is_and_a_new_one_is_made_like_x():
    (_, _), (w13, _) = _pair("reference")
    _, ids = _routing(3)
    align = w13.device.moe_align(ids, 16, E, None, True)
    x = torch.randn(3, HIDDEN).half()
    out = torch.empty(3 * TOPK, INTER, dtype=torch.float16)
    assert w13.run(x, *align, TOPK, 16, out=out) is out
    new = w13.run(x, *align, TOPK, 16)
    assert (new.shape, new.dtype, new.device) == (out.shape, out.dtype, x.device)
    torch.testing.assert_close(new, out, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("x", "out", "message"),
    [
        (torch.zeros(3, HIDDEN), None, r"x is torch.float32, the layer's spec takes torch.float16"),
        (torch.zeros(3, HIDDEN + 1).half(), None, r"x has 65 features .* K=64"),
        (torch.zeros(1, 3, HIDDEN).half(), None, r"x must be \[M, K\]"),
        (None, torch.zeros(6, INTER), r"out must be a contiguous torch.float16 tensor of shape \(6, 32\)"),
        (None, torch.zeros(7, INTER).half(), r"out must be .* shape \(6, 32\), got torch.float16 \(7, 32\)"),
        (None, torch.zeros(INTER, 6).half().T, r"out must be a contiguous"),
    ],
)  # fmt: skip
def test_wrong_x_or_out_raises_naming_it_and_runs_nothing(x, out, message):
    (_, _), (w13, _) = _pair("reference")
    ran = []
    w13._calls = tuple((lambda **v: ran.append(v)) for _ in w13._calls)
    _, ids = _routing(3)
    align = w13.device.moe_align(ids, 16, E, None, True)
    x = torch.zeros(3, HIDDEN).half() if x is None else x
    with pytest.raises(ValueError, match=message):
        w13.run(x, *align, TOPK, 16, out=out)
    assert ran == []


def test_fused_moe_rows_refuses_a_wrong_out_before_aligning():
    device = BlockDevice()
    _, (w13, w2) = _pair(device)
    weights, ids = _routing(3)
    x = torch.randn(3, HIDDEN).half()
    for out in (torch.zeros(6, HIDDEN), torch.zeros(6, HIDDEN + 1).half()):
        with pytest.raises(ValueError, match=r"out must be a contiguous torch.float16 tensor"):
            fused_moe_rows(x, weights, ids, w13, w2, out=out)
    assert device.aligned == []
