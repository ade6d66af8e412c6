"""Render the moe_align translation units: one include plus one phase kernel each.

The phases (include/humming/kernel/moe_align.cuh) are compiled as separate entry points so that each
source holds exactly one instantiation (DESIGN.md: generated source is a few lines). The routing-id
dtype is the only template argument; sizes are launch parameters, so one build serves every shape.
"""

from __future__ import annotations

import torch

from humming_core.device import KernelSource

from ...headers import humming_include_root

PHASES: dict[str, int] = {"fused": 0, "count": 1, "scan": 2, "scatter": 3}
ID_TYPES: dict[torch.dtype, tuple[str, str]] = {
    torch.int32: ("int", "i32"),
    torch.int64: ("long long", "i64"),
}


def id_type(dtype: torch.dtype) -> tuple[str, str]:
    """(C type, name suffix) for a topk_ids dtype."""
    if dtype not in ID_TYPES:
        allowed = ", ".join(str(d).removeprefix("torch.") for d in ID_TYPES)
        raise ValueError(
            f"moe_align: topk_ids has dtype {str(dtype).removeprefix('torch.')}; allowed: "
            f"{allowed} (convert with topk_ids.to(torch.int32))"
        )
    return ID_TYPES[dtype]


def kernel_name(phase: str, dtype: torch.dtype) -> str:
    return f"humming_moe_align_{phase}_{id_type(dtype)[1]}"


def render(phase: str, dtype: torch.dtype, arch: str) -> KernelSource:
    """The source of one phase kernel for topk_ids of `dtype`, compiled for `arch`."""
    if phase not in PHASES:
        raise ValueError(f"moe_align: unknown phase {phase!r}; phases are {', '.join(PHASES)}")
    ctype, _ = id_type(dtype)
    name = kernel_name(phase, dtype)
    code = (
        '#include "humming/kernel/moe_align.cuh"\n'
        f"HUMMING_MOE_ALIGN_ENTRY({name}, humming::moe_align::{phase.upper()}, {ctype})\n"
    )
    return KernelSource(
        name=name,
        code=code,
        arch=arch,
        headers=(str(humming_include_root()),),
        meta={"family": "moe_align", "phase": phase, "ids": str(dtype)},
    )
