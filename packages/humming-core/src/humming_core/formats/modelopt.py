"""NVIDIA ModelOpt checkpoints (`export_hf_checkpoint`): `hf_quant_config.json` and/or config.json
`quantization_config` with `quant_method: "modelopt"` and a `quant_algo`.

Stored per layer (as written by nvidia-modelopt 0.47 `export_hf_checkpoint`, read back by its own
`NVFP4QTensor` / `MXFP8QTensor` / `FP8QTensor.dequantize`):

- `NVFP4` (W4A4) and `W4A16_NVFP4`: `weight` uint8 (N, K/2), two E2M1 codes per byte, even element
  in the low nibble; `weight_scale` float8_e4m3fn (N, K/16); `weight_scale_2` fp32 scalar, a
  *direct* multiplier: w = e2m1 · weight_scale · weight_scale_2 (compressed-tensors stores the
  reciprocal instead). NVFP4 adds `input_scale`, the static fp32 activation global scale, also a
  multiplier (amax / (6 · 448)); it is returned by `extras`.
- `MXFP8`: `weight` float8_e4m3fn (N, K), `weight_scale` uint8 E8M0 (N, K/32); activations are
  quantized to MXFP8 at run time (no stored activation scale).
- `FP8`: `weight` float8_e4m3fn (N, K), `weight_scale` fp32 scalar, `input_scale` fp32 scalar
  (static per-tensor activations).

`MIXED_PRECISION` checkpoints name each layer's algorithm in `quantized_layers`.
"""

from __future__ import annotations

import torch

from ..packing import CanonicalWeight
from ..spec import NVFP4_ACT, ActSpec, EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .common import byte_codes_to_words, model_act_dtype, nibble_bytes_to_words
from .errors import FormatError, expect_dtype, expect_shape

# algorithm -> (group size the checkpoint must declare, or None)
ALGOS = {"NVFP4": 16, "W4A16_NVFP4": 16, "MXFP8": 32, "FP8": None}
_MXFP8_ACT = ActSpec(
    dtype="e4m3", quant="dynamic", granularity="group", group_size=32, scale_dtype="e8m0"
)
_FP8_STATIC_ACT = ActSpec(dtype="e4m3", quant="static", granularity="tensor")


def _weight_spec(algo: str) -> WeightSpec:
    if algo in ("NVFP4", "W4A16_NVFP4"):
        scale = ScaleSpec(granularity="group", group_size=16, dtype="ue4m3")
        return WeightSpec(dtype="e2m1", scale=scale, global_scale=True)
    if algo == "MXFP8":
        return WeightSpec(
            dtype="e4m3", scale=ScaleSpec(granularity="group", group_size=32, dtype="e8m0")
        )
    return WeightSpec(dtype="e4m3", scale=ScaleSpec(granularity="tensor", dtype="fp32"))


def _scalar(t: torch.Tensor, name: str) -> torch.Tensor:
    """A per-tensor fp32 scale (stored with shape () or (1,)) as shape (1,)."""
    if t.numel() != 1:
        raise FormatError(
            f"tensor {name!r} has shape {tuple(t.shape)}, expected a scalar (one fp32 per tensor); "
            "per-shard scales must be split into one layer per shard before export"
        )
    expect_dtype(name, t.dtype, (torch.float32,))
    return t.reshape(1)


def _declared_group_sizes(cfg: dict) -> list:
    """Weight group sizes the config declares: hf_quant_config.json's `group_size`, or those of
    the compressed-tensors-like `config_groups` that newer exports put in config.json."""
    sizes = [cfg.get("group_size")]
    for group in (cfg.get("config_groups") or {}).values():
        sizes.append((group.get("weights") or {}).get("group_size"))
    return [s for s in sizes if s is not None] or [None]


@register
class ModelOptFormat(CheckpointFormat):
    methods = ("modelopt", "modelopt_fp4")
    name = "modelopt"

    def __init__(self, ckpt) -> None:
        super().__init__(ckpt)
        cfg = ckpt.config
        self.algo = str(cfg.get("quant_algo") or "").upper()
        self.per_layer = cfg.get("quantized_layers") or {}
        if self.algo != "MIXED_PRECISION":
            for group_size in _declared_group_sizes(cfg):
                self._check_algo(self.algo, group_size, "quant_algo")
        for layer, body in self.per_layer.items():
            self._check_algo(str(body.get("quant_algo", "")).upper(), body.get("group_size"), layer)
        self.wide = model_act_dtype(ckpt.model_config)

    def _check_algo(self, algo: str, group_size, where: str) -> None:
        if algo not in ALGOS:
            raise FormatError(
                f"{self.ckpt.path}: ModelOpt quant_algo {algo!r} ({where}) is not supported; "
                f"humming reads {', '.join(ALGOS)}"
            )
        want = ALGOS[algo]
        if want is not None and group_size is not None and int(group_size) != want:
            raise FormatError(
                f"{self.ckpt.path}: ModelOpt {algo} with group_size={group_size} ({where}): {algo} "
                f"has exactly one scale per {want} weights; fix group_size in hf_quant_config.json"
            )

    def _algo_of(self, prefix: str) -> str:
        if self.algo != "MIXED_PRECISION":
            return self.algo
        if prefix not in self.per_layer:
            raise FormatError(
                f"layer {prefix!r} has quantized tensors but is not listed in the MIXED_PRECISION "
                "config's quantized_layers: the config does not match the tensors"
            )
        return str(self.per_layer[prefix]["quant_algo"]).upper()

    def _spec(self, prefix: str, algo: str) -> QuantSpec:
        act = {
            "NVFP4": NVFP4_ACT,
            "MXFP8": _MXFP8_ACT,
            "FP8": _FP8_STATIC_ACT,
        }.get(algo, ActSpec(dtype=self.wide))
        out = self.wide if act.is_quantized else None
        return QuantSpec(
            weight=_weight_spec(algo),
            act=act,
            epilogue=EpilogueSpec(bias=f"{prefix}.bias" in self.tensors, out_dtype=out),
        )

    def find_layers(self) -> list[QuantLayer]:
        found = []
        for key in self.tensors.names():
            if not key.endswith(".weight_scale"):
                continue
            prefix = key.removesuffix(".weight_scale")
            algo = self._algo_of(prefix)
            shape = self.tensors.shape(f"{prefix}.weight")
            if len(shape) != 2:
                raise FormatError(
                    f"tensor '{prefix}.weight' has shape {shape}: ModelOpt {algo} weights are 2-D"
                )
            n, k = shape[0], shape[1] * (2 if "NVFP4" in algo else 1)
            found.append(QuantLayer(prefix, self._spec(prefix, algo), n, k))
        return sorted(found, key=lambda layer: layer.name)

    def load(self, name: str) -> CanonicalWeight:
        layer = self.layer(name)
        spec, n, k = layer.spec, layer.n, layer.k
        weight = self.tensors.get(f"{name}.weight")
        scale = self.tensors.get(f"{name}.weight_scale")
        bias = self.tensors.get_optional(f"{name}.bias")
        w = spec.weight
        if w.dtype.name == "e2m1":
            expect_dtype(f"{name}.weight", weight.dtype, (torch.uint8,))
            expect_dtype(f"{name}.weight_scale", scale.dtype, (torch.float8_e4m3fn,))
            expect_shape(
                f"{name}.weight_scale", scale.shape, (n, -(-k // 16)), "NVFP4 group-16 scales"
            )
            g = _scalar(self.tensors.get(f"{name}.weight_scale_2"), f"{name}.weight_scale_2")
            qweight = nibble_bytes_to_words(weight, k)
            return CanonicalWeight(spec, n, k, qweight, scale, None, g, bias)
        expect_dtype(f"{name}.weight", weight.dtype, (torch.float8_e4m3fn,))
        if w.scale.granularity == "group":
            expect_dtype(f"{name}.weight_scale", scale.dtype, (torch.uint8,))
            expect_shape(f"{name}.weight_scale", scale.shape, (n, -(-k // 32)), "MXFP8 E8M0 scales")
        else:
            scale = _scalar(scale, f"{name}.weight_scale").reshape(1, 1)
        return CanonicalWeight(spec, n, k, byte_codes_to_words(weight), scale, bias=bias)

    def extras(self, name: str) -> dict[str, torch.Tensor]:
        key = f"{name}.input_scale"
        return {"input_scale": self.tensors.get(key)} if key in self.tensors else {}
