"""Render a decode WnA16 translation unit (NVIDIA only: the PPU dialects render the wna16 family)."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..wna16.config import KernelFormat
from ..wna16.render import template_arguments
from .config import Wna16DecodeConfig


def render(spec: QuantSpec, config: Wna16DecodeConfig, caps: DeviceCaps) -> KernelSource:
    check_config_arch(config, caps)
    fmt = KernelFormat.from_spec(spec)
    act, weight, tile, epi = template_arguments(fmt, config)
    key = f"{act}|{weight}|{tile}|{epi}|{config.tokens}"
    if config.ctas_per_sm != 2:  # the names of the two-CTA kernels stay as they were
        key += f"|{config.ctas_per_sm}"
    name = f"humming_wna16_decode_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        '#include "humming/kernel/wna16_decode.cuh"\n'
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"using Epi = {epi};\n"
        f"HUMMING_WNA16_DECODE_ENTRY({name}, {act}, Fmt, Tile, Epi, {config.tokens}, "
        f"{config.ctas_per_sm})\n"
    )
    meta = {"family": "wna16_decode", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
