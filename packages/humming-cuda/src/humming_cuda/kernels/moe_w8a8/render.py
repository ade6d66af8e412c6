"""Render a MoE W8A8 / W4A8 translation unit: the activation quantizer entries plus one MoE entry."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..moe_wna16.config import epilogue_policy
from ..w8a8.config import CXX_OUT, W8a8Format
from ..w8a8.render import check_weight_bits, template_arguments
from .config import MoeW8a8Config


def render(spec: QuantSpec, config: MoeW8a8Config, caps: DeviceCaps) -> KernelSource:
    """One MoE W8A8 module for `spec` (layout 'moe') and `config` on `caps.arch`."""
    check_config_arch(config, caps)
    fmt = W8a8Format.from_spec(spec)
    check_weight_bits(config, fmt)
    weight, tile = template_arguments(fmt, config)
    policy = epilogue_policy(spec)
    key = f"moe|{weight}|{tile}|{fmt.out}|{fmt.bias}|{fmt.act}|{policy}"
    name = f"humming_moe_w8a8_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        '#include "humming/kernel/act_quant.cuh"\n'
        '#include "humming/kernel/moe_w8a8.cuh"\n'
        f"{fmt.act.entries(name)}"
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"using Act = {policy};\n"
        f"HUMMING_MOE_W8A8_ENTRY({name}, Fmt, Tile, {CXX_OUT[fmt.out]}, "
        f"{str(fmt.bias).lower()}, Act)\n"
    )
    meta = {"family": "moe_w8a8", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
