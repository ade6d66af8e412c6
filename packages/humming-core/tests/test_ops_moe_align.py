"""ops.moe_align and fused_moe ask the layer's device for its routing alignment (SupportsMoeAlign)
and fall back to the reference numerics only for a device without one."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import SupportsMoeAlign, get_device
from humming_core.device.reference import ReferenceDevice
from humming_core.numerics import quantize_weight
from humming_core.numerics.moe import moe_align as reference_align
from humming_core.numerics.moe import reference_fused_moe
from humming_core.ops import PreparedMoe, fused_moe, moe_align
from humming_core.spec import W4A16_G128


class RecordingDevice(ReferenceDevice):
    """The reference device, remembering every alignment it was asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.zero_rows: list = []  # the zero_rows keyword of each call

    def moe_align(self, topk_ids, block_size, num_experts, *args, zero_rows=None):
        self.calls.append((tuple(topk_ids.shape), block_size, num_experts, *args))
        self.zero_rows.append(zero_rows)
        return super().moe_align(topk_ids, block_size, num_experts, *args, zero_rows=zero_rows)


class NoAlignDevice:
    name = "bare"


class DisabledAlignDevice(RecordingDevice):
    """A device whose alignment step is switched off (None): not a SupportsMoeAlign."""

    moe_align = None


def _ids(m: int, e: int, topk: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randperm(e, generator=g)[:topk] for _ in range(m)]).int()


def test_reference_device_implements_the_optional_step():
    assert isinstance(get_device("reference"), SupportsMoeAlign)
    assert not isinstance(NoAlignDevice(), SupportsMoeAlign)
    assert not isinstance(DisabledAlignDevice(), SupportsMoeAlign)


def test_ops_moe_align_uses_the_device_or_falls_back():
    ids = _ids(9, 12, 3, 0)
    emap = torch.tensor([-1, 0, 1, -1, 2, 3, -1, 4, 5, -1, 6, 7], dtype=torch.int32)
    want = reference_align(ids, 4, 12, emap, True, True)
    dev = RecordingDevice()
    for device in (dev, NoAlignDevice(), DisabledAlignDevice(), "reference"):
        got = moe_align(ids, 4, 12, emap, True, True, device=device)
        for g, w in zip(got, want, strict=True):
            assert torch.equal(g, w)
    assert dev.calls == [((9, 3), 4, 12, emap, True, True)]


def test_reference_align_zeroes_the_rows_of_dropped_entries_only():
    ids = _ids(9, 12, 3, 2)
    ids[0, 1], ids[4, 2] = -1, 12  # out of range: dropped whatever the map
    emap = torch.tensor([-1, 0, 1, -1, 2, 3, -1, 4, 5, -1, 6, 7], dtype=torch.int32)
    rows = torch.full((27, 5), 7.0, dtype=torch.bfloat16)
    reference_align(ids, 4, 12, emap, True, zero_rows=rows)
    flat = ids.reshape(-1).long()
    dropped = (flat < 0) | (flat >= 12)
    dropped |= emap[flat.clamp(0, 11)] < 0
    assert dropped.sum() > 2
    assert (rows[dropped] == 0).all() and (rows[~dropped] == 7).all()


def _moe_pair(e: int, hidden: int, inter: int):
    w13 = quantize_weight(
        torch.randn(e, 2 * inter, hidden) * 0.1,
        W4A16_G128.replace(layout="moe", epilogue={"glu": "silu_mul"}),
    )
    w2_spec = W4A16_G128.replace(
        layout="moe", weight={"dtype": "int4", "scale": {"granularity": "group", "group_size": 32}}
    )
    return w13, quantize_weight(torch.randn(e, hidden, inter) * 0.1, w2_spec)


@pytest.mark.parametrize("expert_parallel", [False, True])
def test_fused_moe_rows_zeroes_the_rows_of_dropped_entries(expert_parallel):
    """A poisoned `out` comes back with no poison left: the rows of dropped entries are zeros,
    by the first alignment's zero_rows without an expert map (out-of-range ids) and by a fill of
    the output with one (non-local experts)."""
    from humming_core.ops import fused_moe_rows

    e, hidden, inter, m, topk = 6, 64, 32, 5, 2
    w13, w2 = _moe_pair(e, hidden, inter)
    ids = _ids(m, 2 * e, topk, 3) // (2 if not expert_parallel else 1)
    ids[1, 0], ids[3, 1] = -1, 2 * e  # out of range
    emap = None
    if expert_parallel:
        emap = torch.full((2 * e,), -1, dtype=torch.int32)
        emap[::2] = torch.arange(e, dtype=torch.int32)
    weights, x = torch.rand(m, topk), torch.randn(m, hidden).to(torch.float16)
    dev = RecordingDevice()
    out = torch.full((m * topk, hidden), float("nan"), dtype=torch.float16)
    fused_moe_rows(x, weights, ids, PreparedMoe(w13, dev), PreparedMoe(w2, dev), emap, out=out)
    assert all(z is None for z in dev.zero_rows[1:])
    assert (dev.zero_rows[0] is None) == expert_parallel
    if not expert_parallel:
        assert dev.zero_rows[0].data_ptr() == out.data_ptr()
    flat = ids.reshape(-1).long()
    dropped = (flat < 0) | (flat >= (2 * e if expert_parallel else e))
    if expert_parallel:
        dropped |= emap[flat.clamp(0, 2 * e - 1)] < 0
    assert dropped.sum() >= 2 and (out[dropped] == 0).all() and not out.isnan().any()


def test_fused_moe_aligns_on_the_layer_device_dropping_non_local_experts():
    e, hidden, inter, m, topk = 6, 64, 32, 5, 2
    w13 = quantize_weight(
        torch.randn(e, 2 * inter, hidden) * 0.1,
        W4A16_G128.replace(layout="moe", epilogue={"glu": "silu_mul"}),
    )
    w2_spec = W4A16_G128.replace(
        layout="moe", weight={"dtype": "int4", "scale": {"granularity": "group", "group_size": 32}}
    )
    w2 = quantize_weight(torch.randn(e, hidden, inter) * 0.1, w2_spec)
    global_e = 2 * e
    ids = _ids(m, global_e, topk, 1)
    emap = torch.full((global_e,), -1, dtype=torch.int32)
    emap[::2] = torch.arange(e, dtype=torch.int32)
    weights = torch.rand(m, topk)
    x = torch.randn(m, hidden).to(torch.float16)
    dev = RecordingDevice()
    out = fused_moe(x, weights, ids, PreparedMoe(w13, dev), PreparedMoe(w2, dev), emap)
    assert [c[2:] for c in dev.calls] == [(global_e, emap, True, False)]
    ref = reference_fused_moe(x, weights, ids, w13, w2, expert_map=emap)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_fused_moe_rows_tells_w2_its_routing_is_ready_and_w13_not():
    """w2's routing was aligned before w13 ran (one block size): a call that can overlap the
    previous kernel (overlaps_routing) is told so; w13, right after its alignment, is not."""
    from humming_core.ops import fused_moe_rows

    class Spy:
        overlaps_routing = True

        def __init__(self, call, seen):
            self.call, self.seen = call, seen

        def __call__(self, routing_ready=False, **values):
            self.seen.append(routing_ready)
            return self.call(**values)

    e, hidden, inter, m, topk = 6, 64, 32, 5, 2
    w13, w2 = _moe_pair(e, hidden, inter)
    layers, seen = [], {"w13": [], "w2": []}
    for name, cw in (("w13", w13), ("w2", w2)):
        layer = PreparedMoe(cw, "reference")
        layer._calls = tuple(Spy(c, seen[name]) for c in layer._calls)
        layers.append(layer)
    ids, weights = _ids(m, e, topk, 4), torch.rand(m, topk)
    x = torch.randn(m, hidden).to(torch.float16)
    got = fused_moe_rows(x, weights, ids, *layers)
    assert seen == {"w13": [False], "w2": [True]}
    want = fused_moe_rows(
        x, weights, ids, PreparedMoe(w13, "reference"), PreparedMoe(w2, "reference")
    )
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_moe_layers_get_kernels_past_the_dense_buckets():
    """Routed rows (M * top_k) outgrow the dense buckets: a MoE layer builds a config for every
    MOE_BUCKETS entry and runs 16384 rows on the 16384 bucket's, anything larger on the last."""
    from humming_core.ops import M_BUCKETS, MOE_BUCKETS, moe_bucket_of

    assert MOE_BUCKETS[: len(M_BUCKETS)] == M_BUCKETS and MOE_BUCKETS[-1] == 65536
    assert moe_bucket_of(8193) == 16384 and moe_bucket_of(65536) == 65536
    assert moe_bucket_of(10**6) == 65536
    w13, _ = _moe_pair(4, 64, 32)
    layer = PreparedMoe(w13, "reference")
    assert sorted(layer.configs) == list(MOE_BUCKETS)
    seen = []
    # _calls: one per bucket in order, the last again for rows past it (PreparedMoe._bind_calls)
    buckets = (*layer._buckets, layer._buckets[-1])
    layer._calls = tuple((lambda b=b, **_: seen.append(b)) for b in buckets)
    x = torch.zeros(2048, 64, dtype=torch.float16)
    ids = torch.zeros(2048 * 8, dtype=torch.int32)
    layer.run(x, ids, ids[:1], ids[:1], top_k=8, block_size=16, zero_unrouted=False)
    assert seen == [16384]
