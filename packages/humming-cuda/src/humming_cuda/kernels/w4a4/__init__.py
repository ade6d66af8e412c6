"""The W4A4 family: 4-bit activations (quantized on the GPU) x 4-bit weights, dense GEMM on the
4-bit tensor cores (mma m16n8k64).

- int4 x int4 (W4A4_INT4): symmetric int4 activations per token / group of 64-256 (fp32 scales),
  int4 weights per channel or group; exact s32 accumulation, group scales at promotion. Native on
  sm_80, sm_86, sm_87, sm_89 only.
- NVFP4 x NVFP4 (W4A4_NVFP4) and MXFP4 x MXFP4 (W4A4_MXFP4): e2m1 with ue4m3-per-16 (+ global
  scales) / e8m0-per-32 block scales applied by the block-scaled mma of sm_120a / sm_121a.

Compile-tested only: no GPU with these instructions is reachable here (the H200 is sm_90a, which
has neither), so `hardware_verified = False` and CudaDevice offers the family only with
HUMMING_UNVERIFIED_KERNELS=1. Its activation quantizers use no 4-bit MMA and are verified on the
H200 (tests/test_act_quant4_cuda.py).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps
from humming_core.spec import QuantSpec

from ..family import ModuleFamily
from .bind import W4a4Kernel
from .config import W4a4Config, W4a4Format
from .heuristics import candidates, supports
from .layout import W4a4Layout
from .render import render


class W4a4Family(ModuleFamily):
    """`KernelFamily` implementation (see humming_cuda.kernels.base)."""

    # Built and compile-tested for sm_80/86/89 and sm_120a/121a; never run on hardware.
    hardware_verified = False

    name = "w4a4"
    config_type = W4a4Config
    kernel_type = W4a4Kernel
    supports = staticmethod(supports)
    candidates = staticmethod(candidates)
    render = staticmethod(render)

    def weight_layout(self, spec: QuantSpec, config: W4a4Config, caps: DeviceCaps) -> W4a4Layout:
        return W4a4Layout(W4a4Format.from_spec(spec))


FAMILY = W4a4Family()

__all__ = ["FAMILY", "W4a4Config", "W4a4Family", "W4a4Kernel", "W4a4Layout"]
