"""The memory a moe_align call writes: its outputs and workspace (one allocation) and the rows of
dropped entries it zeroes (`zero_rows`). Shared by the fully checked call (bind.py) and the
memoized one (prepared.py), so that both hand the kernel the same parameters."""

from __future__ import annotations

from typing import Any

import torch


def allocate(sizes: tuple[int, int, int, int], device: torch.device) -> tuple[torch.Tensor, ...]:
    """(sorted_ids, expert_ids, post, workspace) of these lengths: views, in this order, of one
    int32 allocation. Why one: each torch.empty on cuda costs about 4.7 us of host time (see
    act_quant's buffer_layout), and a call made four. The views after the first start at 4-byte
    offsets, the alignment every reader of them declares (TensorArg align=4, here and in the MoE
    GEMMs)."""
    return torch.empty(sum(sizes), dtype=torch.int32, device=device).split_with_sizes(sizes)


def zero_rows_params(
    zero_rows: Any, numel: int, device_index: int
) -> tuple[int, int, int, int] | None:
    """The kernel's view of `zero_rows` (humming_core.numerics.moe.moe_align): address, row stride
    and row length in bytes, and the widest store (16, 4 or 2 bytes) that divides all three; None
    unless it is what the kernel can zero: a [numel, n] tensor of 2- or 4-byte elements with unit
    column stride on the ids' device (`device_index`, as get_device gives it)."""
    if not isinstance(zero_rows, torch.Tensor) or zero_rows.dim() != 2:
        return None
    (rows, width), (ld, inner), item = zero_rows.shape, zero_rows.stride(), zero_rows.element_size()
    if (
        rows != numel
        or (width > 1 and inner != 1)
        or item not in (2, 4)
        or zero_rows.get_device() != device_index
    ):
        return None
    address, ld, row = zero_rows.data_ptr(), ld * item, width * item
    # a power of two divides all three iff it divides their OR; the element size divides each
    bits = address | ld | row
    return address, ld, row, 16 if not bits % 16 else 4 if not bits % 4 else 2
