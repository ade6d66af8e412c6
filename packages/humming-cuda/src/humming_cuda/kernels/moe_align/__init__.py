"""moe_align on the GPU: vLLM's moe_align_block_size contract, deterministic, no host sync.

Not a GEMM family (it has no QuantSpec), so it is not in humming_cuda.kernels.FAMILIES: CudaDevice
calls `moe_align_kernel` from its `moe_align` method. The four phase kernels of one routing-id
dtype are built together through core's compile cache the first time they are asked for on a
device; call once before capturing a CUDA graph (as for every humming kernel).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import torch

from humming_core.jit import build_many

from ... import loader
from .bind import MoeAlignKernel, signature
from .plan import AlignPlan, plan_align
from .render import PHASES, kernel_name, render

if TYPE_CHECKING:
    from ...device import CudaDevice

_KERNELS: dict[tuple[str, int, torch.dtype], MoeAlignKernel] = {}
_LOCK = threading.Lock()


def moe_align_kernel(device: CudaDevice, device_index: int, dtype: torch.dtype) -> MoeAlignKernel:
    """The moe_align kernel for topk_ids of `dtype` on cuda:`device_index`, built on first use."""
    arch = device.caps(device_index).arch
    key = (arch, device_index, dtype)
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    with _LOCK:
        if key not in _KERNELS:
            sources = [render(phase, dtype, arch) for phase in PHASES]
            artifacts = build_many(device, sources)
            functions = {
                phase: loader.load(artifact, device_index)
                for phase, artifact in zip(PHASES, artifacts, strict=True)
            }
            _KERNELS[key] = MoeAlignKernel(functions, dtype)
        return _KERNELS[key]


__all__ = [
    "PHASES",
    "AlignPlan",
    "MoeAlignKernel",
    "kernel_name",
    "moe_align_kernel",
    "plan_align",
    "render",
    "signature",
]
