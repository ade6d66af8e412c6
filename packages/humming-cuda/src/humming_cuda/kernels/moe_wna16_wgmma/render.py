"""Render a MoE WnA16-wgmma translation unit: the header plus one entry with the config baked in."""

from __future__ import annotations

import hashlib

from humming_core.device import DeviceCaps, KernelSource
from humming_core.spec import QuantSpec

from ..family import check_config_arch
from ..moe_wna16.config import epilogue_policy, row_scale_key, row_scaled
from ..wna16.config import CXX_TYPES, KernelFormat
from ..wna16_wgmma.render import template_arguments
from .config import MoeWna16WgmmaConfig, block_ms, smem_bytes


def render(
    spec: QuantSpec, config: MoeWna16WgmmaConfig, caps: DeviceCaps, row_scale: str | None = None
) -> KernelSource:
    """One kernel for `spec` (layout 'moe') and `config` on sm_90a; the group size is a launch
    argument (group_shift), not in the source. `row_scale`: as moe_wna16.render's."""
    check_config_arch(config, caps)
    fmt = KernelFormat.from_spec(spec)
    allowed = block_ms(fmt, row_scale is not None)
    if not config.e4m3 and config.block_m not in allowed:
        raise ValueError(
            f"block_m={config.block_m}: moe_wna16_wgmma builds {allowed} row blocks for "
            f"{spec.weight.dtype.name} codes with zero points {fmt.zero!r} and row scale "
            f"{row_scale!r} (its producer keeps 80 registers, too few consumer registers are left "
            "for wider tiles)"
        )
    weight, tile = template_arguments(fmt, config.dense)
    act, out, bias = CXX_TYPES[fmt.act], CXX_TYPES[fmt.out], str(fmt.bias).lower()
    policy = row_scaled(epilogue_policy(spec), row_scale)
    header, macro, act_arg = "moe_wna16_wgmma", "HUMMING_MOE_WNA16_WGMMA_ENTRY", f"{act}, "
    if config.e4m3:
        # x holds e4m3 codes; the act type (bf16, the codes spec's) is the scales' type only
        ctas = f", {config.ctas_per_sm}" if config.ctas_per_sm != 1 else ""
        tile = f"humming::WgmmaE4m3RsTile<{config.stages}, {config.block_m}{ctas}>"
        header, macro, act_arg = "moe_wna16_wgmma_e4m3", "HUMMING_MOE_WNA16_WGMMA_E4M3_ENTRY", ""
    key = f"moe|{weight}|{tile}|{act}|{out}|{bias}|{policy}{row_scale_key(row_scale)}"
    name = f"humming_moe_wna16_wgmma_{hashlib.sha1(key.encode()).hexdigest()[:16]}"
    # aliases: the template arguments hold commas, which would split the macro's arguments
    code = (
        f'#include "humming/kernel/{header}.cuh"\n'
        f"using Fmt = {weight};\n"
        f"using Tile = {tile};\n"
        f"using Policy = {policy};\n"
        f"{macro}({name}, Fmt, Tile, {act_arg}{out}, {bias}, Policy)\n"
        # the launch reserves smem_bytes: the layout of the kernel must take exactly that
        f"static_assert(humming::MoeWna16WgmmaKernel<Fmt, Tile, {act}, {out}, {bias}, Policy>::"
        f'SMEM_BYTES == {smem_bytes(fmt, config)}, "the launch reserves other shared memory");\n'
    )
    meta = {"family": "moe_wna16_wgmma", "config": config.model_dump(), "spec": spec.to_json()}
    return KernelSource(name=name, code=code, arch=config.arch, meta=meta)
