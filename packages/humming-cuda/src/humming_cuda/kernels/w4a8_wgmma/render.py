"""Render a W4A8-wgmma translation unit: the activation quantizer entries plus one GEMM entry."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..w8a8.config import CXX_OUT, W8a8Format
from ..w8a8.nibbles import nibble_table, table_words
from .config import BLOCK_M, W4a8WgmmaConfig


def template_arguments(fmt: W8a8Format, cfg: W4a8WgmmaConfig) -> tuple[str, str]:
    """(WgmmaW4a8Format<...>, WgmmaW4a8Tile<...>) as C++ text."""
    words = ", ".join(f"0x{w:08x}u" for w in table_words(nibble_table(fmt.weight, fmt.code, False)))
    weight = f"humming::WgmmaW4a8Format<{fmt.group}, {words}>"
    reg_a = ", true" if cfg.weights_in_registers else ""
    if cfg.cluster_split or cfg.split_scatter:  # the out^T form, no staged rows (as validated)
        turns = str(cfg.issue_turns).lower()
        tile = f", true, {cfg.rs_block_m}, {cfg.rs_ctas_per_sm}, false, {turns}, "
        tile += "true" if cfg.cluster_split else "false, true"
        return weight, f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}{tile}>"
    # the 128-token tiles' text (and so their kernels' names) stay as they were
    if cfg.rs_block_m != BLOCK_M or cfg.rs_ctas_per_sm != 1 or cfg.staged_store or cfg.issue_turns:
        reg_a = f", {str(cfg.weights_in_registers).lower()}, {cfg.rs_block_m}, {cfg.rs_ctas_per_sm}"
    # the header refuses either without the out^T form (static_asserts)
    if cfg.staged_store or cfg.issue_turns:
        reg_a += f", {str(cfg.staged_store).lower()}"
    if cfg.issue_turns:
        reg_a += ", true"
    return weight, f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}{reg_a}>"


def render(spec: QuantSpec, config: W4a8WgmmaConfig, caps: DeviceCaps) -> KernelSource:
    """One module: quantizer entries (fp16 / bf16 x) and the GEMM entry, for sm_90a."""
    check_config_arch(config, caps)
    fmt = W8a8Format.from_spec(spec)
    weight, tile = template_arguments(fmt, config)
    key = f"{weight}|{tile}|{fmt.out}|{fmt.bias}|{fmt.act}"
    name = f"humming_w4a8_wgmma_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        '#include "humming/kernel/act_quant.cuh"\n'
        '#include "humming/kernel/w4a8_wgmma.cuh"\n'
        f"{fmt.act.entries(name)}"
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"HUMMING_W4A8_WGMMA_ENTRY({name}, Fmt, Tile, {CXX_OUT[fmt.out]}, "
        f"{str(fmt.bias).lower()})\n"
    )
    meta = {"family": "w4a8_wgmma", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
