"""moe_align on the GPU: vLLM's moe_align_block_size contract, deterministic, no host sync.

Not a GEMM family (it has no QuantSpec), so it is not in humming_cuda.kernels.FAMILIES: CudaDevice
calls `moe_align_kernels` from its `prepare_moe_align` (when a MoE layer is built: every routing-id
dtype's four phase kernels in one parallel build through core's compile cache) and
`moe_align_kernel` from its `moe_align` (a memo lookup once prepared, else built then).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import torch

from humming_core.device import KernelSource
from humming_core.jit import build_many

from ... import loader
from .bind import MoeAlignKernel, signature
from .plan import AlignPlan, plan_align
from .render import PHASES, kernel_name, render

if TYPE_CHECKING:
    from ...device import CudaDevice

_KERNELS: dict[tuple[str, int, torch.dtype], MoeAlignKernel] = {}
_LOCK = threading.Lock()


def prebuild_sources(arch: str, dtypes: tuple[torch.dtype, ...]) -> list[KernelSource]:
    """Every phase kernel source for topk_ids of each dtype on `arch` (dtype-major, PHASES order)."""
    return [render(phase, dtype, arch) for dtype in dict.fromkeys(dtypes) for phase in PHASES]


def moe_align_kernels(
    device: CudaDevice, device_index: int, dtypes: tuple[torch.dtype, ...]
) -> dict[torch.dtype, MoeAlignKernel]:
    """The moe_align kernels for topk_ids of each dtype on cuda:`device_index`; those not built yet
    are compiled together (one parallel build) and loaded now."""
    arch = device.caps(device_index).arch
    with _LOCK:
        missing = tuple(d for d in dict.fromkeys(dtypes) if (arch, device_index, d) not in _KERNELS)
        if missing:
            sources = prebuild_sources(arch, missing)
            artifacts = iter(build_many(device, sources))
            for dtype in missing:
                functions = {phase: loader.load(next(artifacts), device_index) for phase in PHASES}
                _KERNELS[arch, device_index, dtype] = MoeAlignKernel(functions, dtype)
        return {d: _KERNELS[arch, device_index, d] for d in dtypes}


def moe_align_kernel(device: CudaDevice, device_index: int, dtype: torch.dtype) -> MoeAlignKernel:
    """The moe_align kernel for topk_ids of `dtype` on cuda:`device_index`, built on first use."""
    kernel = _KERNELS.get((device.caps(device_index).arch, device_index, dtype))
    return (
        kernel if kernel is not None else moe_align_kernels(device, device_index, (dtype,))[dtype]
    )


__all__ = [
    "PHASES",
    "AlignPlan",
    "MoeAlignKernel",
    "kernel_name",
    "moe_align_kernel",
    "moe_align_kernels",
    "plan_align",
    "prebuild_sources",
    "render",
    "signature",
]
