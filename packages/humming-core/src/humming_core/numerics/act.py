"""Activation quantization: what a kernel's quantized-activation path computes, as a reference.

`quantize_act(x, act)` returns `(values, scales)`:
- values: float32 [M, K], each exactly a value of the activation element type (int8 -128..127,
  e4m3 values, ...), so `encode(act.dtype, values)` gives the codes back without loss;
- scales: float32 [M or 1, G]: (1, 1) per tensor, (M, 1) per token, (M, ceil(K/g)) per group. Each
  is the full multiplier, x ~ values * scale. For NVFP4 (ue4m3 group scales with a global scale)
  it is the decoded ue4m3 group scale times the global scale.

Scale rules: dynamic scales are amax / elem_max per tile in fp32 (e4m3: 448, int8: 127, ...); MX
(e8m0) groups use the OCP shared-exponent rule; NVFP4 rounds amax / 6 / global to the nearest
ue4m3 value per group of 16, with global = `static_scale` when given (a direct multiplier,
ModelOpt's input_scale convention) or else amax(x) / (6 * 448). Static per-tensor quantization divides by `static_scale`.
An all-zero tile gets scale 0 and values 0. Values are rounded to nearest even and saturate.

With `act.input_glu` the input is x [M, 2K] = [gate | up] and what is quantized is `glu_input(x,
act)`: act(gate) * up in fp32, rounded to x's dtype when x is fp16 / bf16 (the value a separate
activation kernel would have stored).
"""

from __future__ import annotations

import torch

from ..spec.quant import ActSpec
from .blocks import from_tiles, per_tile, tile_amax, to_tiles
from .codec import round_to
from .epilogue import glu_gate
from .scales import div, element_max, global_scale, mx_scale, round_scale


def act_tile(act: ActSpec, m: int, k: int) -> tuple[int, int]:
    """Rows x columns sharing one activation scale."""
    if act.granularity == "tensor":
        return m, k
    if act.granularity == "token":
        return 1, k
    return 1, act.group_size


def _check_input(x: torch.Tensor, act: ActSpec) -> None:
    if not act.is_quantized:
        raise ValueError(
            f"act dtype {act.dtype.name!r} is not quantized: quantize_act needs a spec with "
            "quant='dynamic' or 'static'"
        )
    if x.dim() != 2 or not x.is_floating_point():
        raise ValueError(
            f"activations must be a float [M, K] tensor, got {x.dtype} {tuple(x.shape)}"
        )


def glu_input(x: torch.Tensor, act: ActSpec) -> torch.Tensor:
    """The activations an `act.input_glu` spec quantizes (x itself without one): x [M, 2K] =
    [gate | up] -> act(gate) * up [M, K], computed in fp32, in x's dtype when x is fp16 / bf16."""
    if act.input_glu == "none":
        return x
    if x.dim() != 2 or x.shape[1] % 2:
        raise ValueError(
            f"act.input_glu={act.input_glu!r}: x must be [M, 2K] (gate columns, then as many up "
            f"columns), got shape {tuple(x.shape)}"
        )
    k = x.shape[1] // 2
    y = glu_gate(act.input_glu)(x[:, :k].float()) * x[:, k:].float()
    return y.to(x.dtype) if x.dtype in (torch.float16, torch.bfloat16) else y


def _as_scalar_scale(static_scale: torch.Tensor | float, device: torch.device) -> torch.Tensor:
    s = torch.as_tensor(static_scale, dtype=torch.float32, device=device).reshape(-1)
    if s.numel() != 1:
        raise ValueError(f"static_scale must hold one per-tensor value, got {s.numel()} values")
    return s.reshape(())


def _dynamic_scales(
    tiles: torch.Tensor, x: torch.Tensor, act: ActSpec, static_scale
) -> torch.Tensor:
    amax = tile_amax(tiles)
    name = act.scale_dtype.name
    if name == "e8m0":
        return mx_scale(amax, act.dtype)[1]
    if name == "ue4m3":
        if static_scale is not None:
            g = _as_scalar_scale(static_scale, x.device)
        else:
            g = global_scale(x.abs().amax(), act.dtype, act.scale_dtype)
        return round_scale(div(amax, element_max(act.dtype)) / g, act.scale_dtype)[1] * g
    if static_scale is not None:
        raise ValueError(
            "static_scale was given for dynamic activation quantization: it is only used with "
            "quant='static', or as the global scale of ue4m3 (NVFP4) activations"
        )
    return div(amax, element_max(act.dtype))


def quantize_act(
    x: torch.Tensor, act: ActSpec, static_scale: torch.Tensor | float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize activations [M, K] ([M, 2K] with act.input_glu): (float32 element values,
    float32 scales); see the module docstring."""
    _check_input(x, act)
    x = glu_input(x, act)
    m, k = x.shape
    xf = x.float()
    tiles = to_tiles(xf, act_tile(act, m, k))
    if act.quant == "static":
        if static_scale is None:
            raise ValueError(
                "act quant='static' needs static_scale (the per-tensor scale, a multiplier)"
            )
        scales = _as_scalar_scale(static_scale, x.device).reshape(1, 1)
    else:
        scales = _dynamic_scales(tiles, xf, act, static_scale)
    safe = torch.where(scales > 0, scales, 1.0)
    values = round_to(act.dtype, tiles / per_tile(safe), saturate=True)
    values = torch.where(per_tile(scales) > 0, values, 0.0)
    return from_tiles(values, m, k), scales


def dequantize_act(values: torch.Tensor, scales: torch.Tensor, act: ActSpec) -> torch.Tensor:
    """float32 activations from `quantize_act`'s (values, scales)."""
    m, k = values.shape
    tiles = to_tiles(values.float(), act_tile(act, m, k))
    return from_tiles(tiles * per_tile(scales.float()), m, k)
