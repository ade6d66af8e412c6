"""The `cuda` entry point of the `humming.devices` group.

The probe is cheap, never raises and creates no CUDA context: it asks NVML (or, failing that, the
driver) for the first visible GPU's name and compute capability. It says no, with `probe_reason`,
when torch has no CUDA, when no GPU is visible, when the GPU is a PPU (humming-ppu's), or when the
GPU has no capability row.
"""

from __future__ import annotations

from humming_core.device import API_VERSION, Device


class CudaPlugin:
    name = "cuda"
    priority = 100
    api_version = API_VERSION

    def __init__(self) -> None:
        self.probe_reason = ""

    def probe(self) -> bool:
        try:
            reason = self._refusal()
        except Exception as exc:  # the contract: a probe never raises
            reason = f"cuda probe failed: {type(exc).__name__}: {exc}"
        self.probe_reason = reason or ""
        return reason is None

    @staticmethod
    def _refusal() -> str | None:
        try:
            import torch
        except ImportError:
            return "torch is not installed"
        if torch.version.cuda is None:
            return "torch has no CUDA (a CPU or ROCm build of torch is installed)"
        from .detect import first_gpu, refuse_reason

        try:
            gpu = first_gpu()
        except Exception as exc:
            return f"no NVIDIA driver could be queried ({type(exc).__name__}: {exc})"
        if gpu is None:
            return "no NVIDIA GPU is visible (check CUDA_VISIBLE_DEVICES)"
        return refuse_reason(gpu)

    def load(self) -> Device:
        from .device import CudaDevice

        return CudaDevice()


PLUGIN = CudaPlugin()
