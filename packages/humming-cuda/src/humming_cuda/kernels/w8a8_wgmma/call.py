"""The prepared W8A8 / W4A8 wgmma call: kernels/w8a8/call.py's prepared call for the sm_90a
kernels, whose quantized activations reach the kernel as a TMA tensor map.

A later call than the first (same input dtype, K and N, no act_scale, 16-byte aligned x rows)
quantizes x into a fresh q and scales buffer as the full call does, looks up q's tensor map
(cached per address, M and K, as the full call's) with the box rows this M takes, patches it, the
scales, out, M and ldc into the GEMM's parameter block and launches on the grid the full call
would (a persistent config's resident CTAs). Anything else goes through the full check. Why: the
full check of both parameter lists cost more host time than the GPU time of a small layer's call
(H200, act8.json of session 26: W8A8-fp8 6144x4096 M = 256, 27 us over 22 us).
"""

from __future__ import annotations

from typing import Any

import torch

from ..w8a8.call import W8a8Call


class W8a8WgmmaCall(W8a8Call):
    """`call(x, out, **extra)` with the bound weights (see the module docstring)."""

    def __init__(self, kernel: Any, packed: dict[str, torch.Tensor]) -> None:
        super().__init__(kernel, packed)
        self.patch_rows = "a_rows" in kernel.signature.names  # W4A8's box rows are fixed

    def patch_x(self, struct: Any, x: torch.Tensor, address: int, lda: int, m: int) -> None:
        kernel = self.kernel
        q, struct.a_scales = self.quantize(m, address, lda)
        rows = kernel.a_box_rows(m)
        # q: M rows of K e4m3 codes, K bytes apart (the full call's map of the same tensor)
        struct.a = kernel.maps.of(q, m, self.k, self.k, "activations a", box_rows=rows)
        if self.patch_rows:
            struct.a_rows = rows

    def keep_template(self, grid: tuple[int, int, int], params: list, dims: dict[str, int]) -> None:
        super().keep_template(grid, params, dims)
        if getattr(self.kernel.config, "cluster_split", False):
            self.uses_workspace = False  # the splits sum over distributed shared memory
        # a persistent grid's x is its CTAs, not the column tiles (it is never split)
        self.grid_n = -(-dims["N"] // self.kernel.config.block_n)

    def grid(self, grid_m: int) -> tuple[int, int, int]:
        return self.kernel.grid(self.grid_n, grid_m, self.split)
