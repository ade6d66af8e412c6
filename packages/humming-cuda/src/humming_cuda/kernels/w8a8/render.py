"""Render a W8A8 / W4A8 translation unit: the activation quantizer entries plus one GEMM entry."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..wna16.render import DIALECT_DEFINES, DIALECTS
from .config import CODE_CODES, CXX_OUT, WEIGHT_SCALE_CODES, W8a8Config, W8a8Format
from .nibbles import nibble_table, table_words


def _format_argument(fmt: W8a8Format) -> str:
    head = (
        f"humming::W8a8Format<{CODE_CODES[fmt.code]}, {str(fmt.act_group).lower()}, "
        f"{WEIGHT_SCALE_CODES[fmt.weight_scale]}"
    )
    if fmt.weight_bits == 8:
        return head + ">"
    words = ", ".join(
        f"0x{w:08x}u" for w in table_words(nibble_table(fmt.weight, fmt.code, fmt.zero))
    )
    nibbles = f"humming::W4Nibbles<{str(fmt.zero).lower()}, {words}>"
    return f"{head}, {nibbles}, {fmt.group}>"


def template_arguments(fmt: W8a8Format, cfg: W8a8Config) -> tuple[str, str]:
    """(W8a8Format<...>, W8a8Tile<...>) as C++ text."""
    weight = _format_argument(fmt)
    split = ", true" if cfg.split_k > 1 else ""  # split or not is compiled in; how many is not
    tile = (
        f"humming::W8a8Tile<{cfg.m_frags}, {cfg.n_frags}, {cfg.warps_m}, {cfg.warps_n}, "
        f"{cfg.stages}{split}>"
    )
    return weight, tile


def _check_dialect(fmt: W8a8Format, dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ValueError(
            f"dialect={dialect!r} is not a W8A8 dialect: use one of {', '.join(DIALECTS)}"
        )
    if dialect != "nvidia" and fmt.code != "int8":
        raise ValueError(
            f"dialect={dialect!r} with {fmt.code} activations: the PPU has no fp8 MMA, so its "
            "dialects render int8 x int8 (W8A8-int8, W4A8-int8) only; use dialect='nvidia'"
        )


def check_weight_bits(config: W8a8Config, fmt: W8a8Format) -> None:
    """The config's tile was chosen for the spec's weight width (4- and 8-bit weights differ)."""
    if config.weight_bits != fmt.weight_bits:
        raise ValueError(
            f"config.weight_bits={config.weight_bits} but the spec's {fmt.weight} weights have "
            f"{fmt.weight_bits} bits: choose candidates for this spec"
        )


def render(
    spec: QuantSpec, config: W8a8Config, caps: DeviceCaps, dialect: str = "nvidia"
) -> KernelSource:
    """One W8A8 / W4A8 module. `dialect` (the WnA16 family's DIALECTS) selects the instruction
    forms; "nvidia" renders no dialect define, so its source (and cubin) is byte-identical to the
    H200-verified kernels. "ppu" and "ppu_emulation" (int8 activations only) need weights stored in
    the PPU row order (humming_ppu's layout)."""
    check_config_arch(config, caps)
    fmt = W8a8Format.from_spec(spec)
    check_weight_bits(config, fmt)
    _check_dialect(fmt, dialect)
    weight, tile = template_arguments(fmt, config)
    key = f"{weight}|{tile}|{fmt.out}|{fmt.bias}|{fmt.act}"
    key += "" if dialect == "nvidia" else f"|{dialect}"
    name = f"humming_w8a8_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    code = (
        DIALECT_DEFINES[dialect] + '#include "humming/kernel/act_quant.cuh"\n'
        '#include "humming/kernel/w8a8.cuh"\n'
        f"{fmt.act.entries(name)}"
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"HUMMING_W8A8_ENTRY({name}, Fmt, Tile, {CXX_OUT[fmt.out]}, {str(fmt.bias).lower()})\n"
    )
    meta = {"family": "w8a8", "config": config.model_dump(), "spec": spec.to_json()}
    if dialect != "nvidia":
        meta["dialect"] = dialect
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
