"""The moe_align kernels bound into one callable: argument checks, outputs, workspace, launches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from humming_core.numerics.moe import align_length

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from .plan import INT32_MAX, plan_align


def signature(dtype: torch.dtype, name: str) -> Signature:
    """Parameters in the order of HUMMING_MOE_ALIGN_ENTRY (include/humming/kernel/moe_align.cuh)."""
    return Signature(
        TensorArg("topk_ids", dtype, ("NUMEL",), align=4),
        TensorArg("expert_map", torch.int32, ("E",), optional=True, align=4),
        TensorArg("sorted_ids", torch.int32, ("LEN",), align=4),
        TensorArg("expert_ids", torch.int32, ("BLOCKS",), align=4),
        TensorArg("post", torch.int32, (1,), align=4),
        TensorArg("workspace", torch.int32, ("WS",), align=4),
        ScalarArg("numel", "int32", dim="NUMEL"),
        ScalarArg("num_experts", "int32", dim="E"),
        ScalarArg("block_size", "int32"),
        ScalarArg("length", "int32", dim="LEN"),
        ScalarArg("chunk", "int32"),
        ScalarArg("num_chunks", "int32"),
        ScalarArg("ignore_invalid", "int32"),
        ScalarArg("zero_rows", "uint64"),
        ScalarArg("zero_ld", "int64"),
        ScalarArg("zero_row_bytes", "int32"),
        ScalarArg("zero_unit", "int32"),
        kernel=name,
    )


def _local_map(expert_map: torch.Tensor | None, num_experts: int, device: torch.device):
    """expert_map as the kernel reads it: int32, contiguous, on the ids' device, one per expert."""
    if expert_map is None:
        return None
    if expert_map.numel() != num_experts:
        raise ValueError(
            f"moe_align: expert_map has {expert_map.numel()} entries but num_experts={num_experts}: "
            "num_experts is the global expert count and expert_map maps every global expert"
        )
    return expert_map.reshape(-1).to(device=device, dtype=torch.int32).contiguous()


def _zero_rows_args(zero_rows: torch.Tensor | None, numel: int, device: torch.device) -> dict:
    """The kernel's view of `zero_rows` (humming_core.numerics.moe.moe_align): address, row stride
    and row length in bytes, and the widest store (16, 4 or 2 bytes) that divides all three."""
    if zero_rows is None:
        return {"zero_rows": 0, "zero_ld": 0, "zero_row_bytes": 0, "zero_unit": 2}
    if (
        not isinstance(zero_rows, torch.Tensor)
        or zero_rows.dim() != 2
        or zero_rows.shape[0] != numel
        or zero_rows.device != device
        or (zero_rows.shape[1] > 1 and zero_rows.stride(1) != 1)
        or zero_rows.element_size() not in (2, 4)
    ):
        got = (
            f"{tuple(zero_rows.shape)} {zero_rows.dtype} on {zero_rows.device}"
            if isinstance(zero_rows, torch.Tensor)
            else type(zero_rows).__name__
        )
        raise ValueError(
            f"moe_align: zero_rows must be a [{numel}, n] tensor of 2- or 4-byte elements with "
            f"unit column stride on {device} (one row per routing entry), got {got}"
        )
    item = zero_rows.element_size()
    address, ld, row = zero_rows.data_ptr(), zero_rows.stride(0) * item, zero_rows.shape[1] * item
    unit = next(u for u in (16, 4, 2) if not (address % u or ld % u or row % u))
    return {"zero_rows": address, "zero_ld": ld, "zero_row_bytes": row, "zero_unit": unit}


class MoeAlignKernel:
    """`kernel(topk_ids, block_size, num_experts, expert_map=None, ignore_invalid_experts=False,
    pad_sorted_ids=False, zero_rows=None)` -> (sorted_token_ids, expert_ids,
    num_tokens_post_padded), all int32 on the ids' device, with
    humming_core.numerics.moe.moe_align's contract, position for position (zero_rows included).

    Allocates its outputs and an int32 workspace (torch's allocator: graph-private pools under
    CUDA-graph capture), launches on torch's current stream and never synchronises.
    """

    def __init__(self, functions: Mapping[str, Any], dtype: torch.dtype) -> None:
        self.dtype = dtype
        self.name = functions["fused"].symbol
        self.device_index = functions["fused"].device_index
        self.signature = signature(dtype, self.name)
        self.launchers = {p: Launcher(f, self.signature.ctypes) for p, f in functions.items()}

    def __call__(
        self,
        topk_ids: torch.Tensor,
        block_size: int,
        num_experts: int,
        expert_map: torch.Tensor | None = None,
        ignore_invalid_experts: bool = False,
        pad_sorted_ids: bool = False,
        zero_rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if block_size < 1 or num_experts < 1:
            raise ValueError(
                f"moe_align: block_size={block_size} and num_experts={num_experts} must both be >= 1"
            )
        flat = topk_ids.reshape(-1).contiguous()
        numel, device = flat.numel(), flat.device
        plan = plan_align(numel, num_experts)
        length = align_length(numel, block_size, num_experts, pad_sorted_ids)
        if length > INT32_MAX:
            raise ValueError(f"moe_align: {length} sorted ids exceed int32 indexing")
        blocks = -(-length // block_size)
        values = {
            "topk_ids": flat,
            "expert_map": _local_map(expert_map, num_experts, device),
            "sorted_ids": torch.empty(length, dtype=torch.int32, device=device),
            "expert_ids": torch.empty(blocks, dtype=torch.int32, device=device),
            "post": torch.empty(1, dtype=torch.int32, device=device),
            "workspace": torch.empty(plan.workspace, dtype=torch.int32, device=device),
            "block_size": block_size,
            "chunk": plan.chunk,
            "num_chunks": plan.num_chunks,
            "ignore_invalid": int(bool(ignore_invalid_experts)),
            **_zero_rows_args(zero_rows, numel, device),
        }
        _, params = self.signature.bind(values, {"E": num_experts}, self.device_index)
        threads = (plan.threads, 1, 1)
        if plan.fused:
            self.launchers["fused"]((1, 1, 1), threads, params, plan.smem)
        else:
            grid = (plan.grid, 1, 1)
            self.launchers["count"](grid, threads, params, plan.smem)
            self.launchers["scan"]((1, 1, 1), (plan.scan_threads, 1, 1), params, 0)
            self.launchers["scatter"](grid, threads, params, plan.smem)
        return values["sorted_ids"], values["expert_ids"], values["post"]
