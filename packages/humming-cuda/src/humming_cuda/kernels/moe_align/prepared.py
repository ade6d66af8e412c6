"""A moe_align call shape checked once: what the fully checked call found for one memo_key, so that
later calls of that shape check only their tensors.

Per call, the full path checks all 17 kernel arguments, plans the launches, sizes and allocates
the outputs and fills a parameter block: 30.7 us of host time for ops.moe_align on an H100 host
(benchmarks/moe_host_overhead.py, W4A16 g128 at M = 1), twice each of the layer's prepared GEMM
calls. All of it but the tensors is fixed by the key (the ids' numel, block size, expert count,
expert_map or not, both flags, zero_rows or not), so the first call of a key leaves its launches
and its parameters as a template; a later call compares each tensor fact once, allocates the
outputs (one buffer), patches the addresses into its thread's copy of the template and launches.
"""

from __future__ import annotations

from typing import Any

import torch

from ...launch import Dim3, Launcher, ThreadParams
from .buffers import allocate, zero_rows_params

# (launcher, grid, block, dynamic smem) of one launch of a call
Launch = tuple[Launcher, Dim3, Dim3, int]
# Keys kept per kernel: numel follows the batch, so an eager server meets many; a full memo is
# dropped whole (the next call of each key is checked in full again)
MAX_PREPARED = 256


def memo_key(
    numel: int,
    block_size: int,
    num_experts: int,
    expert_map: Any,
    ignore_invalid_experts: Any,
    pad_sorted_ids: Any,
    zero_rows: Any,
) -> tuple:
    """What fixes a call's launches, output lengths and scalar parameters."""
    return (
        numel,
        block_size,
        num_experts,
        expert_map is None,
        bool(ignore_invalid_experts),
        bool(pad_sorted_ids),
        zero_rows is None,
    )


class PreparedAlign:
    """`prepared(topk_ids, expert_map, zero_rows)` -> the three outputs, launched, for a call of
    this key whose tensors pass the quick check (the full check's facts, one comparison each), or
    None having done nothing, for the full check to explain.

    Made by `kernel`'s (a MoeAlignKernel's) fully checked call from its `params`: only the
    addresses (and zero_rows' strides) differ between calls of a key; `sizes` are the lengths
    `allocate` takes, `launches` that call's, in order."""

    def __init__(
        self,
        kernel: Any,
        numel: int,
        num_experts: int,
        sizes: tuple[int, int, int, int],
        launches: tuple[Launch, ...],
        params: list,
    ) -> None:
        self.dtype, self.device_index = kernel.dtype, kernel.device_index
        self.numel, self.num_experts = numel, num_experts
        self.sizes, self.launches = sizes, launches
        self.params = ThreadParams(kernel.signature.ctypes, kernel.signature.names, params)

    def __call__(
        self, topk_ids: Any, expert_map: Any, zero_rows: Any
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        dev = self.device_index
        # contiguous: the full path's flattened ids are then a view at the same address
        if (
            not isinstance(topk_ids, torch.Tensor)
            or topk_ids.dtype is not self.dtype
            or not topk_ids.is_contiguous()
            or topk_ids.get_device() != dev
        ):
            return None
        ids = topk_ids.data_ptr()
        if ids % 4:
            return None
        if expert_map is not None:
            # the full path converts any other map to a contiguous int32 copy on the ids' device
            if (
                not isinstance(expert_map, torch.Tensor)
                or expert_map.dtype is not torch.int32
                or expert_map.numel() != self.num_experts
                or not expert_map.is_contiguous()
                or expert_map.get_device() != dev
            ):
                return None
            local_map = expert_map.data_ptr()
            if local_map % 4:
                return None
        if zero_rows is not None:
            zero = zero_rows_params(zero_rows, self.numel, dev)
            if zero is None:
                return None
        sorted_ids, expert_ids, post, workspace = allocate(self.sizes, topk_ids.device)
        block = self.params.block()
        struct = block.struct
        struct.topk_ids = ids
        if expert_map is not None:
            struct.expert_map = local_map
        struct.sorted_ids, struct.expert_ids = sorted_ids.data_ptr(), expert_ids.data_ptr()
        struct.post, struct.workspace = post.data_ptr(), workspace.data_ptr()
        if zero_rows is not None:
            struct.zero_rows, struct.zero_ld, struct.zero_row_bytes, struct.zero_unit = zero
        for launcher, grid, threads, smem in self.launches:
            launcher.launch(grid, threads, smem, block.address)
        return sorted_ids, expert_ids, post
