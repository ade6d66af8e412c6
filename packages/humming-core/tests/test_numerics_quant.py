"""Weight quantization: error within the format's half step, scales exact in their dtype, MX and
NVFP4 scale rules, zero points, partial groups, MoE.

Error bounds, per element, with s the element's effective scale (scale x global scale) and x = w / s
the weight in element units. Weight scales are rounded *up* to their dtype, so the tile's amax maps
at or below the element max (up to float32 rounding of x itself):
- symmetric integers: |x - q| <= 1/2.
- symmetric floats: half the grid spacing at |x|, 2^(max(floor(log2|x|), emin) - m - 1).
- MX (e8m0): X = floor(log2 amax) - emax puts amax / 2^X in [2^emax, 2^(emax+1)), so elements above
  the max clamp to it (error |x| - max), as the OCP spec prescribes; the rest are within the half
  step as above.
- integer zero points: codes u and zero z on [0, 2^b - 1], z = round(-lo / s): lo maps to within
  1/2 of code 0 and, as s >= (hi - lo) / (2^b - 1), hi to within 1/2 of the top: |x + z - u| <= 1/2.
- float zero points: the same, plus the offset's own rounding |z| * d (d = 2^-11 fp16, 2^-8 bf16,
  2^-24 fp32), in weight units.
Each bound gets a float32 slack of 1e-5 element units for computing x itself.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from humming_core.numerics.blocks import tile_of
from humming_core.numerics.codec import canonical_table, decode, encode
from humming_core.numerics.quant import dequantize_weight, quantize_weight
from humming_core.numerics.scalar import code_table
from humming_core.numerics.scales import round_scale, scale_values
from humming_core.packing.bits import unpack_k, unpack_n
from humming_core.spec import QuantSpec, ScaleSpec, WeightSpec, presets, scalar

_TORCH_SCALE = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
_REL = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8, "ue4m3": 2.0**-4, "e8m0": 0.0}


def _expand(grid: torch.Tensor, n: int, k: int, tile: tuple[int, int]) -> torch.Tensor:
    return grid.repeat_interleave(tile[0], -2)[..., :n, :].repeat_interleave(tile[1], -1)[..., :k]


def _effective_scale(cw) -> torch.Tensor:
    ws = cw.spec.weight
    s = _expand(
        scale_values(cw.scales, ws.scale.dtype).double(), cw.n, cw.k, tile_of(ws.scale, cw.n, cw.k)
    )
    if ws.global_scale:
        s = s * cw.global_scale.double().reshape(*s.shape[:-2], 1, 1)
    return s


def _half_step(t, x: torch.Tensor) -> torch.Tensor:
    """Half the element grid spacing at |x| (float element types), capped at the top binade."""
    top = float(t.max_value)
    e = torch.floor(torch.log2(x.abs().clamp(min=2.0 ** (1 - t.bias), max=top)))
    return torch.exp2(e - t.mantissa - 1)


def _check_error_bound(w: torch.Tensor, cw) -> None:
    ws = cw.spec.weight
    s = _effective_scale(cw)
    deq = dequantize_weight(cw).double()
    codes = unpack_k(cw.qweight, ws.dtype.bits, cw.k).long()
    d = _REL[ws.scale.dtype.name]
    slack = 1e-5
    ok = s > 0
    if ws.zero_point != "none":
        tile = tile_of(ws.scale, cw.n, cw.k)
        bound = s * (0.5 + slack)
        if ws.zero_point == "float":
            g = cw.global_scale.double().reshape(*s.shape[:-2], 1, 1) if ws.global_scale else 1.0
            bound = bound + _expand(cw.zeros.double(), cw.n, cw.k, tile).abs() * d * g
        else:
            z = unpack_n(cw.zeros, ws.dtype.bits, cw.n)
            assert ((z >= 0) & (z < 1 << ws.dtype.bits)).all()
        excess = ((deq - w.double()).abs() - bound)[ok]
        assert (excess <= 1e-30).all(), f"max excess {excess.max().item()}"
        return
    x = torch.where(ok, w.double() / torch.where(ok, s, 1.0), 0.0)
    v = canonical_table(ws.dtype).double()[codes]
    err = (x - v).abs()
    elem = ws.dtype
    bound = torch.full_like(x, 0.5) if elem.is_integer else _half_step(elem, x)
    over = (x.abs() - float(elem.max_value)).clamp(min=0.0)
    if ws.scale.dtype.name != "e8m0":
        assert (over <= float(elem.max_value) * 2.0**-20)[ok].all(), (
            "amax must map to the element max"
        )
    bound = torch.maximum(bound, over) + slack * x.abs().clamp(min=1.0)
    assert (err <= bound)[ok].all(), f"max excess {(err - bound)[ok].max().item()}"
    # all-zero tiles (scale 0) reproduce zeros
    assert (deq[~ok] == 0).all()


def _check_exact_dequant(cw) -> None:
    """Dequantized weights are exactly the stored scale times the element value (rounded once)."""
    ws = cw.spec.weight
    if ws.zero_point != "none":
        return
    codes = unpack_k(cw.qweight, ws.dtype.bits, cw.k).long()
    v = canonical_table(ws.dtype).double()[codes]
    expected = (_effective_scale(cw) * v).float()
    assert torch.equal(dequantize_weight(cw), expected)


def _scale_is_exact_in_dtype(cw) -> None:
    ws = cw.spec.weight
    values = scale_values(cw.scales, ws.scale.dtype)
    name = ws.scale.dtype.name
    if name == "e8m0":
        assert cw.scales.dtype == torch.uint8
        assert torch.equal(values, torch.exp2(cw.scales.float() - 127))
    elif name == "ue4m3":
        assert cw.scales.dtype == torch.float8_e4m3fn
        assert torch.equal(decode("ue4m3", encode("ue4m3", values)), values)
    else:
        assert torch.equal(values.to(scalar(name).torch_dtype()).float(), values)
    assert torch.isfinite(values).all() and (values >= 0).all()


ELEMENTS = ["int2", "int3", "int4", "int5", "int8", "e2m1", "e2m3", "e3m2", "e4m3", "e5m2"]
GRANULARITIES = [
    {"granularity": "tensor"},
    {"granularity": "channel"},
    {"granularity": "group", "group_size": 16},
    {"granularity": "group", "group_size": 32},
    {"granularity": "group", "group_size": 128},
    {"granularity": "block", "block": (16, 32)},
    {"granularity": "block", "block": (32, 16)},
]


@st.composite
def weights(draw, max_n: int = 48, max_k: int = 200):
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, max_k))
    experts = draw(st.sampled_from([None, 2]))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    shape = (n, k) if experts is None else (experts, n, k)
    magnitude = 10.0 ** draw(st.integers(-3, 3))
    w = torch.randn(shape, generator=g) * magnitude
    if draw(st.booleans()):  # outliers and a zero row
        w.view(-1)[:: max(1, w.numel() // 5)] *= 30.0
        w[..., 0, :] = 0.0
    return w


def _quantize_or_refused(w: torch.Tensor, ws: WeightSpec):
    """quantize_weight, or None when it refused weights too large for the scale dtype.

    Only such weights may be refused, and loudly: a scale or offset can exceed the dtype's max only
    when max|w| is within 2^8 of it (scales are at least max|w| / 2^8 with 8-bit codes).
    """
    try:
        return quantize_weight(w, ws)
    except ValueError as exc:
        assert "does not fit scale dtype" in str(exc)
        limit = torch.finfo(getattr(torch, _TORCH_SCALE[ws.scale.dtype.name])).max
        assert w.abs().max().item() > limit / 2**8
        return None


@settings(max_examples=120, deadline=None)
@given(
    w=weights(),
    elem=st.sampled_from(ELEMENTS),
    gran=st.sampled_from(GRANULARITIES),
    sdtype=st.sampled_from(["fp32", "fp16", "bf16"]),
)
def test_symmetric_error_within_half_step(w, elem, gran, sdtype):
    ws = WeightSpec(dtype=elem, scale=ScaleSpec(dtype=sdtype, **gran))
    cw = _quantize_or_refused(w, ws)
    if cw is None:
        return
    _scale_is_exact_in_dtype(cw)
    _check_exact_dequant(cw)
    _check_error_bound(w, cw)


@settings(max_examples=80, deadline=None)
@given(
    w=weights(),
    elem=st.sampled_from(["uint2", "uint3", "uint4", "uint8", "int4"]),
    gran=st.sampled_from(GRANULARITIES[1:5]),
    sdtype=st.sampled_from(["fp32", "fp16", "bf16"]),
    zp=st.sampled_from(["int", "float"]),
    gscale=st.booleans(),
)
def test_zero_point_error_within_half_step(w, elem, gran, sdtype, zp, gscale):
    gscale = gscale and gran["granularity"] == "group"
    ws = WeightSpec(
        dtype=elem, scale=ScaleSpec(dtype=sdtype, **gran), zero_point=zp, global_scale=gscale
    )
    cw = _quantize_or_refused(w, ws)
    if cw is None:
        return
    _scale_is_exact_in_dtype(cw)
    _check_error_bound(w, cw)


@settings(max_examples=60, deadline=None)
@given(
    w=weights(max_k=160),
    elem=st.sampled_from(["e2m1", "e2m3", "e3m2", "e4m3", "e5m2", "int4", "int8"]),
)
def test_mx_error_within_half_step_or_clamp(w, elem):
    ws = WeightSpec(dtype=elem, scale=ScaleSpec(granularity="group", group_size=32, dtype="e8m0"))
    cw = quantize_weight(w, ws)
    _scale_is_exact_in_dtype(cw)
    _check_exact_dequant(cw)
    _check_error_bound(w, cw)


@settings(max_examples=60, deadline=None)
@given(w=weights(max_k=160))
def test_nvfp4_error_within_half_step(w):
    cw = quantize_weight(w, presets.NVFP4.weight)
    _scale_is_exact_in_dtype(cw)
    _check_exact_dequant(cw)
    _check_error_bound(w, cw)


def test_mx_scale_follows_the_ocp_rule():
    # one row, three groups of 32 with amax 5.0, 7.9 and 0.1 (element e2m1: emax = 2)
    w = torch.zeros(1, 96)
    w[0, 0], w[0, 1] = 5.0, -2.4
    w[0, 32] = 7.9
    w[0, 64] = 0.1
    cw = quantize_weight(w, presets.MXFP4)
    # X = floor(log2 amax) - 2: 0, 0, -6 (log2 0.1 = -3.3 -> -4)
    assert cw.scales.tolist() == [[127, 127, 121]]
    deq = dequantize_weight(cw)
    assert deq[0, 0] == 4.0  # 5.0 ties between 4 and 6: the even mantissa wins
    assert deq[0, 1] == -2.0  # 2.4 -> 2
    assert deq[0, 32] == 6.0  # 7.9 exceeds the e2m1 max after scaling: clamped, as the spec says
    assert deq[0, 64] == 6.0 * 2.0**-6  # 0.1 / 2^-6 = 6.4 -> 6


def test_mxint4_uses_the_integer_range():
    cw = quantize_weight(torch.tensor([[100.0] + [0.0] * 31]), presets.MXINT4)
    assert cw.scales.item() == 127 + 6 - 2  # floor(log2 100) = 6, int4 emax = floor(log2 7) = 2
    assert dequantize_weight(cw)[0, 0].item() == 96.0  # 100 / 16 = 6.25 -> 6


def test_nvfp4_scales_follow_modelopt():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 64, generator=g)
    cw = quantize_weight(w, presets.NVFP4)
    amax = w.abs().max()
    assert torch.equal(cw.global_scale, (amax / (448.0 * 6.0)).reshape(1))
    s = scale_values(cw.scales, scalar("ue4m3"))
    target = (w.reshape(8, 4, 16).abs().amax(-1) / 6.0) / cw.global_scale
    grid = torch.tensor(sorted(v for v in code_table(scalar("ue4m3")) if math.isfinite(v)))
    expected = grid[torch.searchsorted(grid, target).clamp(max=grid.numel() - 1)]  # rounded up
    assert torch.equal(s, expected)
    assert s.max() == 448.0  # the block holding the tensor's amax uses the top of the ue4m3 range


def test_scales_round_up_so_coarse_scales_do_not_clamp():
    # 0.1541 / 57344 is a subnormal fp16 scale: rounded to nearest it would fall ~10% short and
    # clamp the largest element; rounded up, the largest element stays within half a step.
    w = torch.tensor([[0.1541, -0.05, 0.0]])
    ws = WeightSpec(dtype="e5m2", scale=ScaleSpec(granularity="tensor", dtype="fp16"))
    cw = quantize_weight(w, ws)
    assert cw.scales.float().item() >= 0.1541 / 57344
    _check_error_bound(w, cw)
    assert dequantize_weight(cw)[0, 0].item() == pytest.approx(0.1541, rel=0.125)


def test_int_zero_points_match_a_gptq_style_hand_computation():
    w = torch.tensor([[-1.0, 0.0, 0.5, 2.0] * 4])  # one group of 16
    spec = WeightSpec(
        dtype="uint4",
        scale=ScaleSpec(granularity="group", group_size=16, dtype="fp32"),
        zero_point="int",
    )
    cw = quantize_weight(w, spec)
    assert cw.scales.item() == pytest.approx(3.0 / 15.0, rel=1e-7)
    z = round(1.0 / cw.scales.item())  # 5
    assert unpack_n(cw.zeros, 4, 1).item() == z
    u = unpack_k(cw.qweight, 4, 16)[0, :4].tolist()
    assert u == [0, 5, 7, 15]  # round(w / s) + z; 0.5 / 0.2 = 2.5 -> 2 (half to even)
    assert torch.equal(
        dequantize_weight(cw)[0, :4], (torch.tensor(u) - z).float() * cw.scales.float()[0, 0]
    )


def test_signed_type_with_zero_point_uses_stored_codes():
    w = torch.linspace(0.0, 1.5, 16).reshape(1, 16)
    spec = WeightSpec(
        dtype="int4", scale=ScaleSpec(granularity="channel", dtype="fp32"), zero_point="int"
    )
    cw = quantize_weight(w, spec)
    u = unpack_k(cw.qweight, 4, 16).float()
    z = unpack_n(cw.zeros, 4, 1).float()
    assert torch.equal(dequantize_weight(cw), (u - z) * cw.scales.float())


def test_partial_last_group_gets_its_own_scale():
    w = torch.ones(2, 130)
    w[:, 128:] = 0.01
    cw = quantize_weight(w, presets.W4A16_G128)
    assert cw.scales.shape == (2, 2)
    assert cw.scales[0, 1].item() == pytest.approx(0.01 / 7, rel=1e-3)
    assert torch.allclose(dequantize_weight(cw), w, rtol=1e-3)


def test_uint_without_zero_point_holds_only_non_negative_weights():
    spec = WeightSpec(dtype="uint4", scale=ScaleSpec(granularity="channel", dtype="fp32"))
    cw = quantize_weight(torch.tensor([[-1.0, 0.0, 1.5, 3.0]]), spec)
    codes = unpack_k(cw.qweight, 4, 4)
    assert codes.tolist() == [[0, 0, 8, 15]]  # -1 clamps to 0; 1.5 / 0.2 = 7.5 -> 8 (half to even)
    assert torch.equal(dequantize_weight(cw), codes.float() * cw.scales)


def test_moe_weights_and_per_expert_global_scales():
    g = torch.Generator().manual_seed(3)
    w = torch.randn(3, 16, 64, generator=g) * torch.tensor([1.0, 10.0, 0.1]).reshape(3, 1, 1)
    cw = quantize_weight(w, QuantSpec(weight=presets.NVFP4.weight, layout="moe"))
    assert cw.is_moe and cw.num_experts == 3
    assert cw.global_scale.shape == (3,)
    assert torch.equal(cw.global_scale, w.abs().amax(dim=(1, 2)) / (448.0 * 6.0))
    deq = dequantize_weight(cw)
    for e in range(3):
        single = quantize_weight(w[e], presets.NVFP4.weight)
        assert torch.equal(deq[e], dequantize_weight(single))


def test_zero_weights_quantize_to_zero():
    for spec in (
        presets.W4A16_G128,
        presets.GPTQ_INT4,
        presets.GGUF_Q4_K,
        presets.MXFP4,
        presets.NVFP4,
        presets.FP8_BLOCK128,
    ):
        cw = quantize_weight(torch.zeros(128, 256), spec)
        assert torch.equal(dequantize_weight(cw), torch.zeros(128, 256)), spec


@pytest.mark.parametrize("name", sorted(presets.PRESETS))
def test_every_preset_round_trips_with_canonical_shapes(name):
    spec = presets.PRESETS[name]
    g = torch.Generator().manual_seed(5)
    w = torch.randn(64, 256, generator=g)
    cw = quantize_weight(w, spec)
    ws = spec.weight
    assert cw.qweight.dtype == torch.int32 and cw.qweight.shape == (64, 256 * ws.dtype.bits // 32)
    bn, bk = tile_of(ws.scale, 64, 256)
    assert cw.scales.shape == (math.ceil(64 / bn), math.ceil(256 / bk))
    if ws.zero_point == "int":
        assert cw.zeros.shape == (cw.scales.shape[1], math.ceil(64 * ws.dtype.bits / 32))
    _scale_is_exact_in_dtype(cw)
    _check_error_bound(w, cw)


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match="layout='moe'"):
        quantize_weight(torch.randn(2, 16, 32), presets.W4A16_G128)
    with pytest.raises(ValueError, match=r"\(N, K\) or \(E, N, K\)"):
        quantize_weight(torch.randn(32), presets.W4A16_G128)
    with pytest.raises(TypeError, match="float weights"):
        quantize_weight(torch.ones(4, 32, dtype=torch.int32), presets.W4A16_G128.weight)


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32", "ue4m3"])
def test_round_scale_up_is_the_smallest_value_not_below(name):
    t = scalar(name)
    g = torch.Generator().manual_seed(7)
    target = torch.rand(5000, generator=g) * torch.exp2(
        torch.randint(-30, 10, (5000,), generator=g).float()
    )
    target = target.clamp(max=float(t.max_value))
    _, up = round_scale(target, t, up=True)
    _, near = round_scale(target, t)
    assert (up >= target).all()
    if name == "ue4m3":
        grid = torch.tensor(sorted(v for v in code_table(t) if math.isfinite(v)))
        assert torch.equal(up, grid[torch.searchsorted(grid, target)])
        assert torch.equal(near, decode(t, encode(t, target)))
    else:
        dtype = t.torch_dtype()
        below = torch.nextafter(up.to(dtype), torch.tensor(0.0, dtype=dtype)).float()
        assert (below < target).all()
        assert torch.equal(near, target.to(dtype).float())
    with pytest.raises(ValueError, match="mx_scale"):
        round_scale(target, scalar("e8m0"))


def test_offsets_beyond_fp16_are_refused_not_clipped():
    """A float zero point (offset) of 7.4e4 does not fit fp16: refuse it instead of saturating."""
    w = torch.tensor([[-7.4438e4], [4.4701e4]])
    ws = WeightSpec(
        dtype="uint3", scale=ScaleSpec(dtype="fp16", granularity="channel"), zero_point="float"
    )
    with pytest.raises(ValueError, match=r"does not fit scale dtype 'fp16'.*use fp32 scales"):
        quantize_weight(w, ws)
    fp32 = WeightSpec(
        dtype="uint3", scale=ScaleSpec(dtype="fp32", granularity="channel"), zero_point="float"
    )
    assert torch.allclose(dequantize_weight(quantize_weight(w, fp32)), w)
