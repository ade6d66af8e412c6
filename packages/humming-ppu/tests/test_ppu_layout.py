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
