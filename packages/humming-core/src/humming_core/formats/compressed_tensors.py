"""compressed-tensors (llm-compressor) checkpoints: `quant_method: "compressed-tensors"`.

Each layer matches one of `config_groups` (its `targets`: "re:<regex>" matched from the start of
the layer name, an exact layer name, or the class name "Linear", which matches any layer) unless it
matches `ignore` (same rules). The group's `format` (else the top-level one) says how it is stored:

- `pack-quantized`: `weight_packed` int32 (N, ceil(K·b/32)), codes q + 2^(b−1) packed along K —
  already the canonical bitstream; `weight_scale` (N, K/g) or (N, 1); asymmetric adds
  `weight_zero_point` int32 (ceil(N·b/32), G), zero points + 2^(b−1) packed along N. With offsets
  on both sides w = (q − z)·s = (u_q − u_z)·s, so asymmetric layers are uint codes with integer
  zero points. Act-order keeps `weight_g_idx`: K is permuted (see `common.k_permutation`).
- `int-quantized`: int8 `weight` (N, K); `float-quantized`: float8_e4m3fn `weight` (N, K); scales
  per tensor, channel, group or 128×128 block (kept as block scales).
- `nvfp4-pack-quantized`: uint8 `weight_packed` (N, K/2), `weight_scale` e4m3 (N, K/16),
  `weight_global_scale` fp32 — a divisor: w = e2m1·s / global (see `common.reciprocal_scale`).
- `mxfp4-pack-quantized`: uint8 `weight_packed` (N, K/2), `weight_scale` uint8 e8m0 (N, K/32).
"""

from __future__ import annotations

import re

import torch

from ..packing import CanonicalWeight
from ..packing.bits import pack_k, unpack_k
from ..spec import NVFP4_ACT, ActSpec, EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .common import (
    byte_codes_to_words,
    int8_offset_binary,
    k_permutation,
    model_act_dtype,
    nibble_bytes_to_words,
    permute_k,
    reciprocal_scale,
)
from .errors import FormatError, expect_dtype, expect_shape

FORMATS = (
    "pack-quantized",
    "int-quantized",
    "float-quantized",
    "naive-quantized",
    "nvfp4-pack-quantized",
    "mxfp4-pack-quantized",
)
_SCALE_TORCH = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


def matches(name: str, target: str) -> bool:
    if target.startswith("re:"):
        return re.match(target[3:], name) is not None
    return target == name or target == "Linear"


def _specific(target: str) -> bool:
    return target != "Linear"


class _Group:
    """One config group: its targets, weight and activation quantization args, storage format."""

    def __init__(self, name: str, body: dict, default_format: str | None) -> None:
        self.name = name
        self.targets = list(body.get("targets") or [])
        self.weights = body.get("weights") or {}
        self.acts = body.get("input_activations")
        self.format = body.get("format") or default_format
        if self.format not in FORMATS:
            raise FormatError(
                f"config group {name!r}: format {self.format!r} is not supported; humming reads "
                f"{', '.join(FORMATS)}"
            )


def _weight_spec(group: _Group, scale_dtype: str, block: tuple[int, int] | None) -> WeightSpec:
    w, fmt = group.weights, group.format
    bits, sym = int(w.get("num_bits", 0)), bool(w.get("symmetric", True))
    strategy, g = w.get("strategy"), w.get("group_size")
    if fmt == "nvfp4-pack-quantized":
        return WeightSpec(
            dtype="e2m1",
            scale=ScaleSpec(granularity="group", group_size=16, dtype="ue4m3"),
            global_scale=True,
        )
    if fmt == "mxfp4-pack-quantized":
        return WeightSpec(
            dtype="e2m1", scale=ScaleSpec(granularity="group", group_size=32, dtype="e8m0")
        )
    kind = w.get("type", "int")
    if kind == "float":
        if bits != 8:
            raise FormatError(
                f"config group {group.name!r}: float weights of {bits} bits in {fmt}: only 8 (e4m3)"
            )
        dtype = "e4m3"
    else:
        dtype = f"int{bits}" if sym else f"uint{bits}"
    if strategy == "group":
        scale = ScaleSpec(granularity="group", group_size=g, dtype=scale_dtype)
    elif strategy == "block":
        scale = ScaleSpec(
            granularity="block", block=tuple(w.get("block_structure")), dtype=scale_dtype
        )
    elif strategy in ("channel", "tensor"):
        scale = ScaleSpec(granularity=strategy, dtype=scale_dtype)
    else:
        raise FormatError(
            f"config group {group.name!r}: weight strategy {strategy!r} is not supported"
        )
    return WeightSpec(dtype=dtype, scale=scale, zero_point="none" if sym else "int")


def _act_spec(group: _Group, wide: str) -> ActSpec:
    a = group.acts
    if not a:
        return ActSpec(dtype=wide)
    kind, bits, strategy = a.get("type"), int(a.get("num_bits", 0)), a.get("strategy")
    quant = "dynamic" if a.get("dynamic") in (True, "local") else "static"
    if kind == "float" and bits == 4:
        return NVFP4_ACT
    dtype = "e4m3" if kind == "float" else f"int{bits}"
    granularity = {"token": "token", "tensor": "tensor", "group": "group"}.get(strategy)
    if granularity is None:
        raise FormatError(
            f"config group {group.name!r}: activation strategy {strategy!r} is not supported"
        )
    return ActSpec(
        dtype=dtype,
        quant=quant,
        granularity=granularity,
        group_size=a.get("group_size") if granularity == "group" else None,
    )


@register
class CompressedTensorsFormat(CheckpointFormat):
    methods = ("compressed-tensors",)
    name = "compressed-tensors"

    def __init__(self, ckpt) -> None:
        super().__init__(ckpt)
        cfg = ckpt.config
        groups = cfg.get("config_groups") or {}
        if not groups:
            raise FormatError(f"{ckpt.path}: compressed-tensors config has no config_groups")
        self.groups = [_Group(n, body, cfg.get("format")) for n, body in groups.items()]
        self.ignore = list(cfg.get("ignore") or [])
        self.wide = model_act_dtype(ckpt.model_config)
        self._group_of: dict[str, _Group] = {}

    def _match(self, prefix: str) -> _Group | None:
        if any(matches(prefix, t) for t in self.ignore if _specific(t)):
            return None
        hits = [
            (any(_specific(t) and matches(prefix, t) for t in g.targets), g)
            for g in self.groups
            if any(matches(prefix, t) for t in g.targets)
        ]
        hits.sort(key=lambda h: not h[0])  # a regex or name target beats the class name "Linear"
        return hits[0][1] if hits else None

    def find_layers(self) -> list[QuantLayer]:
        prefixes = sorted(
            {
                k.rsplit(".", 1)[0]
                for k in self.tensors.names()
                if k.endswith((".weight_packed", ".weight_scale"))
            }
        )
        found = []
        for prefix in prefixes:
            group = self._match(prefix)
            if group is None:
                if any(matches(prefix, t) for t in self.ignore if _specific(t)):
                    continue
                raise FormatError(
                    f"layer {prefix!r} has quantized tensors but matches no config_groups target "
                    f"({[t for g in self.groups for t in g.targets]}) and is not in ignore"
                )
            self._group_of[prefix] = group
            n, k = self._shape(prefix, group)
            spec = self._spec(prefix, group)
            found.append(QuantLayer(prefix, spec, n, k))
        return found

    def _shape(self, prefix: str, group: _Group) -> tuple[int, int]:
        if f"{prefix}.weight_shape" in self.tensors:
            n, k = (int(v) for v in self.tensors.get(f"{prefix}.weight_shape").tolist())
            return n, k
        if group.format in ("nvfp4-pack-quantized", "mxfp4-pack-quantized"):
            n, half = self.tensors.shape(f"{prefix}.weight_packed")
            return n, 2 * half
        n, k = self.tensors.shape(f"{prefix}.weight")
        return n, k

    def _spec(self, prefix: str, group: _Group) -> QuantSpec:
        stored = self.tensors.get(f"{prefix}.weight_scale")
        scale_dtype = _SCALE_TORCH.get(stored.dtype, "fp32")
        block = group.weights.get("block_structure")
        weight = _weight_spec(group, scale_dtype, tuple(block) if block else None)
        act = _act_spec(group, self.wide)
        epilogue = EpilogueSpec(out_dtype=self.wide) if act.is_quantized else EpilogueSpec()
        try:
            return QuantSpec(weight=weight, act=act, epilogue=epilogue)
        except ValueError as exc:
            raise FormatError(f"layer {prefix!r} (config group {group.name!r}): {exc}") from None

    # ---- conversion ------------------------------------------------------------------------
    def load(self, name: str) -> CanonicalWeight:
        layer = self.layer(name)
        group = self._group_of[name]
        spec, n, k = layer.spec, layer.n, layer.k
        scales = self._scales(name, spec, n, k)
        if group.format == "pack-quantized":
            qweight, zeros = self._packed(name, spec, n, k)
            return CanonicalWeight(spec, n, k, qweight, scales, zeros)
        if group.format in ("nvfp4-pack-quantized", "mxfp4-pack-quantized"):
            packed = self.tensors.get(f"{name}.weight_packed")
            expect_shape(
                f"{name}.weight_packed", packed.shape, (n, k // 2), "two FP4 codes per byte along K"
            )
            global_scale = None
            if spec.weight.global_scale:
                stored = self.tensors.get(f"{name}.weight_global_scale").to(torch.float32)
                global_scale = reciprocal_scale(
                    stored, f"{name}.weight_global_scale", self.ckpt.allow_rounding
                )
            return CanonicalWeight(
                spec, n, k, nibble_bytes_to_words(packed, k), scales, None, global_scale
            )
        weight = self.tensors.get(f"{name}.weight")
        expect_shape(f"{name}.weight", weight.shape, (n, k), "dense 8-bit codes")
        if spec.weight.dtype.name == "int8":
            expect_dtype(f"{name}.weight", weight.dtype, (torch.int8,))
            weight = int8_offset_binary(weight)
        else:
            expect_dtype(f"{name}.weight", weight.dtype, (torch.float8_e4m3fn,))
        return CanonicalWeight(spec, n, k, byte_codes_to_words(weight), scales)

    def _scales(self, name: str, spec: QuantSpec, n: int, k: int) -> torch.Tensor:
        s = spec.weight.scale
        stored = self.tensors.get(f"{name}.weight_scale")
        want = {
            "group": (n, -(-k // (s.group_size or 1))),
            "channel": (n, 1),
            "tensor": (1, 1),
            "block": (-(-n // s.block[0]), -(-k // s.block[1])) if s.block else None,
        }[s.granularity]
        if s.granularity == "tensor":
            stored = stored.reshape(1, 1) if stored.numel() == 1 else stored
        expect_shape(
            f"{name}.weight_scale",
            stored.shape,
            want,
            f"{s.granularity} scales of a {n}x{k} weight",
        )
        if s.dtype.name == "e8m0":
            return stored.view(torch.uint8)
        return stored

    def _packed(
        self, name: str, spec: QuantSpec, n: int, k: int
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        bits = spec.weight.dtype.bits
        packed = self.tensors.get(f"{name}.weight_packed")
        expect_shape(
            f"{name}.weight_packed",
            packed.shape,
            (n, -(-k * bits // 32)),
            f"{bits}-bit codes packed along K",
        )
        zeros = None
        if spec.weight.zero_point == "int":
            zp = self.tensors.get(f"{name}.weight_zero_point")
            groups = self.tensors.shape(f"{name}.weight_scale")[1]
            expect_shape(
                f"{name}.weight_zero_point",
                zp.shape,
                (-(-n * bits // 32), groups),
                f"{bits}-bit zero points packed along N",
            )
            zeros = zp.t().contiguous()
        perm = self.k_permutation(name)
        if perm is not None:
            packed = pack_k(permute_k(unpack_k(packed, bits, k), perm), bits)
        return packed, zeros

    def k_permutation(self, name: str) -> torch.Tensor | None:
        g_idx = self.tensors.get_optional(f"{name}.weight_g_idx")
        layer = self.layer(name)
        if g_idx is None or layer.spec.weight.scale.group_size is None:
            return None
        expect_shape(
            f"{name}.weight_g_idx", g_idx.shape, (layer.k,), "one group index per column of K"
        )
        return k_permutation(g_idx, layer.spec.weight.scale.group_size, f"{name}.weight_g_idx")

    def extras(self, name: str) -> dict[str, torch.Tensor]:
        keys = ("input_scale", "input_global_scale", "input_zero_point")
        return {k: self.tensors.get(f"{name}.{k}") for k in keys if f"{name}.{k}" in self.tensors}
