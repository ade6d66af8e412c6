"""The moe_align kernels bound into one callable: argument checks, outputs, workspace, launches;
calls of a shape seen before take the memoized path (prepared.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from humming_core.numerics.moe import align_length

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from .buffers import allocate, zero_rows_params
from .plan import INT32_MAX, AlignPlan, plan_align
from .prepared import MAX_PREPARED, Launch, PreparedAlign, memo_key


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


def _zero_rows_args(zero_rows: torch.Tensor | None, flat: torch.Tensor) -> dict:
    """The zero_rows parameters of a call on the flattened ids `flat`; raises for a misfit."""
    if zero_rows is None:
        return {"zero_rows": 0, "zero_ld": 0, "zero_row_bytes": 0, "zero_unit": 2}
    numel = flat.numel()
    params = zero_rows_params(zero_rows, numel, flat.get_device())
    if params is None:
        got = (
            f"{tuple(zero_rows.shape)} {zero_rows.dtype} on {zero_rows.device}"
            if isinstance(zero_rows, torch.Tensor)
            else type(zero_rows).__name__
        )
        raise ValueError(
            f"moe_align: zero_rows must be a [{numel}, n] tensor of 2- or 4-byte elements with "
            f"unit column stride on {flat.device} (one row per routing entry), got {got}"
        )
    return dict(zip(("zero_rows", "zero_ld", "zero_row_bytes", "zero_unit"), params, strict=True))


class MoeAlignKernel:
    """`kernel(topk_ids, block_size, num_experts, expert_map=None, ignore_invalid_experts=False,
    pad_sorted_ids=False, zero_rows=None)` -> (sorted_token_ids, expert_ids,
    num_tokens_post_padded), all int32 on the ids' device, with
    humming_core.numerics.moe.moe_align's contract, position for position (zero_rows included).

    Allocates its outputs and an int32 workspace as views of one buffer (torch's allocator:
    graph-private pools under CUDA-graph capture), launches on torch's current stream and never
    synchronises.

    The first call of each memo_key is checked in full and leaves a PreparedAlign (plan, lengths,
    parameter template); later calls with that key check only the tensors (one comparison per
    fact) and patch their addresses into the template. A call the quick check does not accept goes
    through the full check, which raises naming the argument when it is wrong.
    """

    def __init__(self, functions: Mapping[str, Any], dtype: torch.dtype) -> None:
        self.dtype = dtype
        self.name = functions["fused"].symbol
        self.device_index = functions["fused"].device_index
        self.signature = signature(dtype, self.name)
        self.launchers = {p: Launcher(f, self.signature.ctypes) for p, f in functions.items()}
        self.prepared: dict[tuple, PreparedAlign] = {}

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
        args = (block_size, num_experts, expert_map, ignore_invalid_experts, pad_sorted_ids)
        # exact ints only: True or 16.0 would find 1's or 16's entry; the full check refuses them
        if type(block_size) is int and type(num_experts) is int:
            try:
                prepared = self.prepared.get(memo_key(topk_ids.numel(), *args, zero_rows))
            except AttributeError:  # not a tensor: the full check says so
                prepared = None
            if prepared is not None:
                outputs = prepared(topk_ids, expert_map, zero_rows)
                if outputs is not None:
                    return outputs
        return self.checked_call(topk_ids, *args, zero_rows)

    def checked_call(
        self,
        topk_ids: torch.Tensor,
        block_size: int,
        num_experts: int,
        expert_map: torch.Tensor | None,
        ignore_invalid_experts: bool,
        pad_sorted_ids: bool,
        zero_rows: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The call with every argument checked; remembers its launches for its memo_key."""
        # block_size sizes the outputs before the signature checks it: refuse a float here
        if isinstance(block_size, bool) or not isinstance(block_size, int):
            raise ValueError(f"moe_align: block_size must be an int, got {block_size!r}")
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
        sizes = (length, -(-length // block_size), 1, plan.workspace)
        sorted_ids, expert_ids, post, workspace = allocate(sizes, device)
        values = {
            "topk_ids": flat,
            "expert_map": _local_map(expert_map, num_experts, device),
            "sorted_ids": sorted_ids,
            "expert_ids": expert_ids,
            "post": post,
            "workspace": workspace,
            "block_size": block_size,
            "chunk": plan.chunk,
            "num_chunks": plan.num_chunks,
            "ignore_invalid": int(bool(ignore_invalid_experts)),
            **_zero_rows_args(zero_rows, flat),
        }
        _, params = self.signature.bind(values, {"E": num_experts}, self.device_index)
        launches = self._launches(plan)
        for launcher, grid, threads, smem in launches:
            launcher(grid, threads, params, smem)
        key = memo_key(
            numel,
            block_size,
            num_experts,
            expert_map,
            ignore_invalid_experts,
            pad_sorted_ids,
            zero_rows,
        )
        if key not in self.prepared:
            if len(self.prepared) >= MAX_PREPARED:
                self.prepared.clear()
            self.prepared[key] = PreparedAlign(self, numel, num_experts, sizes, launches, params)
        return sorted_ids, expert_ids, post

    def _launches(self, plan: AlignPlan) -> tuple[Launch, ...]:
        """(launcher, grid, block, dynamic smem) of each launch of `plan`, in order."""
        threads = (plan.threads, 1, 1)
        if plan.fused:
            return ((self.launchers["fused"], (1, 1, 1), threads, plan.smem),)
        grid = (plan.grid, 1, 1)
        return (
            (self.launchers["count"], grid, threads, plan.smem),
            (self.launchers["scan"], (1, 1, 1), (plan.scan_threads, 1, 1), 0),
            (self.launchers["scatter"], grid, threads, plan.smem),
        )
