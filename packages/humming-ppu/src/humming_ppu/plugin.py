"""The `ppu` entry point: finds a T-Head Zhenwu PPU through the vendor's torch build.

The vendor's PyTorch exposes a PPU as a `cuda` torch device whose name starts with `PPU` or `ZW`
(810E: 'PPU-ZW810E'). It may report compute capability 8.0, so the name is the only reliable sign;
the plugin's priority (200) is above `cuda`'s (100) so that a PPU is never taken for an A100.
"""

from __future__ import annotations

from humming_core.device import API_VERSION, DeviceNotAvailable

PPU_NAME_PREFIXES = ("PPU", "ZW")


def is_ppu_name(device_name: str) -> bool:
    """Does a driver-reported device name belong to a PPU?"""
    return device_name.strip().upper().startswith(PPU_NAME_PREFIXES)


def _device0_name() -> tuple[str | None, str]:
    """(name of torch CUDA device 0, "") or (None, why there is none). Never raises.

    torch.cuda.is_available() counts devices without creating a context, and reading a device's
    properties (cudaGetDeviceProperties) needs none either; no tensor is allocated here.
    """
    try:
        import torch
    except Exception as exc:  # a broken torch install must not break discovery
        return None, f"torch is not importable ({type(exc).__name__}: {exc})"
    try:
        if not torch.cuda.is_available():
            return None, "no torch CUDA device (torch.cuda.is_available() is False)"
        return torch.cuda.get_device_name(0), ""
    except Exception as exc:
        return None, f"torch could not query CUDA device 0 ({type(exc).__name__}: {exc})"


class PpuPlugin:
    name = "ppu"
    priority = 200
    api_version = API_VERSION

    def __init__(self) -> None:
        self.probe_reason = ""
        self.device_name: str | None = None

    def probe(self) -> bool:
        """True when torch's CUDA device 0 is a PPU; otherwise `probe_reason` says why not."""
        name, why = _device0_name()
        self.device_name = name
        if name is None:
            self.probe_reason = why
            return False
        if not is_ppu_name(name):
            prefixes = " or ".join(repr(p) for p in PPU_NAME_PREFIXES)
            self.probe_reason = f"device 0 is {name!r}, not a PPU (names start with {prefixes})"
            return False
        self.probe_reason = ""
        return True

    def load(self):
        """A PpuDevice for the PPU the probe found (its model row by device name)."""
        from .caps import model_for_name
        from .device import PpuDevice

        if not self.probe():
            raise DeviceNotAvailable(f"no PPU to load: {self.probe_reason}")
        return PpuDevice(model_for_name(self.device_name), on_ppu=True)


PLUGIN = PpuPlugin()
