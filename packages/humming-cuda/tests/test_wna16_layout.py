"""WnA16 weight layout on the CPU: the repack is lossless and decodes, the kernel's way, to the
reference weights."""

from __future__ import annotations

import pytest
import torch
from wna16_cases import FORMATS, make_spec

from humming_core.numerics import dequantize_weight, quantize_weight
from humming_core.spec import presets
from humming_core.testing.conformance import UNIT_ROUNDOFF as U
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16.layout import (
    Wna16Layout,
    pack_tiles,
    permute_columns,
    plane_widths,
    unpack_tiles,
)

pytestmark = pytest.mark.cpu


@pytest.mark.parametrize("bits", range(1, 9))
def test_tiles_round_trip(bits):
    codes = torch.randint(0, 1 << bits, (192, 80), generator=torch.Generator().manual_seed(bits))
    words = pack_tiles(codes, bits)
    assert words.shape == (3, 5, 32 * bits) and words.dtype == torch.int32
    assert torch.equal(unpack_tiles(words, bits), codes)


def test_fragment_position():
    # Code at n=9, k=3: lane 4*(9%8) + 3//2 = 5, n8 block j=1, pair 2j + 0 = 2, element 1 (odd k).
    # 4-bit plane: pair 2 is field 2 of word 0, its high element at bit 16 + 2*4 = 24.
    codes = torch.zeros(64, 16, dtype=torch.int64)
    codes[9, 3] = 7
    words = pack_tiles(codes, 4)[0, 0].view(32, 4)
    assert words.nonzero().tolist() == [[5, 0]]
    assert words[5, 0].item() == 7 << 24


def test_plane_widths_cover_every_bit():
    assert {b: plane_widths(b) for b in (3, 5, 6, 7)} == {
        3: [2, 1],
        5: [4, 1],
        6: [4, 2],
        7: [4, 2, 1],
    }
    assert all(sum(plane_widths(b)) == b for b in range(1, 9))


def test_permute_columns_gives_lane_order():
    cols = torch.arange(128).view(1, 128)
    perm = permute_columns(cols)[0]
    # Lane group g reads positions 8g..8g+7 of each 64-column tile: columns g, g+8, ..., g+56.
    assert perm[8 * 3 : 8 * 4].tolist() == [3 + 8 * j for j in range(8)]
    assert perm[64 + 8 : 64 + 16].tolist() == [64 + 1 + 8 * j for j in range(8)]


def _decode_packed(packed: dict, fmt: KernelFormat, cw) -> torch.Tensor:
    """The kernel's arithmetic in float64: codes from the tiles, per-column group params, scale."""
    codes = unpack_tiles(packed["qweight"], fmt.bits)[: cw.n, : cw.k].double()
    if fmt.kind == "float":
        from humming_core.numerics import canonical_table

        values = canonical_table(cw.spec.weight.dtype)[codes.long()].double()
    else:
        values = codes - (1 << (fmt.bits - 1) if fmt.kind == "int" else 0)
    n_pad = packed["qweight"].shape[0] * 64

    def unpermute(t):
        return permute_columns(t)[:, : cw.n].double().T  # the permutation is its own inverse

    if fmt.group > 0:
        per = min(fmt.group, 1 << 30)
        s = unpermute(packed["scales"]).repeat_interleave(per, dim=1)[:, : cw.k]
        if fmt.zero == "int":
            values = values - unpermute(packed["zeros"]).repeat_interleave(per, dim=1)[:, : cw.k]
        w = values * s
        if fmt.zero == "float":
            w = w - unpermute(packed["zeros"]).repeat_interleave(per, dim=1)[:, : cw.k]
    else:
        cs = packed["channel_scale"]
        w = values * (cs[: cw.n].double().view(-1, 1) if cs.numel() == n_pad else cs.double())
    if "global_scale" in packed:
        w = w * packed["global_scale"].double()
    return w


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f"{f[0]}-{f[1]}-{f[2][0]}")
@pytest.mark.parametrize("act", ["fp16", "bf16"])
def test_packed_weights_decode_to_reference(fmt, act):
    group = "channel" if fmt[0] in ("int8", "e4m3") else 32
    spec = make_spec(fmt, act, group, 200, bias=False, out=None, sdt=fmt[2][0])
    w = torch.randn(72, 200, generator=torch.Generator().manual_seed(7)) * 0.05
    cw = quantize_weight(w, spec)
    f = KernelFormat.from_spec(spec)
    packed = Wna16Layout(f).pack(cw, "cpu")
    assert packed["qweight"].shape == (2, 13, 32 * f.bits)
    got = _decode_packed(packed, f, cw)
    ref = dequantize_weight(cw).double()
    # Scales/zero points were rounded once to the act dtype: relative u per term.
    tol = 2 * U[act] * ref.abs() + 1e-12
    if f.zero == "float":
        tol = tol + 2 * U[act] * cw.zeros.float().abs().max().item()
    assert ((got - ref).abs() <= tol).all()


def test_layout_identity_is_shared_by_configs():
    fmt = KernelFormat.from_spec(presets.W4A16_G128)
    assert (
        Wna16Layout(fmt).identity
        == Wna16Layout(KernelFormat.from_spec(presets.W4A16_G128)).identity
    )
    assert (
        Wna16Layout(fmt).identity != Wna16Layout(KernelFormat.from_spec(presets.GPTQ_INT4)).identity
    )
