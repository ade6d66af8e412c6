"""HF fine-grained FP8 checkpoints (DeepSeek-V3 style, transformers `FineGrainedFP8Config`, Qwen3-FP8):
`quant_method: "fp8"` with `weight_block_size: [bn, bk]` and `activation_scheme: "dynamic"`.

Stored per layer: `weight` float8_e4m3fn (N, K); `weight_scale_inv` (ceil(N/bn), ceil(K/bk)), fp32
(or, with `scale_fmt: "ue8m0"`, powers of two, possibly stored as raw e8m0 bytes); optional `bias`.
Despite its name `weight_scale_inv` is a multiplier: w = e4m3 · weight_scale_inv[n // bn, k // bk]
(transformers `Fp8Dequantize._dequantize_one`, DeepSeek-V3 `weight_dequant`). The block scales are
kept as block scales — expanding them to per-row groups in a 16-bit type would round them.

Activations are quantized at run time per token and per bk columns of K (e4m3, fp32 scales): the
FP8_BLOCK128 preset for 128×128 blocks.
"""

from __future__ import annotations

import torch

from ..packing import CanonicalWeight
from ..spec import ActSpec, EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .common import byte_codes_to_words, model_act_dtype
from .errors import FormatError, expect_dtype, expect_shape

_SCALE_DTYPES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def e8m0_bytes_to_fp32(codes: torch.Tensor, name: str) -> torch.Tensor:
    """Raw e8m0 scale bytes as fp32 values 2^(c − 127), exactly (fp32 subnormals reach 2^-149)."""
    if bool((codes == 255).any()):
        raise FormatError(f"{name}: e8m0 scale code 255 (NaN) found; the checkpoint is corrupt")
    return torch.exp2(codes.to(torch.float64) - 127).to(torch.float32)


@register
class FP8BlockFormat(CheckpointFormat):
    methods = ("fp8",)
    name = "fp8-block"

    def __init__(self, ckpt) -> None:
        super().__init__(ckpt)
        cfg = ckpt.config
        block = cfg.get("weight_block_size")
        if not block or len(block) != 2:
            raise FormatError(
                f"{ckpt.path}: quant_method 'fp8' without weight_block_size=[bn, bk] (got {block!r}): "
                "humming reads the block-scaled layout (e.g. [128, 128]); per-tensor FP8 checkpoints "
                "are read through compressed-tensors or ModelOpt"
            )
        scheme = cfg.get("activation_scheme", "dynamic")
        if scheme != "dynamic":
            raise FormatError(
                f"{ckpt.path}: fp8 activation_scheme {scheme!r} with block weights: only 'dynamic' "
                "(per-token, per-block-of-K activation scales) is defined for block FP8"
            )
        fmt = cfg.get("fmt", "e4m3")
        if fmt != "e4m3":
            raise FormatError(f"{ckpt.path}: fp8 fmt {fmt!r} is not supported: only 'e4m3'")
        self.block = (int(block[0]), int(block[1]))
        self.wide = model_act_dtype(ckpt.model_config)

    def _spec(self, prefix: str, scale_dtype: str) -> QuantSpec:
        try:
            scale = ScaleSpec(granularity="block", block=self.block, dtype=scale_dtype)
            act = ActSpec(
                dtype="e4m3", quant="dynamic", granularity="group", group_size=self.block[1]
            )
        except ValueError as exc:
            raise FormatError(f"weight_block_size={list(self.block)}: {exc}") from None
        return QuantSpec(
            weight=WeightSpec(dtype="e4m3", scale=scale),
            act=act,
            epilogue=EpilogueSpec(bias=f"{prefix}.bias" in self.tensors, out_dtype=self.wide),
        )

    def find_layers(self) -> list[QuantLayer]:
        found = []
        for key in self.tensors.names():
            if not key.endswith(".weight_scale_inv"):
                continue
            prefix = key.removesuffix(".weight_scale_inv")
            shape = self.tensors.shape(f"{prefix}.weight")
            if len(shape) != 2:
                raise FormatError(
                    f"tensor '{prefix}.weight' has shape {shape}: block FP8 weights are (N, K)"
                )
            stored = self.tensors.infos[key].dtype
            # ue8m0 scales read as raw bytes become exact fp32 values; other dtypes stay as stored.
            scale_dtype = "bf16" if stored == "BF16" else "fp16" if stored == "F16" else "fp32"
            found.append(QuantLayer(prefix, self._spec(prefix, scale_dtype), *shape))
        return sorted(found, key=lambda layer: layer.name)

    def load(self, name: str) -> CanonicalWeight:
        layer = self.layer(name)
        n, k = layer.n, layer.k
        weight = self.tensors.get(f"{name}.weight")
        expect_dtype(f"{name}.weight", weight.dtype, (torch.float8_e4m3fn,))
        scales = self.tensors.get(f"{name}.weight_scale_inv")
        bn, bk = self.block
        expect_shape(
            f"{name}.weight_scale_inv",
            scales.shape,
            (-(-n // bn), -(-k // bk)),
            f"one scale per {bn}x{bk} block of a {n}x{k} weight (weight_block_size)",
        )
        if scales.dtype == torch.uint8:
            scales = e8m0_bytes_to_fp32(scales, f"{name}.weight_scale_inv")
        expect_dtype(f"{name}.weight_scale_inv", scales.dtype, tuple(_SCALE_DTYPES))
        bias = self.tensors.get_optional(f"{name}.bias")
        return CanonicalWeight(layer.spec, n, k, byte_codes_to_words(weight), scales, bias=bias)
