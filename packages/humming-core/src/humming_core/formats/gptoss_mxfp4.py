"""gpt-oss MXFP4 MoE checkpoints (`quant_method: "mxfp4"`, openai/gpt-oss-20b and -120b).

Per MoE layer, for P in {gate_up_proj, down_proj} under `<layer>.mlp.experts.`:
`P_blocks` uint8 (E, N, K/32, 16), `P_scales` uint8 E8M0 (E, N, K/32), `P_bias` bf16 (E, N), with
N = 2I, K = H for gate_up_proj and N = H, K = I for down_proj. Everything else (attention, router,
embeddings) is stored in 16 bits and read as plain tensors.

Conventions, as followed from transformers' `integrations/mxfp4.py` (`_convert_moe_packed_tensors`,
whose comment says it was copied from the gpt-oss reference and vLLM) and vLLM's gpt-oss loader:
- byte j of a 16-byte block holds elements 2j (low nibble) and 2j + 1 (high nibble) of its group
  of 32 along K; the E2M1 code is the nibble itself (sign in bit 3): the canonical bitstream, so
  the blocks are only reshaped to (E, N, K/2) bytes and regrouped into int32 words;
- the value is e2m1 · 2^(scale − 127) (`torch.ldexp(lut[nibble], scale − 127)`);
- gate and up are interleaved row by row: row 2i of gate_up_proj is gate_i, row 2i + 1 is up_i
  (transformers `GptOssExperts._apply_gate`: `gate, up = gate_up[..., ::2], gate_up[..., 1::2]`;
  vLLM narrows `w13` rows as `2 * tp_rank_start : 2 * tp_rank_end`, keeping the pairs).
We keep them interleaved (no data movement; tensor-parallel slices stay contiguous) and say so in
the spec: `glu_layout="interleaved"` with gpt-oss's clamped SwiGLU `glu="swiglu_oai"`
(limit = config `swiglu_limit`, alpha 1.702). down_proj adds its bias before the router weight
multiplies the expert output (`epilogue.topk_weight`).
"""

from __future__ import annotations

import torch

from ..packing import CanonicalWeight
from ..spec import ActSpec, EpilogueSpec, QuantSpec, ScaleSpec, WeightSpec
from .base import CheckpointFormat, QuantLayer, register
from .common import model_act_dtype, nibble_bytes_to_words
from .errors import FormatError, expect_dtype, expect_shape

_PARTS = ("_blocks", "_scales", "_bias")
_MXFP4 = WeightSpec(dtype="e2m1", scale=ScaleSpec(granularity="group", group_size=32, dtype="e8m0"))
SWIGLU_ALPHA = 1.702  # fixed in gpt-oss (reference `swiglu`, vLLM `swigluoai_and_mul`)


@register
class GptOssMXFP4Format(CheckpointFormat):
    methods = ("mxfp4",)
    name = "gpt-oss-mxfp4"

    def __init__(self, ckpt) -> None:
        super().__init__(ckpt)
        self.act = ActSpec(dtype=model_act_dtype(ckpt.model_config))
        self.limit = float(ckpt.model_config.get("swiglu_limit", 7.0))

    def _epilogue(self, name: str, has_bias: bool) -> EpilogueSpec:
        if name.endswith("gate_up_proj"):
            return EpilogueSpec(
                bias=has_bias,
                glu="swiglu_oai",
                glu_layout="interleaved",
                swiglu_limit=self.limit,
                swiglu_alpha=SWIGLU_ALPHA,
            )
        return EpilogueSpec(bias=has_bias, topk_weight=True)

    def find_layers(self) -> list[QuantLayer]:
        found = []
        for key in self.tensors.names():
            if not key.endswith("_blocks"):
                continue
            name = key.removesuffix("_blocks")
            shape = self.tensors.shape(key)
            if len(shape) != 4 or shape[3] != 16:
                raise FormatError(
                    f"tensor {key!r} has shape {shape}, expected (experts, N, K/32, 16): gpt-oss "
                    "MXFP4 stores 16 bytes (32 E2M1 codes) per block"
                )
            experts, n, blocks, _ = shape
            spec = QuantSpec(
                weight=_MXFP4,
                act=self.act,
                layout="moe",
                epilogue=self._epilogue(name, f"{name}_bias" in self.tensors),
            )
            found.append(QuantLayer(name, spec, n, blocks * 32, experts))
        if not found:
            raise FormatError(
                f"{self.ckpt.path}: quant_method 'mxfp4' but no '*_blocks' tensors: humming reads "
                "the gpt-oss MoE layout (mlp.experts.gate_up_proj_blocks, ...)"
            )
        return sorted(found, key=lambda layer: layer.name)

    def load(self, name: str) -> CanonicalWeight:
        layer = self.layer(name)
        e, n, k = layer.experts, layer.n, layer.k
        blocks = self.tensors.get(f"{name}_blocks")
        scales = self.tensors.get(f"{name}_scales")
        expect_dtype(f"{name}_blocks", blocks.dtype, (torch.uint8,))
        expect_dtype(f"{name}_scales", scales.dtype, (torch.uint8,))
        expect_shape(
            f"{name}_scales",
            scales.shape,
            (e, n, k // 32),
            "one E8M0 scale per block of 32 along K",
        )
        bias = self.tensors.get_optional(f"{name}_bias")
        if bias is not None:
            expect_shape(f"{name}_bias", bias.shape, (e, n), "one bias per expert and output row")
        qweight = nibble_bytes_to_words(blocks.reshape(e, n, k // 2), k)
        return CanonicalWeight(layer.spec, n, k, qweight, scales, bias=bias)

    def plain_tensors(self) -> list[str]:
        owned = {layer.name + part for layer in self.layers() for part in _PARTS}
        return [key for key in self.tensors.names() if key not in owned]
