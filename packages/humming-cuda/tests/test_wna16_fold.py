"""The register-A wgmma kernel's folded float-code exponent bias (Wna16WgmmaRsKernel::FOLD), on
the CPU: the kernel's arithmetic emulated in bf16 gives every code times every allowed scale
exactly, the layout refuses the scales it could not, and the header and Python agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from humming_core.numerics.codec import decode
from humming_core.packing.bits import pack_k
from humming_core.spec import QuantSpec, ScaleSpec, WeightSpec, presets
from humming_core.spec.scalar import scalar
from humming_cuda.kernels.wna16.config import KernelFormat
from humming_cuda.kernels.wna16.layout import FOLD_DOWN, Wna16Layout, folded_scale_range

pytestmark = pytest.mark.cpu

HEADER = (
    Path(__file__).resolve().parents[1]
    / "src/humming_cuda/include/humming/kernel/wna16_wgmma_rs.cuh"
).read_text()

FLOATS = [("e2m1", 2, 1), ("e3m2", 3, 2), ("e2m3", 2, 3), ("e4m3", 4, 3), ("e5m2", 5, 2)]


def _bf16(bits: torch.Tensor) -> torch.Tensor:
    return bits.to(torch.int16).view(torch.bfloat16)


def _placed(codes: torch.Tensor, bits: int, mantissa: int) -> torch.Tensor:
    """Dequant::float_placed for one code per element: sign to bit 15, exponent|mantissa to the
    bf16 field's low end (value * 2^-float_shift)."""
    mag = codes & ((1 << (bits - 1)) - 1)
    sign = (codes >> (bits - 1)) & 1
    return _bf16((mag << (7 - mantissa)) | (sign << 15))


def test_the_header_folds_what_the_format_and_layout_say():
    assert f"static constexpr int FOLD_DOWN = {FOLD_DOWN};" in HEADER
    assert re.search(r"ActTraits<ActT>::kBias == 127 && Fmt::KIND == kWeightFloat", HEADER)
    assert KernelFormat.from_spec(presets.MXFP4).folds_float_bias
    fp16 = presets.MXFP4.model_copy(update={"act": presets.W4A16_G128.act})
    assert not KernelFormat.from_spec(fp16).folds_float_bias
    assert not KernelFormat.from_spec(presets.MXINT4).folds_float_bias


@pytest.mark.parametrize("name, exponent, mantissa", FLOATS)
def test_folded_products_are_the_weights_times_their_scales(name, exponent, mantissa):
    """placed(code) x (s x 2^(float_shift - FOLD_DOWN)) x 2^FOLD_DOWN, each step in bf16 as the
    kernel does it, equals bf16(value(code) x s) for every code and scales across the range."""
    bits = 1 + exponent + mantissa
    lo, hi = folded_scale_range(scalar(name))
    codes = torch.arange(1 << bits)
    values = decode(name, codes).float()
    float_shift = 127 - ((1 << (exponent - 1)) - 1)
    factor = torch.tensor(2.0 ** (float_shift - FOLD_DOWN), dtype=torch.bfloat16)
    scales = [lo, lo * 3, 2.0**-40 * 1.5, 2.0**-7, 1.0, 5.5, hi / 2 * 1.9921875]
    for s in torch.tensor(scales, dtype=torch.bfloat16):
        folded = s * factor
        assert torch.isfinite(folded)
        got = (_placed(codes, bits, mantissa) * folded).float() * 2.0**FOLD_DOWN
        want = (values * s.float()).to(torch.bfloat16).float()
        # inf / NaN codes (e4m3's, e5m2's) have no placement: no kernel maps them (as before)
        ok = ~torch.isfinite(values) | (got == want)
        assert ok.all(), f"scale {s.item()}: {values[~ok]} -> {got[~ok]} vs {want[~ok]}"


def _mxfp4_layer(e8m0: list[int], zero_groups: tuple[int, ...] = ()):
    from humming_core.packing.canonical import CanonicalWeight

    n, k = 64, 32 * len(e8m0)
    spec = QuantSpec(
        weight=WeightSpec(dtype="e2m1", scale=ScaleSpec(granularity="group", group_size=32,
                                                        dtype="e8m0")),
        act=presets.MXFP4.act,
    )  # fmt: skip
    codes = torch.randint(1, 8, (n, k), generator=torch.Generator().manual_seed(k))
    for g in zero_groups:
        codes[:, 32 * g : 32 * g + 32] = 8  # -0
    scales = torch.tensor(e8m0, dtype=torch.uint8).repeat(n, 1)
    return CanonicalWeight(spec=spec, n=n, k=k, qweight=pack_k(codes, 4), scales=scales)


def test_the_layout_takes_scales_inside_the_folded_range_and_names_the_others():
    layout = Wna16Layout(KernelFormat.from_spec(presets.MXFP4))
    lo, hi = folded_scale_range(scalar("e2m1"))
    assert (lo, hi) == (2.0**-109, 2.0**18)
    layout.pack(_mxfp4_layer([127 - 109, 127, 127 + 17]), "cpu")  # 2^-109, 1, 2^17
    for e in (127 - 110, 127 + 18):
        with pytest.raises(ValueError, match=r"64 weight scale\(s\) from .*: rescale the layer"):
            layout.pack(_mxfp4_layer([127, e]), "cpu")


def test_zero_groups_take_any_scale_packed_as_one_where_it_overflows_the_fold():
    """Quantizers give an all-zero group the smallest e8m0 scale (2^-127); MX checkpoints may give
    it any: its weights are zero whatever the scale, so the layout takes it, and packs one the
    fold would overflow (0 x inf = NaN) as 1. Others stay."""
    layout = Wna16Layout(KernelFormat.from_spec(presets.MXFP4))
    tiny = layout.pack(_mxfp4_layer([127, 0], zero_groups=(1,)), "cpu")["scales"]
    assert set(tiny.float().unique().tolist()) == {1.0, 2.0**-127}
    for e in (127 + 18, 254):
        packed = layout.pack(_mxfp4_layer([127, e, 127 - 3], zero_groups=(1,)), "cpu")
        want = layout.pack(_mxfp4_layer([127, 127, 127 - 3], zero_groups=(1,)), "cpu")
        assert torch.equal(packed["scales"], want["scales"])
    kept = layout.pack(_mxfp4_layer([127, 127 - 5], zero_groups=(1,)), "cpu")["scales"]
    assert set(kept.float().unique().tolist()) == {1.0, 2.0**-5}
    with pytest.raises(ValueError, match="rescale the layer"):
        layout.pack(_mxfp4_layer([127, 127 + 18], zero_groups=(0,)), "cpu")
