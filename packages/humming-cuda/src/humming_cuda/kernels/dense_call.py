"""A dense kernel with one layer's weights bound: the launch path of every eager call.

A kernel's full check (`kernel.checked`) validates every argument, which costs more Python per call
than a small layer's GPU time. The weights, N, K and the split never change for a layer, so the
first call is checked in full and its parameter block kept as a template (launch.ThreadParams);
later calls check only what can change — x and out: type, dtype, shape (K and N as in the
template, M within the kernel's max_m), innermost strides, the pointer and row-stride alignment x
needs and out's pointer alignment, device — with one comparison each, patch x (`patch_x`, per
family), out, M and ldc, and split-K's workspace, into this thread's block and launch. Anything
the quick check does not accept goes through the full check again, which launches a call that is
valid after all and otherwise raises naming the argument.

The kernel provides `checked(values) -> (grid, params, dims)`, `launcher`, `signature`,
`function.device_index`, `config.threads` / `config.block_m`, `max_m` and
`split_k_buffers(device, grid_n, grid_m, split)`.
"""

from __future__ import annotations

from typing import Any

import torch

from ..launch import ThreadParams


class PreparedDenseCall:
    """`call(x, out)` launches out = x @ W^T (+ bias) with the bound weights; subclasses say how x
    reaches the kernel (`patch_x`)."""

    def __init__(
        self,
        kernel: Any,
        packed: dict[str, torch.Tensor],
        act: torch.dtype,
        out_dtype: torch.dtype,
        out_align: int,
        smem: int,
    ) -> None:
        self.kernel = kernel
        self.packed = dict(packed)  # holds the weights alive: the template points at them
        self.launcher = kernel.launcher
        self.act, self.out_dtype, self.out_align = act, out_dtype, out_align
        self.device_index = kernel.function.device_index
        self.block = (kernel.config.threads, 1, 1)
        self.smem = smem
        self.block_m = kernel.config.block_m
        self.max_m = kernel.max_m
        self.template: ThreadParams | None = None  # set by the first fully checked launch
        self.k = self.n = self.grid_n = self.split = -1
        self.x_k = -1  # x's columns: K, or 2K where the kernel's quantizer fuses an input GLU
        self.workspace: tuple[torch.Tensor, torch.Tensor] | None = None
        self.uses_workspace = False  # split-K's (set with the template)
        self.ws_rows = 0  # grid rows (of block_m) the held split-K workspace covers

    def patch_x(self, struct: Any, x: torch.Tensor, address: int, lda: int, m: int) -> None:
        """Write x (checked: the template's K, M rows, 16-byte aligned rows) into the parameter
        block."""
        raise NotImplementedError

    def __call__(self, x: torch.Tensor, out: torch.Tensor, **extra: Any) -> None:
        try:
            m, k = x.shape
            rows, n = out.shape
            lda, x_inner = x.stride()
            ldc, out_inner = out.stride()
            xp, op = x.data_ptr(), out.data_ptr()
            fast = (
                x.dtype is self.act
                and out.dtype is self.out_dtype
                and k == self.x_k
                and n == self.n
                and rows == m
                and m <= self.max_m
                and x_inner == 1
                and out_inner == 1
                and not xp % 16
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
        self.patch_x(struct, x, xp, lda, m)
        struct.out, struct.M, struct.ldc = op, m, ldc
        if self.uses_workspace:
            self.patch_workspace(struct, x.device, grid_m)
        self.launcher.launch(self.grid(grid_m), self.block, self.smem, params.address)

    def patch_workspace(self, struct: Any, device: torch.device, grid_m: int) -> None:
        """Split-K's workspace and counters for `grid_m` row tiles into the parameter block, held
        by this call (grown when a larger M needs more)."""
        if grid_m > self.ws_rows:
            self.workspace = self.kernel.split_k_buffers(device, self.grid_n, grid_m, self.split)
            self.ws_rows = grid_m
        ws, ct = self.workspace
        struct.workspace, struct.counters = ws.data_ptr(), ct.data_ptr()

    def grid(self, grid_m: int) -> tuple[int, int, int]:
        """The launch grid for `grid_m` row tiles: one CTA per tile and split."""
        return (self.grid_n, grid_m, self.split)

    def _checked_call(self, x: Any, out: Any, extra: dict[str, Any]) -> None:
        kernel = self.kernel
        grid, params, dims = kernel.checked({"x": x, "out": out, **extra, **self.packed})
        if not grid[1]:
            return
        kernel.launcher(grid, self.block, params, self.smem)
        if self.template is None and not extra:
            self.keep_template(grid, params, dims)

    def keep_template(self, grid: tuple[int, int, int], params: list, dims: dict[str, int]) -> None:
        """A fully checked call's launch as the template of the quick path."""
        kernel = self.kernel
        self.k, self.n, self.grid_n, self.split = dims["K"], dims["N"], grid[0], grid[2]
        self.x_k = self.k * getattr(kernel, "x_columns", 1)
        self.uses_workspace = self.split > 1
        self.template = ThreadParams(kernel.launcher.ctypes, kernel.signature.names, params)
