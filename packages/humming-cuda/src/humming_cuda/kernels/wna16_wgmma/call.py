"""A WnA16-wgmma kernel with one layer's weights bound: the launch path of every eager call.

`WgmmaWna16Kernel.__call__` checks every argument on every call (tens of microseconds of Python,
more than the GPU time of a small layer at small M). The weights, N, K and the split never change
for a layer, so the first call is checked in full and its parameter block kept as a template;
later calls check only what changes — x and out: type, dtype, shape (K and N as in the template),
innermost strides, the 16-byte alignment TMA needs for x and out's pair alignment, device —
with one comparison each, patch x's tensor map (cached per pointer), out, M and ldc into this
thread's block and launch. A call the quick check does not accept goes through the full check,
which launches it when it is valid after all and otherwise raises naming the argument.
"""

from __future__ import annotations

from typing import Any

import torch

from ...launch import ThreadParams
from ..common_bind import OUT_DTYPES
from ..wna16.bind import _ACT
from .bind import WgmmaWna16Kernel


class WgmmaWna16Call:
    """`call(x, out)` launches out = x @ W^T (+ bias) with the bound weights."""

    def __init__(self, kernel: WgmmaWna16Kernel, packed: dict[str, torch.Tensor]) -> None:
        self.kernel = kernel
        self.packed = dict(packed)  # holds the weights alive: the template points at them
        cfg = kernel.config
        self.act, self.out_dtype = _ACT[kernel.fmt.act], OUT_DTYPES[kernel.fmt.out]
        self.out_align = 2 * self.out_dtype.itemsize
        self.device_index = kernel.function.device_index
        self.block, self.smem, self.block_m = (cfg.threads, 1, 1), cfg.smem_bytes, cfg.block_m
        self.template: ThreadParams | None = None  # set by the first fully checked call
        self.k = self.n = self.grid_n = self.split = -1
        self.workspace: tuple[torch.Tensor, torch.Tensor] | None = None
        self.ws_rows = 0  # grid rows (of block_m) the held split-K workspace covers

    def __call__(self, x: torch.Tensor, out: torch.Tensor, **extra: Any) -> None:
        try:
            m, k = x.shape
            rows, n = out.shape
            lda, x_inner = x.stride()
            ldc, out_inner = out.stride()
            op = out.data_ptr()
            fast = (
                self.template is not None
                and x.dtype is self.act
                and out.dtype is self.out_dtype
                and k == self.k
                and n == self.n
                and rows == m
                and x_inner == 1
                and out_inner == 1
                and not x.data_ptr() % 16
                and not (lda * 2) % 16
                and not op % self.out_align
                and x.get_device() == self.device_index
                and out.get_device() == self.device_index
                and not extra
            )
        except (AttributeError, TypeError, ValueError):  # not a 2-D tensor: the full check says so
            fast = False
        if not fast:
            self._checked_call(x, out, extra)
            return
        if not m:
            return
        grid_m = -(-m // self.block_m)
        params = self.template.block()
        struct = params.struct
        struct.x = self.kernel.maps.get(x, "activations x")
        struct.out, struct.M, struct.ldc = op, m, ldc
        if self.split > 1:
            if grid_m > self.ws_rows:
                self.workspace = self.kernel.split_k_buffers(
                    x.device, self.grid_n, grid_m, self.split
                )
                self.ws_rows = grid_m
            ws, ct = self.workspace
            struct.workspace, struct.counters = ws.data_ptr(), ct.data_ptr()
        self.kernel.launcher.launch(
            (self.grid_n, grid_m, self.split), self.block, self.smem, params.address
        )

    def _checked_call(self, x: Any, out: Any, extra: dict[str, Any]) -> None:
        kernel = self.kernel
        grid, params, dims = kernel.checked({"x": x, "out": out, **extra, **self.packed})
        if grid[1]:
            kernel.launcher(grid, self.block, params, self.smem)
            if self.template is None and not extra:
                self.k, self.n, self.grid_n, self.split = dims["K"], dims["N"], grid[0], grid[2]
                self.template = ThreadParams(kernel.launcher.ctypes, kernel.signature.names, params)
