"""Render a MoE WnA16 translation unit: the MoE header plus one entry with the config baked in."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..wna16.config import KernelFormat
from ..wna16.render import template_arguments
from .config import MoeWna16Config, epilogue_policy, row_scale_key, row_scaled


def render(
    spec: QuantSpec, config: MoeWna16Config, caps: DeviceCaps, row_scale: str | None = None
) -> KernelSource:
    """One MoE WnA16 kernel for `spec` (layout 'moe') and `config` on `caps.arch`. `row_scale`
    (moe_wna16_a8: its activation quantizer, which enters the name): the epilogue first multiplies
    each routed row by its token's activation scale (MoeRowScaled)."""
    check_config_arch(config, caps)
    fmt = KernelFormat.from_spec(spec)
    act, weight, tile, epi = template_arguments(fmt, config)
    policy = row_scaled(epilogue_policy(spec), row_scale)
    key = f"moe|{act}|{weight}|{tile}|{epi}|{policy}{row_scale_key(row_scale)}"
    if config.tokens:
        key += f"|decode{config.tokens}"
        header, entry = (
            "moe_wna16_decode",
            f"HUMMING_MOE_WNA16_DECODE_ENTRY({{}}, {act}, Fmt, Tile, Epi, Act, {config.tokens})",
        )
    else:
        header, entry = "moe_wna16", f"HUMMING_MOE_WNA16_ENTRY({{}}, {act}, Fmt, Tile, Epi, Act)"
    name = f"humming_moe_wna16_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        f'#include "humming/kernel/{header}.cuh"\n'
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"using Epi = {epi};\n"
        f"using Act = {policy};\n"
        f"{entry.format(name)}\n"
    )
    meta = {"family": "moe_wna16", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
