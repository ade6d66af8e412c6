"""A MoE WnA16 kernel with one layer's expert weights bound: the launch path of every eager call.

`MoeWna16Kernel.__call__` checks all 24 arguments on every call, which costs tens of
microseconds of Python per GEMM and is most of a decode-size MoE layer's eager host time (two
GEMMs per layer). The weights never change for a layer, so the first call is checked in full and
its parameter block kept as a template; later calls check only what changes per call — x, out,
the routing tensors and the router weights — with one comparison each, patch their pointers and
sizes into this thread's block and launch. A call the quick check does not accept goes through
the full check, which launches it when it is valid after all and otherwise raises naming the
argument.
"""

from __future__ import annotations

from typing import Any

import torch

from ...launch import ThreadParams
from ..common_bind import OUT_DTYPES
from ..moe_bind import MAX_GRID_Y, blocks_grid, launch_blocks
from ..wna16.bind import _ACT
from .bind import MoeWna16Kernel


def _ids_ok(t: Any, device_index: int) -> bool:
    """An int32 vector the kernel reads as one (contiguous, 4-byte aligned, on its device)."""
    return (
        t.dtype is torch.int32
        and t.dim() == 1
        and t.is_contiguous()
        and not t.data_ptr() % 4
        and t.get_device() == device_index
    )


class MoeWna16Call:
    """`call(x, out, sorted_token_ids, expert_ids, num_tokens_post_padded, top_k, block_size,
    topk_weights=None, routing_ready=False)` for one expert-stacked layer (see MoeWna16Kernel for
    the arguments).

    `routing_ready=True` promises that the routing tensors were complete before the previous
    kernel in the stream began (fused_moe's w2: its routing came before w13): the decode form
    (launched with PDL on sm_90+) then reads the routing and its first weight stages while that
    kernel finishes, where it otherwise waits for it first (kernel/moe_wna16_decode.cuh). Other
    kernels ignore it.
    """

    overlaps_routing = True  # takes routing_ready (humming_core.device.Kernel)

    def __init__(self, kernel: MoeWna16Kernel, packed: dict[str, torch.Tensor]) -> None:
        self.kernel = kernel
        self.packed = dict(packed)  # holds the weights alive: the template points at them
        self.act, self.out_dtype = _ACT[kernel.fmt.act], OUT_DTYPES[kernel.fmt.out]
        self.device_index = kernel.function.device_index
        self.block = (kernel.config.threads, 1, 1)
        self.block_m = kernel.config.block_m
        self.template: ThreadParams | None = None  # set by the first fully checked call
        self.k = self.n_out = self.columns = -1

    def __call__(
        self,
        x: torch.Tensor,
        out: torch.Tensor,
        sorted_token_ids: torch.Tensor,
        expert_ids: torch.Tensor,
        num_tokens_post_padded: torch.Tensor,
        top_k: int,
        block_size: int,
        topk_weights: torch.Tensor | None = None,
        routing_ready: bool = False,
    ) -> None:
        if topk_weights is not None and (
            topk_weights.dtype is not torch.float32 or not topk_weights.is_contiguous()
        ):
            # what flatten_topk_weights hands the kernel; contiguous fp32 weights are that already
            # (their flat view has their address and numel): read in place, no new tensor
            topk_weights = topk_weights.reshape(-1).float().contiguous()
        try:
            m, k = x.shape
            rows, n_out = out.shape
            lda, x_inner = x.stride()
            ldc, out_inner = out.stride()
            num_ids = sorted_token_ids.numel()
            blocks = -(-num_ids // self.block_m)
            dev = self.device_index
            fast = (
                self.template is not None
                and x.dtype is self.act
                and out.dtype is self.out_dtype
                and k == self.k
                and n_out == self.n_out
                and m > 0
                and type(top_k) is int
                and top_k > 0
                and rows == m * top_k
                and block_size == self.block_m
                and x_inner == 1
                and out_inner == 1
                and not x.data_ptr() % 16
                and not (lda * 2) % 16
                and not out.data_ptr() % 4
                and x.get_device() == dev
                and out.get_device() == dev
                and _ids_ok(sorted_token_ids, dev)
                and _ids_ok(expert_ids, dev)
                and _ids_ok(num_tokens_post_padded, dev)
                and num_tokens_post_padded.numel() == 1
                and expert_ids.numel() >= blocks
                and 0 < blocks <= MAX_GRID_Y
                and (
                    topk_weights is None
                    or (
                        topk_weights.numel() == rows
                        and not topk_weights.data_ptr() % 4
                        and topk_weights.get_device() == dev
                    )
                )
            )
        except (AttributeError, TypeError, ValueError):  # not 2-D tensors: the full check says so
            fast = False
        if not fast:
            self._checked_call(
                {
                    "x": x,
                    "out": out,
                    "sorted_token_ids": sorted_token_ids,
                    "expert_ids": expert_ids,
                    "num_tokens_post_padded": num_tokens_post_padded,
                    "top_k": top_k,
                    "block_size": block_size,
                    "topk_weights": topk_weights,
                    "routing_ready": routing_ready,
                }
            )
            return
        params = self.template.block()
        struct = params.struct
        self.patch_x(struct, x, m, lda)
        struct.out, struct.ldc = out.data_ptr(), ldc
        struct.topk_weights = 0 if topk_weights is None else topk_weights.data_ptr()
        struct.sorted_token_ids = sorted_token_ids.data_ptr()
        struct.expert_ids = expert_ids.data_ptr()
        struct.num_tokens_post_padded = num_tokens_post_padded.data_ptr()
        struct.top_k, struct.numel, struct.num_ids = top_k, rows, num_ids
        if self.kernel.decode:
            struct.routing_ready = int(bool(routing_ready))
        grid = blocks_grid(self.kernel.config, self.columns, num_ids, self.kernel.ctas)
        self.kernel.launcher.launch(grid, self.block, self.kernel.smem, params.address)

    def patch_x(self, struct: Any, x: torch.Tensor, m: int, lda: int) -> None:
        """Write x (checked: the template's dtype and K, m > 0 rows, 16-byte aligned rows) into
        the parameter block; a call that quantizes x first says how its codes reach the kernel
        (moe_wna16_a8's MoeWna16A8Call)."""
        struct.x, struct.lda = x.data_ptr(), lda

    def _checked_call(self, values: dict[str, Any]) -> None:
        dims, params = self.kernel.checked({**values, **self.packed})
        self._launch_checked(values["out"], dims, params)

    def _launch_checked(self, out: torch.Tensor, dims: dict[str, int], params: list) -> None:
        """Launch a fully checked call; the first one's parameters become the template."""
        kernel = self.kernel
        launch_blocks(kernel, out, dims["N"], dims["LEN"], lambda: params, kernel.smem, kernel.ctas)
        if self.template is None:
            self.k, self.n_out = dims["K"], dims["NOUT"]
            self.columns = dims["N"]
            self.template = ThreadParams(kernel.signature.ctypes, kernel.signature.names, params)
