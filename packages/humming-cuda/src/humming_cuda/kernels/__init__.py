"""Registered kernel families, in the order CudaDevice asks them (first supporting family wins).

A family module appends itself here with one import line below; nothing else in humming_cuda
names a family.
"""

from __future__ import annotations

from .base import KernelConfig, KernelFamily, WeightLayout

FAMILIES: list[KernelFamily] = []

from .wna16 import FAMILY as _WNA16  # noqa: E402  (families import .base, defined above)

FAMILIES.append(_WNA16)

from .w8a8 import FAMILY as _W8A8  # noqa: E402

FAMILIES.append(_W8A8)

from .moe_wna16 import FAMILY as _MOE_WNA16  # noqa: E402

FAMILIES.append(_MOE_WNA16)

from .w4a4 import FAMILY as _W4A4  # noqa: E402

FAMILIES.append(_W4A4)


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
