"""Render a W4A4 translation unit: the 4-bit activation quantizer entries plus one GEMM entry."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from .config import CXX_OUT, PATH_CODES, W4a4Config, W4a4Format


def template_arguments(fmt: W4a4Format, cfg: W4a4Config) -> tuple[str, str]:
    """(W4a4Format<...>, W8a8Tile<...>) as C++ text (W4A4 stages reuse the W8A8 tile shape)."""
    weight = (
        f"humming::W4a4Format<{PATH_CODES[fmt.path]}, {fmt.a_group}, "
        f"{str(fmt.w_grouped).lower()}, {fmt.w_group if fmt.w_grouped else 0}>"
    )
    tile = (
        f"humming::W8a8Tile<{cfg.m_frags}, {cfg.n_frags}, {cfg.warps_m}, {cfg.warps_n}, "
        f"{cfg.stages}>"
    )
    return weight, tile


def render(spec: QuantSpec, config: W4a4Config, caps: DeviceCaps) -> KernelSource:
    check_config_arch(config, caps)
    fmt = W4a4Format.from_spec(spec)
    weight, tile = template_arguments(fmt, config)
    key = f"{weight}|{tile}|{fmt.out}|{fmt.bias}|{fmt.act}"
    name = f"humming_w4a4_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        '#include "humming/kernel/act_quant4.cuh"\n'
        '#include "humming/kernel/w4a4.cuh"\n'
        f"{fmt.act.entries(name)}"
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"HUMMING_W4A4_ENTRY({name}, Fmt, Tile, {CXX_OUT[fmt.out]}, {str(fmt.bias).lower()})\n"
    )
    meta = {"family": "w4a4", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
