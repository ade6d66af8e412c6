"""ops.grouped_gemm / grouped_rows: the grouped layouts through the indexed MoE path, on the
reference device, against numerics.reference_grouped_gemm and numerics.moe_align."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import get_device
from humming_core.numerics import quantize_weight, reference_grouped_gemm
from humming_core.numerics.moe import moe_align
from humming_core.ops import PreparedMoe, grouped_gemm, grouped_rows
from humming_core.spec import W4A16_G128, W8A8_INT8

REF = get_device("reference")


def _per_row_ids(starts: list[int], counts: list[int], rows: int) -> torch.Tensor:
    """The expert of every row ([rows, 1], -1 outside every group): what moe_align would route."""
    ids = torch.full((rows, 1), -1, dtype=torch.int32)
    for e, (s, c) in enumerate(zip(starts, counts, strict=True)):
        ids[s : s + c] = e
    return ids


@pytest.mark.parametrize(
    ("starts", "counts", "rows", "block"),
    [
        ([0, 3, 3], [3, 0, 5], 9, 4),  # an empty expert, a padding row at the end
        ([2, 10, 11], [7, 1, 20], 40, 16),  # rows before, between and after the groups
        ([0, 1, 2, 3, 4, 5], [1, 1, 1, 0, 0, 0], 3, 8),  # fewer rows than experts
        ([0, 5], [5, 0], 5, 1),
        ([0, 64, 128, 192], [64, 64, 64, 64], 256, 64),  # exact blocks
        ([0, 0], [0, 0], 4, 16),  # nothing to compute
    ],
)
def test_grouped_rows_is_moe_align_of_the_per_row_experts(starts, counts, rows, block):
    got = grouped_rows(torch.tensor(starts), torch.tensor(counts), rows, block)
    want = moe_align(_per_row_ids(starts, counts, rows), block, len(counts), pad_sorted_ids=True)
    for name, g, w in zip(("sorted ids", "expert ids", "post padded"), got, want, strict=True):
        assert g.dtype == torch.int32, name
        assert torch.equal(g, w), f"{name}: {g.tolist()} != {w.tolist()}"


def _layer(preset, e=3, n=48, k=128, seed=0):
    g = torch.Generator().manual_seed(seed)
    cw = quantize_weight(torch.randn(e, n, k, generator=g) * 0.1, preset.replace(layout="moe"))
    return cw, PreparedMoe(cw, REF)


@pytest.mark.parametrize("preset", [W4A16_G128, W8A8_INT8], ids=["w4a16", "w8a8_int8"])
def test_contiguous_layout_matches_the_reference(preset):
    cw, layer = _layer(preset)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(41, cw.k, generator=g).to(torch.float16)
    x[40] = 1e4  # a row outside every group: must neither be computed nor move anything
    for bounds in ([0, 17, 17, 40], [3, 3, 30, 31], [0, 0, 0, 0]):
        offsets = torch.tensor(bounds)
        out = grouped_gemm(x, layer, offsets=offsets)
        ref = reference_grouped_gemm(x, cw, offsets=offsets)
        assert out.shape == ref.shape == (41, cw.n)
        torch.testing.assert_close(out, ref, rtol=0, atol=0)


@pytest.mark.parametrize("preset", [W4A16_G128, W8A8_INT8], ids=["w4a16", "w8a8_int8"])
def test_masked_layout_matches_the_reference(preset):
    cw, layer = _layer(preset, seed=2)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 20, cw.k, generator=g).to(torch.float16)
    counts = torch.tensor([20, 7, 0])
    x[1, 7:] = 1e4  # rows past a count are padding
    out = grouped_gemm(x, layer, counts=counts)
    ref = reference_grouped_gemm(x, cw, counts=counts)
    assert out.shape == (3, 20, cw.n)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert (out[1, 7:] == 0).all() and (out[2] == 0).all()


def test_out_receives_the_result():
    cw, layer = _layer(W4A16_G128)
    x = torch.randn(3, 5, cw.k).to(torch.float16)
    out = torch.zeros(3, 5, cw.n, dtype=torch.float16)
    got = grouped_gemm(x, layer, counts=torch.tensor([5, 1, 2]), out=out)
    assert got.data_ptr() == out.data_ptr()
    torch.testing.assert_close(out, reference_grouped_gemm(x, cw, counts=torch.tensor([5, 1, 2])))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"offsets": torch.tensor([0, 5, 3, 8])}, "non-decreasing"),
        ({"offsets": torch.tensor([0, 5, 6, 9])}, "within \\[0, 8\\]"),
        ({"offsets": torch.tensor([-1, 5, 6, 8])}, "non-decreasing"),
        ({"offsets": torch.tensor([0, 5, 8])}, "expected E\\+1 = 4"),
        ({}, "pass either"),
        ({"offsets": torch.tensor([0, 1, 2, 3]), "counts": torch.tensor([1, 1, 1])}, "pass either"),
    ],
)
def test_bad_contiguous_layouts_are_refused(kwargs, words):
    cw, layer = _layer(W4A16_G128)
    with pytest.raises(ValueError, match=words):
        grouped_gemm(torch.randn(8, cw.k).to(torch.float16), layer, **kwargs)


@pytest.mark.parametrize(
    ("shape", "counts", "words"),
    [
        ((3, 4), [5, 0, 0], "counts must lie in \\[0, 4\\]"),
        ((3, 4), [1, -1, 0], "counts must lie"),
        ((2, 4), [1, 1], "x has 2 expert slices"),
        ((3, 4), [1, 1], "counts 2 entries"),
    ],
)
def test_bad_masked_layouts_are_refused(shape, counts, words):
    cw, layer = _layer(W4A16_G128)
    x = torch.randn(*shape, cw.k).to(torch.float16)
    with pytest.raises(ValueError, match=words):
        grouped_gemm(x, layer, counts=torch.tensor(counts))
