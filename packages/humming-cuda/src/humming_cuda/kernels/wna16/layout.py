"""The WnA16 weight layout and the repack from the canonical form (vectorized torch, CPU or GPU).

Weights: int32 `(N_pad/64, K_pad/16, 32 * b)`: layout tiles of 16 (K) x 64 (N) codes, ordered
[n tile][k tile], each holding 32 lanes x b words in the order a lane's MMA B fragments need (see
include/humming/memory/bitplanes.cuh for the bit placement). N is padded to 64, K to 16, with code
0 (finite in every format), so the kernel needs no masks on the weights.

Scales and zero points used inside the K loop: `(groups, N_pad)` in the activation dtype, columns
permuted inside each 64-column tile so a lane's eight columns (8j + lane/4, j = 0..7) are one 16-byte
load. With fp16 activations these scales (and float zero points) carry a per-layer power of two 2^E
chosen so the largest scaled weight is about 2^14: scales from wider types (fp32, bf16, e8m0) keep
full fp16 precision and cannot overflow; `global_scale` then holds 2^-E (times the format's own
global scale). Per-channel / per-tensor scales without zero points and the global scale stay fp32
and are applied to the fp32 accumulator in the epilogue.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import torch

from humming_core.numerics.codec import decode
from humming_core.packing.bits import unpack_k, unpack_n
from humming_core.packing.canonical import CanonicalWeight
from humming_core.spec.scalar import ScalarType

from .config import LAYOUT_TILE_K, LAYOUT_TILE_N, KernelFormat

_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
_ROWS_PER_CHUNK = 8192  # rows of N repacked at once: bounds the temporaries on a 70B model's layers


def plane_widths(bits: int) -> list[int]:
    """Power-of-two bit planes of a b-bit code, widest first (7 -> [4, 2, 1])."""
    widths = []
    while bits:
        w = 8 if bits >= 8 else 4 if bits >= 4 else 2 if bits >= 2 else 1
        widths.append(w)
        bits -= w
    return widths


def _to_int32(x: torch.Tensor) -> torch.Tensor:
    """int64 holding 32-bit patterns -> int32 with the same bits."""
    return torch.where(x >= 1 << 31, x - (1 << 32), x).to(torch.int32)


def _lane_pairs(codes: torch.Tensor) -> torch.Tensor:
    """(N_pad, K_pad) codes -> (NT, KT, 32 lanes, 16 pairs, 2) in MMA fragment order.

    n = 64*nt + 8*j + g and k = 16*kt + 8*h + 2*t + e go to lane 4*g + t, pair 2*j + h, element e.
    """
    n_pad, k_pad = codes.shape
    v = codes.view(n_pad // 64, 8, 8, k_pad // 16, 2, 4, 2)  # nt j g kt h t e
    v = v.permute(0, 3, 2, 5, 1, 4, 6)  # nt kt g t j h e
    return v.reshape(n_pad // 64, k_pad // 16, 32, 16, 2)


def pack_tiles(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Canonical codes (N_pad, K_pad) int -> layout words (NT, KT, 32 * bits) int32."""
    pairs = _lane_pairs(codes.to(torch.int64))
    planes, offset = [], 0
    for width in plane_widths(bits):
        per_word = 16 // width
        field = ((pairs >> offset) & ((1 << width) - 1)).reshape(
            *pairs.shape[:3], width, per_word, 2
        )
        word = torch.zeros(field.shape[:4], dtype=torch.int64, device=codes.device)
        for f in range(per_word):
            word |= (field[..., f, 0] << (f * width)) | (field[..., f, 1] << (16 + f * width))
        planes.append(word)
        offset += width
    words = torch.cat(planes, dim=-1)  # (NT, KT, 32, bits): plane words in order
    return _to_int32(words.reshape(*words.shape[:2], 32 * bits))


def unpack_tiles(words: torch.Tensor, bits: int) -> torch.Tensor:
    """Inverse of `pack_tiles`, decoding exactly as the kernel does: -> codes (N_pad, K_pad)."""
    nt, kt = words.shape[:2]
    w = words.to(torch.int64).reshape(nt, kt, 32, bits) & 0xFFFFFFFF
    codes = torch.zeros((nt, kt, 32, 16, 2), dtype=torch.int64, device=words.device)
    offset = 0
    for width in plane_widths(bits):
        per_word = 16 // width
        for pair in range(16):
            word = w[..., offset + pair // per_word]
            shift = (pair % per_word) * width
            for e in range(2):
                codes[..., pair, e] |= ((word >> (shift + 16 * e)) & ((1 << width) - 1)) << offset
        offset += width
    v = codes.view(nt, kt, 8, 4, 8, 2, 2)  # nt kt g t j h e
    return v.permute(0, 4, 2, 1, 5, 3, 6).reshape(nt * 64, kt * 16)


def permute_columns(x: torch.Tensor) -> torch.Tensor:
    """(rows, N_pad): column 8j + g of each 64-column tile moves to position 8g + j."""
    rows, n_pad = x.shape
    return x.view(rows, n_pad // 64, 8, 8).transpose(2, 3).reshape(rows, n_pad)


def _pad(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    return torch.nn.functional.pad(x, (0, cols - x.shape[1], 0, rows - x.shape[0]))


def scale_values(cw: CanonicalWeight) -> torch.Tensor:
    """Scales as exact float32 values (e8m0 codes decoded, ue4m3 widened)."""
    name = cw.spec.weight.scale.dtype.name
    if name == "e8m0":
        return decode("e8m0", cw.scales.to(torch.int32))
    return cw.scales.float()


def _to_act(values: torch.Tensor, act: str, what: str) -> torch.Tensor:
    out = values.to(_TORCH[act])
    bad = torch.isfinite(values) & ~torch.isfinite(out.float())
    if bool(bad.any()):
        raise ValueError(
            f"{what}: {int(bad.sum())} value(s) (largest {values[bad].abs().max().item():.3g}) "
            f"overflow {act}, the type the kernel applies them in (the layer's scales span more "
            "than its range): rescale the layer, or use bf16 activations"
        )
    return out


@dataclass(frozen=True)
class Wna16Layout:
    """`WeightLayout` of the WnA16 family: one packed copy serves every tile config of a spec."""

    fmt: KernelFormat

    @property
    def identity(self) -> Hashable:
        f = self.fmt
        return ("wna16", f.act, f.bits, f.zero, f.group, f.epi_scale, f.epi_global)

    def pack(self, cw: CanonicalWeight, device: torch.device | str) -> dict[str, torch.Tensor]:
        if cw.is_moe:
            raise ValueError(
                "the wna16 layout packs dense weights (N, K); MoE weights need a MoE family"
            )
        cw = cw.to(device)
        n_pad = -(-cw.n // LAYOUT_TILE_N) * LAYOUT_TILE_N
        k_pad = -(-cw.k // LAYOUT_TILE_K) * LAYOUT_TILE_K
        out = {"qweight": self._pack_qweight(cw, n_pad, k_pad)}
        scales, shift = self._pack_scales(cw, n_pad)
        out.update(scales)
        if self.fmt.epi_global:
            gs = (
                cw.global_scale.float()
                if cw.global_scale is not None
                else torch.ones(1, device=device)
            )
            out["global_scale"] = (gs.reshape(1) * 2.0**-shift).contiguous()
        if cw.bias is not None and self.fmt.bias:
            out["bias"] = cw.bias.float().reshape(cw.n).contiguous()
        return out

    def _pack_qweight(self, cw: CanonicalWeight, n_pad: int, k_pad: int) -> torch.Tensor:
        bits = self.fmt.bits
        parts = []
        for r0 in range(0, n_pad, _ROWS_PER_CHUNK):
            r1 = min(n_pad, r0 + _ROWS_PER_CHUNK)
            rows = cw.qweight[r0 : min(r1, cw.n)]
            codes = unpack_k(rows.contiguous(), bits, cw.k)
            parts.append(pack_tiles(_pad(codes, r1 - r0, k_pad), bits))
        return torch.cat(parts, dim=0).contiguous()

    def _pack_scales(self, cw: CanonicalWeight, n_pad: int) -> tuple[dict[str, torch.Tensor], int]:
        """Scale tensors, and the power-of-two shift E folded into in-loop fp16 scales (0 if none)."""
        f = self.fmt
        values = scale_values(cw)  # (N, G)
        if f.epi_scale == "tensor":
            return {"channel_scale": values.reshape(1).contiguous()}, 0
        if f.epi_scale == "channel":
            cs = _pad(values.reshape(cw.n, 1), n_pad, 1).reshape(n_pad).contiguous()
            return {"channel_scale": cs}, 0
        zeros = None
        if f.zero == "int":
            zeros = unpack_n(cw.zeros, f.bits, cw.n).to(torch.float32)  # (N, G), no shift: q - z
        elif f.zero == "float":
            zeros = cw.zeros.float()
        if f.folds_float_bias:
            values = _folded(cw, values, f.group)
        shift = _scale_shift(cw, values, zeros) if f.scale_shift else 0
        if shift:
            values = values * 2.0**shift
            if f.zero == "float":
                zeros = zeros * 2.0**shift
        groups = values.shape[1]
        out = {"scales": _columns(_to_act(values, f.act, "weight scales"), groups, n_pad)}
        if zeros is not None:
            out["zeros"] = _columns(_to_act(zeros, f.act, "weight zero points"), groups, n_pad)
        return out, shift


# Mirrors Wna16WgmmaRsKernel::FOLD_DOWN: the power of two of the folded exponent-bias factor that
# the kernel's epilogue puts back on the fp32 accumulators.
FOLD_DOWN = 16


def folded_scale_range(codes: ScalarType) -> tuple[float, float]:
    """[lo, hi): the |scale| the folded kernel takes exactly for float `codes` (bf16 activations).
    A scale of a group with nonzero codes stays under hi, which keeps scale * 2^(float_shift -
    FOLD_DOWN) finite in bf16, and at or above lo, which keeps its smallest weight times
    2^-FOLD_DOWN a normal bf16, rounding as the weight itself does (zero groups take any scale:
    _folded packs an overflowing one as 1)."""
    float_shift = 127 - codes.bias  # Dequant::float_shift() for bf16
    return 2.0 ** (-126 + FOLD_DOWN) / codes.min_subnormal, 2.0 ** (128 - float_shift + FOLD_DOWN)


def nonzero_groups(codes: torch.Tensor, bits: int, group: int, groups: int) -> torch.Tensor:
    """(N, groups): whether each K group of the unpacked `bits`-bit float codes (N, K) holds a
    nonzero magnitude (sign bit aside; K past the codes counts as zero)."""
    n, k = codes.shape
    nonzero = (codes & ((1 << (bits - 1)) - 1)) != 0
    return torch.nn.functional.pad(nonzero, (0, groups * group - k)).view(n, groups, group).any(-1)


def _nonzero_groups(cw: CanonicalWeight, rows: torch.Tensor, group: int) -> torch.Tensor:
    """(len(rows), G): nonzero_groups of those rows of the layer."""
    bits, groups = cw.spec.weight.dtype.bits, -(-cw.k // group)
    parts = []
    for r0 in range(0, rows.numel(), _ROWS_PER_CHUNK):
        picked = cw.qweight[rows[r0 : r0 + _ROWS_PER_CHUNK]].contiguous()
        parts.append(nonzero_groups(unpack_k(picked, bits, cw.k), bits, group, groups))
    return torch.cat(parts)


def _folded(cw: CanonicalWeight, values: torch.Tensor, group: int) -> torch.Tensor:
    """`values` (N, G) for a folding kernel: a group of zero codes multiplies zeros whatever its
    scale, so it may carry one outside folded_scale_range (quantizers give such groups e8m0's
    smallest scale, 2^-127), and one the fold would overflow is packed as 1 (0 x inf = NaN); a
    group holding nonzero codes with such a scale is refused."""
    codes = cw.spec.weight.dtype
    lo, hi = folded_scale_range(codes)
    mags = values.abs().to(torch.bfloat16).float()  # as the kernel reads them
    out = (mags >= hi) | ((mags > 0) & (mags < lo))
    if not bool(out.any()):
        return values
    rows = out.any(1).nonzero().view(-1)
    zero = torch.zeros_like(out)  # groups of zero codes, found only in the rows out of range
    zero[rows] = ~_nonzero_groups(cw, rows, group)
    bad = out & ~zero
    if bool(bad.any()):
        raise ValueError(
            f"{int(bad.sum())} weight scale(s) from {mags[bad].min().item():.3g} to "
            f"{mags[bad].max().item():.3g}: with bf16 activations, {codes.name} codes "
            f"take scales below {hi:.3g}, and at least {lo:.3g} where a group holds nonzero "
            "codes (the kernels fold the codes' exponent bias into the scales; outside that range "
            "the folded scale overflows bf16 or the smallest weights round as subnormals): "
            "rescale the layer"
        )
    return torch.where(zero & (mags >= hi), torch.ones_like(values), values)


def _columns(x: torch.Tensor, groups: int, n_pad: int) -> torch.Tensor:
    """(N, G) -> (G, N_pad), columns in lane order."""
    return permute_columns(_pad(x.t(), groups, n_pad)).contiguous()


def _value_max(cw: CanonicalWeight) -> float:
    """Largest |value| a scale multiplies: |code value|, or |q - z| with integer zero points."""
    t = cw.spec.weight.dtype
    if t.is_float:
        return t.max_value
    return float(1 << (t.bits - 1)) if t.kind == "int" else float((1 << t.bits) - 1)


def _scale_shift(cw: CanonicalWeight, scales: torch.Tensor, zeros: torch.Tensor | None) -> int:
    """E such that the largest weight product (and float offset) times 2^E is about 2^14: fp16 then
    holds every scaled weight (and q*s - z) with full precision and without overflow."""
    top = scales.abs().max().item() * _value_max(cw)
    if zeros is not None and cw.spec.weight.zero_point == "float":
        top = max(top, zeros.abs().max().item())
    if not math.isfinite(top) or top <= 0.0:
        return 0
    return max(-100, min(100, math.floor(math.log2(2.0**14 / top))))
