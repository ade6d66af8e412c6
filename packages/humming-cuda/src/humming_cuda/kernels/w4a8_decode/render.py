"""Render a W4A8 decode translation unit: w8a8's activation quantizer entries plus one decode GEMM
entry (NVIDIA only)."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..w8a8.config import CXX_OUT, W8a8Format
from ..w8a8.render import check_weight_bits, template_arguments
from .config import W4a8DecodeConfig

# humming::WeightKind of the codes the W4A8 layout holds (its nibble table does not say)
WEIGHT_KINDS = {"int4": 0, "uint4": 1, "e2m1": 2}


def render(spec: QuantSpec, config: W4a8DecodeConfig, caps: DeviceCaps) -> KernelSource:
    check_config_arch(config, caps)
    fmt = W8a8Format.from_spec(spec)
    check_weight_bits(config, fmt)
    weight, tile = template_arguments(fmt, config)
    kind = WEIGHT_KINDS[fmt.weight]
    key = f"{weight}|{tile}|{fmt.out}|{fmt.bias}|{fmt.act}|{kind}|{config.tokens}|{config.slabs}"
    name = f"humming_w4a8_decode_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        '#include "humming/kernel/act_quant.cuh"\n'
        '#include "humming/kernel/w4a8_decode.cuh"\n'
        f"{fmt.act.entries(name)}"
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"HUMMING_W4A8_DECODE_ENTRY({name}, Fmt, Tile, {CXX_OUT[fmt.out]}, "
        f"{str(fmt.bias).lower()}, {kind}, {config.tokens}, {config.slabs})\n"
    )
    meta = {"family": "w4a8_decode", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
