"""Render a W8A8-wgmma translation unit: the activation quantizer entries plus one GEMM entry."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..w8a8.config import CXX_OUT, WEIGHT_SCALE_CODES, W8a8Format
from .config import BLOCK_M, BLOCK_N, W8a8WgmmaConfig


def template_arguments(fmt: W8a8Format, cfg: W8a8WgmmaConfig) -> tuple[str, str]:
    """(WgmmaFp8Format<...>, WgmmaFp8Tile<...>) as C++ text."""
    weight = (
        f"humming::WgmmaFp8Format<{WEIGHT_SCALE_CODES[fmt.weight_scale]}, "
        f"{str(fmt.act_group).lower()}>"
    )
    extra = ""
    if cfg.cluster_split:  # never persistent or staged (the config refuses them)
        extra = f", {cfg.consumers}, false, false, {cfg.tile_cols}, true"
    elif cfg.split_scatter:  # neither (the config refuses them), nor in clusters
        extra = f", {cfg.consumers}, false, false, {cfg.tile_cols}, false, true"
    elif cfg.tile_cols != BLOCK_N:
        staged, persistent = str(cfg.staged_store).lower(), str(cfg.persistent).lower()
        extra = f", {cfg.consumers}, {persistent}, {staged}, {cfg.tile_cols}"
    elif cfg.staged_store:
        extra = f", {cfg.consumers}, {str(cfg.persistent).lower()}, true"
    elif cfg.persistent:
        extra = f", {cfg.consumers}, true"
    elif cfg.tile_rows != BLOCK_M:
        extra = f", {cfg.consumers}"
    return weight, f"humming::WgmmaFp8Tile<{cfg.stages}, {cfg.group_m}{extra}>"


def render(spec: QuantSpec, config: W8a8WgmmaConfig, caps: DeviceCaps) -> KernelSource:
    """One module: quantizer entries (fp16 / bf16 x) and the GEMM entry, for sm_90a."""
    check_config_arch(config, caps)
    fmt = W8a8Format.from_spec(spec)
    weight, tile = template_arguments(fmt, config)
    key = f"{weight}|{tile}|{fmt.out}|{fmt.bias}|{fmt.act}"
    name = f"humming_w8a8_wgmma_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        '#include "humming/kernel/act_quant.cuh"\n'
        '#include "humming/kernel/w8a8_wgmma.cuh"\n'
        f"{fmt.act.entries(name)}"
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"HUMMING_W8A8_WGMMA_ENTRY({name}, Fmt, Tile, {CXX_OUT[fmt.out]}, "
        f"{str(fmt.bias).lower()})\n"
    )
    meta = {"family": "w8a8_wgmma", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
