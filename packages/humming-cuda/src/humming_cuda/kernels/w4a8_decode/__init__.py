"""The W4A8 decode family: 8-bit activations (quantized on the GPU) x 4-bit weights at M <= 16,
computing out^T with the weights as the fp16 MMA's A operand (include/humming/kernel/w4a8_decode.cuh).

sm_90 only: it has no fp8 mma.sync, which ptxas lowers to fp16 MMAs (w8a8's W4A8 kernel then
issues them for a 16-row tile of tokens, mostly padding at decode); elsewhere w8a8's 8-bit MMAs
run W4A8. Specs: w8a8's W4A8 ones (int4 and uint4 with integer zero points x int8, int4 and E2M1 x E4M3,
group scales). Weights use the w8a8 layout with the same identity, so a layer packs once for this
family, w8a8 and the larger-M kernels that share it; activations are quantized by w8a8's own
quantizer entries into the same codes and scales. Registered before w8a8, which takes M > 16 and
M = 9-16 on smaller layers (`prefers`).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from ..w8a8.config import W8a8Format
from ..w8a8.layout import W8a8Layout
from .bind import W4a8DecodeKernel
from .config import W4a8DecodeConfig
from .heuristics import candidates, prefers, supports
from .render import render


class W4a8DecodeFamily(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # Its conformance tests (every W4A8 format at M = 1-16, split, every slab count, the user API)
    # and a racecheck passed on the H200 (sm_90a) on 2026-12-04.
    hardware_verified = True

    name = "w4a8_decode"
    config_type = W4a8DecodeConfig
    kernel_type = W4a8DecodeKernel  # w8a8's quantizer, parameters, grid, split-K and prepared call
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    prefers = staticmethod(prefers)
    render = staticmethod(render)

    def weight_layout(
        self, spec: QuantSpec, config: W4a8DecodeConfig, caps: DeviceCaps
    ) -> W8a8Layout:
        return W8a8Layout(W8a8Format.from_spec(spec))


FAMILY = W4a8DecodeFamily()

__all__ = ["FAMILY", "W4a8DecodeConfig", "W4a8DecodeFamily", "W4a8DecodeKernel"]
