"""The humming-cuda kernel families the PPU devices offer, and the PPU layout of each.

One family per activation kind: 16-bit activations run WnA16, int8 activations W8A8 / W4A8
(int8 x int8 MMA). Both are humming-cuda's own families rendered in a PPU dialect (not forks);
dialect.check has already refused what the PPU cannot run (fp8 / fp4 / int4 activations).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec
from humming_cuda.kernels import KernelConfig, KernelFamily, WeightLayout
from humming_cuda.kernels.w8a8 import FAMILY as W8A8
from humming_cuda.kernels.wna16 import FAMILY as WNA16

from .layout import PpuW8a8Layout, PpuWna16Layout

FAMILIES: tuple[KernelFamily, ...] = (WNA16, W8A8)
_LAYOUTS = {WNA16.name: PpuWna16Layout, W8A8.name: PpuW8a8Layout}


def family_for(spec: QuantSpec) -> KernelFamily:
    """The family that runs `spec`: W8A8 for quantized (int8) activations, else WnA16."""
    return W8A8 if spec.act.is_quantized else WNA16


def family_named(name: str) -> KernelFamily:
    """The PPU family a config's or binding's `family` field names."""
    for family in FAMILIES:
        if family.name == name:
            return family
    known = ", ".join(f.name for f in FAMILIES)
    raise KeyError(
        f"no ppu kernel family named {name!r}: the PPU devices offer {known}; build the config "
        "with the device's own candidates()"
    )


def ppu_layout(spec: QuantSpec, config: KernelConfig, caps: DeviceCaps) -> WeightLayout:
    """The family's weight layout for `config`, wrapped to store rows in the PPU order."""
    family = family_named(config.family)
    return _LAYOUTS[family.name](family.weight_layout(spec, config, caps))
