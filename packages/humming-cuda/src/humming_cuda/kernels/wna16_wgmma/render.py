"""Render a WnA16-wgmma translation unit: one GEMM entry for sm_90a."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..wna16.config import CXX_TYPES, EPI_SCALE_CODES, ZERO_CODES, KernelFormat
from .bind import group_shift
from .config import WgmmaWna16Config


def template_arguments(fmt: KernelFormat, cfg: WgmmaWna16Config) -> tuple[str, str]:
    """(WgmmaWna16Format<...>, WgmmaWna16Tile<...>) as C++ text."""
    offset = 1 << (fmt.bits - 1) if fmt.kind == "int" else 0  # signed codes are offset-binary
    # float codes append (true, exponent, mantissa); integer ones keep the defaults, so their
    # sources (and kernels) are the ones verified before float codes were added
    floats = f", true, {fmt.exponent}, {fmt.mantissa}" if fmt.kind == "float" else ""
    # the group in the source: the register-A loop knows which slices start a scale row
    if fmt.group > 0:
        floats = f"{floats or ', false, 0, 0'}, {group_shift(fmt)}"
    weight = (
        f"humming::WgmmaWna16Format<{fmt.bits}, {ZERO_CODES[fmt.zero]}, {offset}, "
        f"{str(fmt.group > 0).lower()}, {EPI_SCALE_CODES[fmt.epi_scale]}, "
        f"{str(fmt.epi_global).lower()}{floats}>"
    )
    if cfg.weights_in_registers:
        producer = str(bool(cfg.rs_producer)).lower()
        # one CTA per SM and two consumer warpgroups are the template's defaults: those sources
        # stay the verified ones; so is no split-scatter form (only its configs launch it)
        tail = [cfg.rs_ctas_per_sm] if cfg.rs_ctas_per_sm != 1 else []
        if cfg.consumers != 2 or cfg.rs_cluster_split or cfg.rs_split_scatter:
            tail = [cfg.rs_ctas_per_sm, cfg.consumers]
        if cfg.rs_cluster_split:
            tail.append("true")
        if cfg.rs_split_scatter:
            tail += ["false", "true"]
        extra = "".join(f", {v}" for v in tail)
        return weight, (
            f"humming::WgmmaWna16RsTile<{cfg.stages}, {cfg.group_m}, {producer}, "
            f"{cfg.rs_frag_buffers}, {cfg.rs_block_m}{extra}>"
        )
    return weight, f"humming::WgmmaWna16Tile<{cfg.stages}, {cfg.group_m}>"


def render(spec: QuantSpec, config: WgmmaWna16Config, caps: DeviceCaps) -> KernelSource:
    """One module with the GEMM entry; the group size is in the source (Fmt::GROUP_SHIFT) as well
    as a launch argument (the shared-memory form reads that)."""
    check_config_arch(config, caps)
    fmt = KernelFormat.from_spec(spec)
    if fmt.bits > config.rs_code_bits:
        raise ValueError(
            f"{spec.weight}: {fmt.bits}-bit codes, but the config's ring stages are sized for "
            f"codes of up to rs_code_bits={config.rs_code_bits} bits; take rs_code_bits >= "
            f"{fmt.bits} (8 fits any spec)"
        )
    weight, tile = template_arguments(fmt, config)
    act, out = CXX_TYPES[fmt.act], CXX_TYPES[fmt.out]
    key = f"{weight}|{tile}|{act}|{out}|{fmt.bias}"
    if config.rs_stream_k:  # the same tile in another kernel: another name
        key += "|stream"
    name = f"humming_wna16_wgmma_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    if config.rs_stream_k:
        header, entry = "wna16_wgmma_stream", "HUMMING_WNA16_WGMMA_STREAM_ENTRY"
    elif config.weights_in_registers:
        header, entry = "wna16_wgmma_rs", "HUMMING_WNA16_WGMMA_RS_ENTRY"
    else:
        header, entry = "wna16_wgmma", "HUMMING_WNA16_WGMMA_ENTRY"
    code = (
        f'#include "humming/kernel/{header}.cuh"\n'
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"{entry}({name}, Fmt, Tile, {act}, {out}, {str(fmt.bias).lower()})\n"
    )
    if config.rs_code_bits < 8:
        # stages sized for this spec's codes: the launch must still reserve all the kernel uses
        kernel = "Wna16WgmmaStreamKernel" if config.rs_stream_k else "Wna16WgmmaRsKernel"
        code += (
            f"static_assert(humming::{kernel}<Fmt, Tile, {act}, {out}, "
            f"{str(fmt.bias).lower()}>::SMEM_BYTES <= {config.smem_bytes}, "
            '"the launch reserves less shared memory than the kernel uses");\n'
        )
    meta = {"family": "wna16_wgmma", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
