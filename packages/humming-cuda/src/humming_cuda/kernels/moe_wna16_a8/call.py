"""The prepared MoE W4A8 call: one layer's expert weights bound to a MoeWna16A8Kernel, for the
eager path.

A full call checks and binds two parameter lists in Python, the quantizer's and the inner WnA16
MoE kernel's (26 arguments): about 66 us of host time per GEMM at M = 8 on the H100, two GEMMs
per layer. This call is the inner kernel's MoeWna16Call (kernels/moe_wna16/call.py: one quick
comparison each for x, out, the routing tensors and the router weights against the template the
first fully checked call leaves) with x reaching the kernel through the quantizer: the first
checked call also keeps the quantizer's parameters (act_quant.PreparedQuant); a later call the
quick check takes quantizes x into this thread and stream's buffer (act_quant/scratch.py, laid
out as the full call lays it out), patches the codes, their row stride and the per-token scales
into the GEMM's block and launches it. Anything else goes through the full check, which raises
naming the argument when it is wrong.

`routing_ready` reaches the inner kernel as MoeWna16Call passes it: the routing, complete before
the caller's previous kernel began, is complete before the quantizer (launched after it) begins,
and the decode form reads x and the row scales, the quantizer's output, only after waiting for
it (include/humming/kernel/moe_wna16_decode.cuh).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import torch

from ..act_quant import PreparedQuant
from ..moe_wna16.call import MoeWna16Call

if TYPE_CHECKING:
    from .bind import MoeWna16A8Kernel


class MoeWna16A8Call(MoeWna16Call):
    """`call(x, out, sorted_token_ids, expert_ids, num_tokens_post_padded, top_k, block_size,
    topk_weights=None, routing_ready=False)` with the bound weights (see the module docstring;
    `packed`: the inner kernel's, MoeWna16A8Kernel.inner_values)."""

    def __init__(self, kernel: MoeWna16A8Kernel, packed: dict[str, torch.Tensor]) -> None:
        super().__init__(kernel.inner, packed)
        self.a8 = kernel
        # x's 16-bit dtype: unset until the first checked call, whose x the templates are built for
        self.act = None
        self.quant: PreparedQuant | None = None
        # the last call's codes and scales buffer, per thread: alive until its GEMM is enqueued
        # (under graph capture it is a fresh allocation, not the thread's reused one)
        self._held = threading.local()

    def patch_x(self, struct: Any, x: torch.Tensor, m: int, lda: int) -> None:
        self._held.buffer, struct.x, struct.a_scales = self.quant(m, self.k, x.data_ptr(), lda)
        struct.lda = self.k  # the codes are dense [M, K]

    def _checked_call(self, values: dict[str, Any]) -> None:
        x = values["x"]
        codes, scales, quantize = self.a8.quantize_checked(x)
        inner = {**values, "x": codes, "a_scales": scales, **self.packed}
        dims, params = self.kernel.checked(inner)
        quantize()
        first = self.template is None
        self._launch_checked(values["out"], dims, params)
        if first and self.template is not None:
            self.quant = PreparedQuant(self.a8.quantizer.fmt, quantize, x.device)
            self.act = x.dtype
