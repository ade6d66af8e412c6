"""The prepared W8A8 / W4A8 call: one layer's weights bound to a W8a8Kernel, for the eager path.

A full call checks and binds two parameter lists (the quantizer's and the GEMM's) in Python,
which costs more than a decode-size layer's GPU time. After the first fully checked call the
layer keeps both lists as templates (kernels/dense_call.py's PreparedDenseCall, and
act_quant.PreparedQuant for the quantizer); a later call with the same input dtype, K and N, no
act_scale and 16-byte aligned x rows takes this thread and stream's buffer for q and the scales
(act_quant/scratch.py; a fresh one under CUDA-graph capture), laid out as the full call lays them
out (act_quant.ActQuantFormat.buffer_layout), patches x, q, scales and M
into the quantizer's block and q, scales, out, M and ldc into the GEMM's, and launches both.
Anything else goes through the full check, which raises naming the argument when it is wrong.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from ..act_quant import PreparedQuant
from ..common_bind import OUT_DTYPES
from ..dense_call import PreparedDenseCall


class W8a8Call(PreparedDenseCall):
    """`call(x, out, **extra)` with the bound weights (see the module docstring)."""

    def __init__(self, kernel: Any, packed: dict[str, torch.Tensor]) -> None:
        out_dtype = OUT_DTYPES[kernel.fmt.out]
        # act: unset until the first checked call, whose x dtype the templates are built for
        super().__init__(kernel, packed, None, out_dtype, 2 * out_dtype.itemsize, kernel.smem)
        self.quant: PreparedQuant | None = None
        # the last call's q and scales buffer, per thread: alive until its GEMM is enqueued even
        # when a split-K workspace is allocated between the quantizer's launch and the GEMM's
        self._held = threading.local()

    def patch_x(self, struct: Any, x: torch.Tensor, address: int, lda: int, m: int) -> None:
        struct.a, struct.a_scales = self.quantize(m, address, lda)

    def quantize(self, m: int, address: int, lda: int) -> tuple[int, int]:
        """Launch the quantizer into a fresh buffer, held until this thread's next call: the
        addresses of its q and scales."""
        self._held.buffer, q, scales = self.quant(m, self.k, address, lda)
        return q, scales

    def _checked_call(self, x: Any, out: Any, extra: dict[str, Any]) -> None:
        kernel = self.kernel
        grid, params, dims, quantize = kernel.checked({"x": x, "out": out, **extra, **self.packed})
        quantize()
        if not grid[1]:
            return
        kernel.launcher(grid, self.block, params, self.smem)
        if self.template is None and not extra:
            self.keep_template(grid, params, dims)
            self.quant = PreparedQuant(kernel.quantizer.fmt, quantize, x.device)
            self.act = x.dtype
