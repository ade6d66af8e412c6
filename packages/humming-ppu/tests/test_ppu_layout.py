"""The PPU WnA16 layout (CPU): exactly the NVIDIA layout of the weights with rows permuted within
every 8 ([0,2,4,6,1,3,5,7]) in the weights, zero points and in-loop scales, and nothing else moved."""

from __future__ import annotations

import pytest
import torch
from wna16_cases import FORMATS, make_spec

from humming_core.numerics import quantize_weight
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16.layout import Wna16Layout, permute_columns, unpack_tiles
from humming_ppu.dialect import B_ROW_PERM, unpermute_rows
from humming_ppu.layout import PpuWna16Layout

pytestmark = pytest.mark.cpu
N, K = 200, 256  # N not a multiple of 64: padded columns must stay zero-filled


def _row_major(name: str, tensor: torch.Tensor, bits: int) -> torch.Tensor:
    """A packed tensor as (N, ...) in stored row order (undoing the tiles or the lane order)."""
    if name == "qweight":
        return unpack_tiles(tensor, bits)[:N]
    return permute_columns(tensor)[:, :N].t()  # the lane-order swap is its own inverse


def _pack_both(fmt, act, group, sdt):
    spec = make_spec(fmt, act, group, K, bias=True, out=None, sdt=sdt)
    gen = torch.Generator().manual_seed(7)
    cw = quantize_weight(torch.randn(N, K, generator=gen) * 0.05, spec, bias=torch.randn(N))
    inner = Wna16Layout(KernelFormat.from_spec(spec))
    return spec, inner.pack(cw, "cpu"), PpuWna16Layout(inner).pack(cw, "cpu")


@pytest.mark.parametrize("fmt", FORMATS, ids=[f"{f[0]}-z{f[1]}-{f[2][-1]}" for f in FORMATS])
@pytest.mark.parametrize("group", [64, "channel"])
def test_ppu_layout_is_the_nvidia_layout_with_rows_permuted(fmt, group):
    spec, nvidia, ppu = _pack_both(fmt, "bf16", group, fmt[2][-1])
    bits = spec.weight.dtype.bits
    assert nvidia.keys() == ppu.keys()
    for name in nvidia:
        if name in ("qweight", "scales", "zeros"):
            stored = _row_major(name, ppu[name], bits)
            assert torch.equal(unpermute_rows(stored, 0), _row_major(name, nvidia[name], bits)), (
                name
            )
            pad = permute_columns(ppu[name])[:, N:] if name != "qweight" else None
            assert pad is None or not pad.any(), f"{name}: padding columns not zero"
        else:  # epilogue scales, global scale, bias index output columns: unchanged
            assert torch.equal(ppu[name], nvidia[name]), name


def test_stored_row_j_holds_canonical_row_perm_j():
    _, nvidia, ppu = _pack_both(("uint4", "int", ("fp16",), None, False), "fp16", 64, "fp16")
    stored = _row_major("qweight", ppu["qweight"], 4)
    natural = _row_major("qweight", nvidia["qweight"], 4)
    for j, src in enumerate(B_ROW_PERM):
        assert torch.equal(stored[8 + j], natural[8 + src])
    zs, zn = _row_major("zeros", ppu["zeros"], 4), _row_major("zeros", nvidia["zeros"], 4)
    assert torch.equal(zs[8:16], zn[[8 + p for p in B_ROW_PERM]])


def test_identity_differs_from_the_nvidia_layout():
    inner = Wna16Layout(
        KernelFormat.from_spec(make_spec(FORMATS[0], "fp16", 64, K, False, None, "fp16"))
    )
    assert PpuWna16Layout(inner).identity != inner.identity


def test_n_not_a_multiple_of_8_is_rejected():
    spec = make_spec(FORMATS[0], "fp16", 64, K, bias=False, out=None, sdt="fp16")
    cw = quantize_weight(torch.randn(20, K) * 0.05, spec)
    layout = PpuWna16Layout(Wna16Layout(KernelFormat.from_spec(spec)))
    with pytest.raises(ValueError, match="multiple of 8"):
        layout.pack(cw, "cpu")


# ---- W8A8 / W4A8 (int8 activations) -------------------------------------------------------------
def _pack_w8a8(spec, n=N, k=K):
    from humming_cuda.kernels.w8a8 import W8a8Layout
    from humming_cuda.kernels.w8a8.config import W8a8Format
    from humming_ppu.layout import PpuW8a8Layout

    gen = torch.Generator().manual_seed(11)
    bias = torch.randn(n) if spec.epilogue.bias else None
    cw = quantize_weight(torch.randn(n, k, generator=gen) * 0.05, spec, bias=bias)
    inner = W8a8Layout(W8a8Format.from_spec(spec))
    return inner.pack(cw, "cpu"), PpuW8a8Layout(inner), cw


@pytest.mark.parametrize(
    "fmt",
    [
        ("int8", "token", "channel"),
        ("int8", "static", "tensor"),
        ("int8", "group", "block"),
        ("int4", "int8", "token", 128, "fp16"),
        ("uint4", "int8", "static", 32, "fp32"),
    ],
    ids=["w8-channel", "w8-tensor", "w8-block", "w4-g128", "u4-zero-g32"],
)
def test_ppu_w8a8_layout_permutes_weight_rows_and_zero_points_only(fmt):
    import w8a8_cases

    make = w8a8_cases.make_spec if len(fmt) == 3 else w8a8_cases.make_w4_spec
    spec = make(*fmt, bias=True, out="bf16")
    nvidia, layout, cw = _pack_w8a8(spec)
    ppu = layout.pack(cw, "cpu")
    assert nvidia.keys() == ppu.keys() and not layout.scales_before_mma
    # qweight: [N, K] codes or [N, KW] nibble words, one row per output channel
    assert torch.equal(unpermute_rows(ppu["qweight"], 0), nvidia["qweight"])
    assert not torch.equal(ppu["qweight"], nvidia["qweight"])
    if "zeros" in ppu:  # [groups, N]: subtracted from the codes before the MMA
        assert torch.equal(unpermute_rows(ppu["zeros"], 1), nvidia["zeros"])
    for name in ("weight_scale", "bias"):  # applied after the MMA, by output column
        assert torch.equal(ppu[name], nvidia[name]), name


def test_ppu_w8a8_stored_row_j_holds_canonical_row_perm_j():
    from humming_core.spec import presets

    nvidia, layout, cw = _pack_w8a8(presets.W8A8_INT8, n=16)
    ppu = layout.pack(cw, "cpu")
    for j, src in enumerate(B_ROW_PERM):
        assert torch.equal(ppu["qweight"][8 + j], nvidia["qweight"][8 + src])
    assert layout.identity != layout.inner.identity


def test_ppu_w8a8_n_not_a_multiple_of_8_is_rejected():
    from humming_core.spec import presets

    _, layout, cw = _pack_w8a8(presets.W8A8_INT8, n=20)
    with pytest.raises(ValueError, match="multiple of 8"):
        layout.pack(cw, "cpu")
