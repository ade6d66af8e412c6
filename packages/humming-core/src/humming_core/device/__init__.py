"""Device protocol and registry (see DESIGN.md, "The device contract")."""

from .protocol import (
    API_VERSION,
    Artifact,
    Device,
    DeviceCaps,
    DevicePlugin,
    GemmProblem,
    Kernel,
    KernelSource,
    PreparesMoeAlign,
    Support,
    SupportsMoeAlign,
)
from .registry import DeviceNotAvailable, PluginStatus, Registry, get_device, registry

__all__ = [
    "API_VERSION",
    "Artifact",
    "Device",
    "DeviceCaps",
    "DeviceNotAvailable",
    "DevicePlugin",
    "GemmProblem",
    "Kernel",
    "KernelSource",
    "PluginStatus",
    "PreparesMoeAlign",
    "Registry",
    "Support",
    "SupportsMoeAlign",
    "get_device",
    "registry",
]
