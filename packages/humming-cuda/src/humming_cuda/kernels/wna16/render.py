"""Render a WnA16 translation unit: one include plus one explicit entry point with the config baked in."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from .config import (
    CXX_TYPES,
    EPI_SCALE_CODES,
    KIND_CODES,
    ZERO_CODES,
    KernelFormat,
    Wna16Config,
)

# HUMMING_DIALECT values of include/humming/arith/dialect.cuh, as the first line of a source.
DIALECT_DEFINES = {
    "nvidia": "",
    "ppu": "#define HUMMING_DIALECT 1\n",
    "ppu_emulation": "#define HUMMING_DIALECT 2\n",
}
DIALECTS = tuple(DIALECT_DEFINES)


def template_arguments(fmt: KernelFormat, cfg: Wna16Config) -> tuple[str, str, str, str]:
    """(activation type, WeightFormat<...>, TileShape<...>, EpilogueShape<...>) as C++ text."""
    weight = (
        f"humming::WeightFormat<{fmt.bits}, {KIND_CODES[fmt.kind]}, {fmt.exponent}, "
        f"{fmt.mantissa}, {ZERO_CODES[fmt.zero]}, {max(fmt.group, 0)}>"
    )
    tile = (
        f"humming::TileShape<{cfg.m_frags}, {cfg.warps_n}, {cfg.warps_k}, {cfg.k_steps}, "
        f"{cfg.stages}>"
    )
    epi = (
        f"humming::EpilogueShape<{CXX_TYPES[fmt.out]}, {EPI_SCALE_CODES[fmt.epi_scale]}, "
        f"{str(fmt.epi_global).lower()}, {str(fmt.bias).lower()}>"
    )
    return CXX_TYPES[fmt.act], weight, tile, epi


def render(
    spec: QuantSpec, config: Wna16Config, caps: DeviceCaps, dialect: str = "nvidia"
) -> KernelSource:
    """One WnA16 kernel. `dialect` (DIALECTS) selects the instruction forms; "nvidia" renders no
    dialect define, so its source (and cubin) is byte-identical to the H200-verified kernels.
    "ppu" and "ppu_emulation" need weights packed in the PPU row order (humming_ppu's layout)."""
    if dialect not in DIALECTS:
        raise ValueError(
            f"dialect={dialect!r} is not a WnA16 dialect: use one of {', '.join(DIALECTS)}"
        )
    if config.arch != caps.arch:
        raise ValueError(
            f"config.arch={config.arch!r} but rendering for {caps.arch!r}: choose candidates for "
            "the target arch (config.arch must equal caps.arch)"
        )
    fmt = KernelFormat.from_spec(spec)
    act, weight, tile, epi = template_arguments(fmt, config)
    key = f"{act}|{weight}|{tile}|{epi}" + ("" if dialect == "nvidia" else f"|{dialect}")
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    name = f"humming_wna16_{digest}"
    code = (
        DIALECT_DEFINES[dialect] + '#include "humming/kernel/wna16.cuh"\n'
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"using Epi = {epi};\n"
        f"HUMMING_WNA16_ENTRY({name}, {act}, Fmt, Tile, Epi)\n"
    )
    meta = {"family": "wna16", "config": config.model_dump(), "spec": spec.to_json()}
    if dialect != "nvidia":
        meta["dialect"] = dialect
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
