"""Render a MoE W4A8 module: the activation quantizer entries, then the inner WnA16 MoE kernel with
a row-scaled epilogue policy, for the codes spec (bf16 activations)."""

from __future__ import annotations

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..moe_wna16.render import render as render_moe_wna16
from ..moe_wna16_wgmma.render import render as render_moe_wna16_wgmma
from .config import MoeWna16A8Config
from .heuristics import codes_spec, quant_format

INNER_RENDERS = {"moe_wna16": render_moe_wna16, "moe_wna16_wgmma": render_moe_wna16_wgmma}


def render(spec: QuantSpec, config: MoeWna16A8Config, caps: DeviceCaps) -> KernelSource:
    check_config_arch(config, caps)
    quant = quant_format(spec, e4m3=getattr(config.inner, "e4m3", False))
    inner = INNER_RENDERS[config.inner.family](
        codes_spec(spec), config.inner, caps, row_scale=repr(quant)
    )
    code = quant.include + quant.entries(inner.name) + inner.code
    meta = {"family": "moe_wna16_a8", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=inner.name, code=code, arch=config.arch, meta=meta)
