"""Which NVIDIA GPU is here, and its capability row filled in with what was measured.

Two paths:
- `first_gpu()`, used by the plugin's probe: name and compute capability of the first visible GPU
  without creating a CUDA context and without initialising CUDA in this process when avoidable
  (NVML first, because a process that has called cuInit cannot hand CUDA to children it forks,
  e.g. vLLM's workers); the driver API is the fallback.
- `detect(index)`: the full row for a device (driver attributes; needs the driver, no context).

A PPU (T-Head Zhenwu) presents itself as a CUDA device, possibly with compute capability 8.0: it is
recognised by its name (`PPU...`, `ZW...`) and refused, so humming-ppu handles it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from humming_core.device import DeviceCaps

from .caps import arch_for_capability, caps_for_arch

PPU_NAME_PREFIXES = ("PPU", "ZW")


@dataclass(frozen=True)
class GpuIdentity:
    name: str
    major: int
    minor: int


def is_ppu_name(name: str) -> bool:
    """True for a T-Head PPU's device name (810E reports e.g. 'ZW810E'); those are not NVIDIA GPUs."""
    upper = name.strip().upper()
    return upper.startswith(PPU_NAME_PREFIXES) or "ZW810E" in upper


def refuse_reason(gpu: GpuIdentity) -> str | None:
    """Why the cuda device must not take this GPU, or None when it can."""
    if is_ppu_name(gpu.name):
        return f"device 0 is a PPU ({gpu.name}): left to humming-ppu"
    try:
        arch_for_capability(gpu.major, gpu.minor)
    except ValueError as exc:
        return f"device 0 ({gpu.name}) is not supported: {exc}"
    return None


def _first_visible_nvml_selector() -> str | None:
    """The first entry of CUDA_VISIBLE_DEVICES ('' when unset means index 0), None if none visible."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return "0"
    first = visible.split(",")[0].strip()
    return None if first == "" or first.startswith("-") else first


def _first_gpu_nvml() -> GpuIdentity | None:
    from cuda.bindings import nvml

    selector = _first_visible_nvml_selector()
    if selector is None:
        return None
    nvml.init_v2()
    try:
        if nvml.device_get_count_v2() == 0:
            return None
        if selector.isdigit():
            handle = nvml.device_get_handle_by_index_v2(int(selector))
        else:
            handle = nvml.device_get_handle_by_uuid(selector)
        major, minor = nvml.device_get_cuda_compute_capability(handle)
        return GpuIdentity(nvml.device_get_name(handle), int(major), int(minor))
    finally:
        nvml.shutdown()


def _driver():
    from cuda.bindings import driver

    from .loader import check

    check(driver.cuInit(0), "cuInit")
    return driver, check


def _first_gpu_driver() -> GpuIdentity | None:
    driver, check = _driver()
    if check(driver.cuDeviceGetCount(), "cuDeviceGetCount") == 0:
        return None
    return _identity(0)


def _identity(index: int) -> GpuIdentity:
    driver, check = _driver()
    dev = check(driver.cuDeviceGet(index), "cuDeviceGet")
    name = check(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    attr = driver.CUdevice_attribute
    major = check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cc"
    )
    minor = check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cc"
    )
    return GpuIdentity(name, int(major), int(minor))


def first_gpu() -> GpuIdentity | None:
    """Name and compute capability of the first visible GPU; None when there is none.

    Raises when neither NVML nor the driver can be asked (no NVIDIA driver installed).
    """
    import torch

    if torch.cuda.is_initialized():  # CUDA is up already: asking torch costs nothing more
        if torch.cuda.device_count() == 0:
            return None
        major, minor = torch.cuda.get_device_capability(0)
        return GpuIdentity(torch.cuda.get_device_name(0), major, minor)
    try:
        return _first_gpu_nvml()
    except (
        Exception
    ):  # no NVML (old bindings, a PPU driver, a container without it): ask the driver
        return _first_gpu_driver()


def detect(index: int = 0) -> DeviceCaps:
    """The capability row of GPU `index` with its measured name, SMs, L2, smem and bandwidth."""
    gpu = _identity(index)
    if is_ppu_name(gpu.name):
        raise ValueError(f"device {index} is a PPU ({gpu.name}): use humming-ppu's device for it")
    row = caps_for_arch(arch_for_capability(gpu.major, gpu.minor))
    driver, check = _driver()
    dev = check(driver.cuDeviceGet(index), "cuDeviceGet")
    attr = driver.CUdevice_attribute

    def get(name: str) -> int:
        return int(check(driver.cuDeviceGetAttribute(getattr(attr, name), dev), name))

    # DDR: two transfers per memory clock; an estimate (H200: ~4.0 TB/s vs 4.8 datasheet).
    mem_khz = get("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE")
    bus_bits = get("CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH")
    bandwidth_gbs = 2 * mem_khz * 1e3 * bus_bits / 8 / 1e9
    clock_mhz = get("CU_DEVICE_ATTRIBUTE_CLOCK_RATE") / 1e3
    return row.model_copy(
        update={
            "name": gpu.name,
            "sm_count": get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            "l2_bytes": get("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
            "smem_per_block": get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            "mem_bandwidth_gbs": round(bandwidth_gbs, 1),
            "notes": f"{row.notes}; sm clock {clock_mhz:.0f} MHz, memory clock {mem_khz / 1e3:.0f} MHz, "
            f"bus {bus_bits} bit (bandwidth is an estimate from these)",
        }
    )
