"""Registered kernel families, in the order CudaDevice asks them (first supporting family wins).

A family module appends itself here with one import line below; nothing else in humming_cuda
names a family.
"""

from __future__ import annotations

from .base import KernelConfig, KernelFamily, WeightLayout

FAMILIES: list[KernelFamily] = []

# Before wna16 and wna16_decode: WnA16 problems on sm_90a with M >= 17 (>= 9 for 8-bit codes) take
# the wgmma kernels; everything else it refuses or leaves (`prefers`) falls through.
from .wna16_wgmma import FAMILY as _WNA16_WGMMA  # noqa: E402  (families import .base, defined above)

FAMILIES.append(_WNA16_WGMMA)

# Before wna16: decode-size problems in the out^T form (M <= 8, and M = 9-16 with per-channel
# scales or groups of 64 or more); wna16 takes the rest, and the float zero points this family
# refuses.
from .wna16_decode import FAMILY as _WNA16_DECODE  # noqa: E402

FAMILIES.append(_WNA16_DECODE)

from .wna16 import FAMILY as _WNA16  # noqa: E402

FAMILIES.append(_WNA16)

# Before w8a8: fp8 problems with M > 16 on sm_90a take the wgmma kernels (e4m3 weights here, int4 /
# E2M1 weights in w4a8_wgmma); everything else they refuse or leave falls
# through to w8a8.
from .w8a8_wgmma import FAMILY as _W8A8_WGMMA  # noqa: E402

FAMILIES.append(_W8A8_WGMMA)

from .w4a8_wgmma import FAMILY as _W4A8_WGMMA  # noqa: E402

FAMILIES.append(_W4A8_WGMMA)

# Before w8a8: W4A8 problems at M <= 16 in the out^T form on fp16 MMAs; w8a8 takes the rest.
from .w4a8_decode import FAMILY as _W4A8_DECODE  # noqa: E402

FAMILIES.append(_W4A8_DECODE)

from .w8a8 import FAMILY as _W8A8  # noqa: E402

FAMILIES.append(_W8A8)

# Before moe_wna16: MoE WnA16 problems on sm_90a with at least 32 expected routed rows per expert
# take the wgmma kernel; everything else it refuses or leaves (`prefers`) falls through to
# moe_wna16, whose packed weights it shares.
from .moe_wna16_wgmma import FAMILY as _MOE_WNA16_WGMMA  # noqa: E402

FAMILIES.append(_MOE_WNA16_WGMMA)

from .moe_wna16 import FAMILY as _MOE_WNA16  # noqa: E402

FAMILIES.append(_MOE_WNA16)

from .w4a4 import FAMILY as _W4A4  # noqa: E402

FAMILIES.append(_W4A4)

# Before moe_w8a8: MoE layers with 8-bit per-token activations and MX 4-bit weights run as exact
# bf16 codes on the WnA16 MoE kernels (1.7-2.6x moe_w8a8's speed on them across two runs,
# benchmarks/notes/session14.md).
from .moe_wna16_a8 import FAMILY as _MOE_WNA16_A8  # noqa: E402

FAMILIES.append(_MOE_WNA16_A8)

from .moe_w8a8 import FAMILY as _MOE_W8A8  # noqa: E402

FAMILIES.append(_MOE_W8A8)


def family_named(name: str) -> KernelFamily:
    """The registered family called `name` (a config's `family` field)."""
    for family in FAMILIES:
        if family.name == name:
            return family
    known = ", ".join(f.name for f in FAMILIES) or "none"
    raise KeyError(
        f"no cuda kernel family named {name!r}: registered families are {known}; a config's "
        "`family` field must name one of them"
    )


__all__ = ["FAMILIES", "KernelConfig", "KernelFamily", "WeightLayout", "family_named"]
