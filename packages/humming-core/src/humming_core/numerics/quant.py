"""Weight quantization to, and dequantization from, the canonical weight form.

Scale selection (see `numerics.scales` for the dtype rules):
- every fp32/fp16/bf16/ue4m3 weight scale is rounded *up* to its dtype, so no element lands past
  the end of its grid because of that rounding.
- symmetric (zero_point 'none'): s = amax / elem_max per tile (uint types without a zero point can
  hold only w >= 0: s = max(w, 0) / elem_max and negative weights clamp to 0); MX e8m0 scales use
  the OCP shared-exponent rule; codes = RNE(w / s) onto the element grid, saturating.
- zero points work on the stored (canonical, unsigned) code u in [0, 2^b - 1], for signed and
  unsigned types alike (for a signed type u = q + 2^(b-1)); the range per tile is
  [lo, hi] = [min(w, 0), max(w, 0)] and s = (hi - lo) / (2^b - 1).
- integer zero points: z = round(-lo / s) clamped to [0, 2^b - 1], u = clamp(round(w / s) + z, 0,
  2^b - 1), w = s * (u - z).
- float zero points (GGUF-style offset, in weight units): z = -lo rounded to the scale dtype,
  u = clamp(round((w + z) / s), 0, 2^b - 1), w = s * u - z.
- with a second-level scale g, all of the above work on w / g and dequantization multiplies by g.

K (or N, for block tiles) not a multiple of the tile is supported: the last tile is partial and its
scale comes from the elements it really has.

Dequantization is exact: each weight is the exact product (or product and difference) rounded once
to float32; float64 intermediates are used where a float32 chain would round twice.
"""

from __future__ import annotations

import torch

from ..packing.bits import pack_k, pack_n, unpack_k, unpack_n, words_for
from ..packing.canonical import CanonicalWeight
from ..spec.quant import QuantSpec, WeightSpec
from .blocks import from_tiles, grid_of, per_tile, tile_amax, tile_of, tile_range, to_tiles
from .codec import canonical_table, encode, to_canonical
from .scales import div, element_max, global_scale, mx_scale, round_scale, scale_values


def _as_quant_spec(spec: QuantSpec | WeightSpec, w: torch.Tensor) -> QuantSpec:
    if w.dim() not in (2, 3):
        raise ValueError(f"weights must be (N, K) or (E, N, K), got shape {tuple(w.shape)}")
    layout = "moe" if w.dim() == 3 else "dense"
    if isinstance(spec, WeightSpec):
        return QuantSpec(weight=spec, layout=layout)
    if spec.layout != layout:
        raise ValueError(
            f"weights of shape {tuple(w.shape)} need layout={layout!r} but the spec has "
            f"layout={spec.layout!r}: pass (E, N, K) weights for 'moe' and (N, K) for 'dense'"
        )
    return spec


def _safe_div(x: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """x / d, and 0 where d == 0 (an all-zero tile, or a scale that underflowed its dtype)."""
    return torch.where(d > 0, x / torch.where(d > 0, d, 1.0), 0.0)


def _symmetric(tiles: torch.Tensor, ws: WeightSpec):
    elem = ws.dtype
    amax = tile_amax(tiles) if elem.kind != "uint" else tiles.amax(dim=(-3, -1)).clamp(min=0.0)
    if ws.scale.dtype.name == "e8m0":
        stored, s = mx_scale(amax, elem)
    else:
        stored, s = round_scale(div(amax, element_max(elem)), ws.scale.dtype, up=True)
    codes = to_canonical(elem, encode(elem, _safe_div(tiles, per_tile(s)), saturate=True))
    return codes, stored, None


def _int_zero_point(tiles: torch.Tensor, ws: WeightSpec):
    top = (1 << ws.dtype.bits) - 1
    lo, hi = tile_range(tiles)
    stored, s = round_scale(div(hi - lo, top), ws.scale.dtype, up=True)
    z = torch.round(_safe_div(-lo, s)).clamp(0, top)
    u = torch.round(_safe_div(tiles, per_tile(s))) + per_tile(z)
    return u.clamp(0, top).to(torch.int32), stored, z.to(torch.int32)


def _float_zero_point(tiles: torch.Tensor, ws: WeightSpec):
    top = (1 << ws.dtype.bits) - 1
    lo, hi = tile_range(tiles)
    stored, s = round_scale(div(hi - lo, top), ws.scale.dtype, up=True)
    stored_z, z = round_scale(-lo, ws.scale.dtype)
    u = torch.round(_safe_div(tiles + per_tile(z), per_tile(s))).clamp(0, top)
    return u.to(torch.int32), stored, stored_z


def quantize_weight(
    w: torch.Tensor, spec: QuantSpec | WeightSpec, bias: torch.Tensor | None = None
) -> CanonicalWeight:
    """Quantize float weights (N, K) or (E, N, K) into the canonical form of `spec`.

    A `bias` [N] travels with the weight and turns on the spec's `epilogue.bias`."""
    qspec = _as_quant_spec(spec, w)
    if bias is not None and not qspec.epilogue.bias:
        qspec = qspec.replace(epilogue=qspec.epilogue.model_copy(update={"bias": True}))
    ws = qspec.weight
    if not w.is_floating_point():
        raise TypeError(f"quantize_weight takes float weights, got dtype {w.dtype}")
    n, k = w.shape[-2:]
    wf = w.float()
    gscale = None
    if ws.global_scale:
        gscale = global_scale(wf.abs().amax(dim=(-2, -1)), ws.dtype, ws.scale.dtype)
        wf = wf / gscale[..., None, None]
    tiles = to_tiles(wf, tile_of(ws.scale, n, k))
    if ws.zero_point == "none":
        codes, scales, zeros = _symmetric(tiles, ws)
    elif ws.zero_point == "int":
        codes, scales, zeros = _int_zero_point(tiles, ws)
        zeros = pack_n(zeros, ws.dtype.bits)
    else:
        codes, scales, zeros = _float_zero_point(tiles, ws)
    qweight = pack_k(from_tiles(codes, n, k), ws.dtype.bits)
    if gscale is not None:
        gscale = gscale.reshape(-1).float()
    return CanonicalWeight(
        spec=qspec,
        n=n,
        k=k,
        qweight=qweight,
        scales=scales,
        zeros=zeros,
        global_scale=gscale,
        bias=bias,
    )


def _work_dtype(ws: WeightSpec) -> torch.dtype:
    """float64 where a float32 chain would round more than once.

    A 16-bit, e8m0 or ue4m3 scale times an element of at most 8 bits is exact in float32, so one
    further operation rounds once; an fp32 scale already rounds in that product."""
    extra_ops = int(ws.global_scale) + int(ws.zero_point == "float")
    if ws.scale.dtype.name == "fp32":
        extra_ops += 1
    return torch.float64 if extra_ops > 1 else torch.float32


def _element_values(ws: WeightSpec, codes: torch.Tensor, work: torch.dtype) -> torch.Tensor:
    """What the scale multiplies: the element value, or the stored code itself with a zero point."""
    elem = ws.dtype
    if elem.is_float:
        return canonical_table(elem, codes.device).to(work)[codes.to(torch.int32)]
    # Integer values are the canonical code minus the offset-binary offset: no table needed.
    values = codes.to(work)
    if elem.kind == "uint" or ws.zero_point != "none":
        return values
    return values.sub_(1 << (elem.bits - 1))


def dequantize_codes(
    ws: WeightSpec,
    codes: torch.Tensor,
    scales: torch.Tensor,
    zeros: torch.Tensor | None = None,
    global_scale: torch.Tensor | None = None,
) -> torch.Tensor:
    """float32 weights from unpacked canonical codes [..., N, K], stored scales, and zero points
    laid out like the scales ([..., gn, gk]: unpacked integer codes, or stored float offsets)."""
    n, k = codes.shape[-2:]
    tile = tile_of(ws.scale, n, k)
    grid = grid_of(n, k, tile)
    if tuple(scales.shape[-2:]) != grid:
        raise ValueError(
            f"scales of shape {tuple(scales.shape)} do not fit {ws.scale.granularity} scaling of a "
            f"{n}x{k} weight: expected trailing dims {grid}"
        )
    work = _work_dtype(ws)
    s = per_tile(scale_values(scales, ws.scale.dtype).to(work))
    if ws.zero_point == "int":
        # (u - z) per tile, before the scale multiplies it.
        codes_minus_z = to_tiles(codes.to(work), tile).sub_(per_tile(zeros.to(work)))
        return _finish(from_tiles(codes_minus_z.mul_(s), n, k), global_scale)
    out = to_tiles(_element_values(ws, codes, work), tile).mul_(s)
    if ws.zero_point == "float":
        out = out.sub_(per_tile(zeros.to(work)))
    return _finish(from_tiles(out, n, k), global_scale)


def _finish(out: torch.Tensor, global_scale: torch.Tensor | None) -> torch.Tensor:
    if global_scale is not None:
        out = out * global_scale.to(out.dtype).reshape(*out.shape[:-2], 1, 1)
    return out.float()


def dequantize_weight(cw: CanonicalWeight) -> torch.Tensor:
    """float32 weights (N, K) or (E, N, K) of a canonical weight."""
    ws = cw.spec.weight
    bits = ws.dtype.bits
    if cw.qweight.shape[-1] != words_for(cw.k, bits):
        raise ValueError(
            f"qweight of shape {tuple(cw.qweight.shape)} does not hold k={cw.k} codes of {bits} "
            f"bits: expected {words_for(cw.k, bits)} words per row"
        )
    codes = unpack_k(cw.qweight, bits, cw.k, dtype=torch.uint8)
    zeros = cw.zeros
    if ws.zero_point != "none" and zeros is None:
        raise ValueError(
            f"spec has zero_point={ws.zero_point!r} but the canonical weight has no zeros"
        )
    if ws.zero_point == "int":
        zeros = unpack_n(cw.zeros, bits, cw.n)
    gscale = cw.global_scale if ws.global_scale else None
    if ws.global_scale and gscale is None:
        raise ValueError("spec has global_scale=True but the canonical weight has no global_scale")
    return dequantize_codes(ws, codes, cw.scales, zeros, gscale)
