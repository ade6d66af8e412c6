"""Load a cubin into torch's CUDA context and look up its kernel (cuModuleLoadData, cuModuleGetFunction).

Modules are loaded into the *primary* context of the target device, the one torch uses, pushed for
the duration of the load so the calling thread's current context is left as it was. The function
is loaded eagerly (cuFuncLoad) so that the first launch never loads code lazily inside a CUDA-graph
capture, and its dynamic shared-memory limit is raised at bind time, not at launch.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from cuda.bindings import driver

from humming_core.device import Artifact

DEFAULT_SMEM_LIMIT = 48 * 1024  # dynamic smem a kernel may use without opting in


class CudaDriverError(RuntimeError):
    """A CUDA driver call failed; names the call and the driver's error."""

    def __init__(self, what: str, err: Any) -> None:
        self.err = err
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(err)
        text = text.decode() if isinstance(text, bytes) else ""
        super().__init__(f"{what} failed: {name}: {text}")


def check(result: tuple, what: str) -> Any:
    """Unpack a cuda.bindings result tuple, raising CudaDriverError on failure."""
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise CudaDriverError(what, err)
    return values[0] if len(values) == 1 else tuple(values) or None


_init_lock = threading.Lock()
_primary: dict[int, Any] = {}


def primary_context(device_index: int) -> Any:
    """torch's context on `device_index` (the device's primary context), created if need be."""
    ctx = _primary.get(device_index)
    if ctx is not None:
        return ctx
    with _init_lock:
        if device_index not in _primary:
            import torch

            torch.cuda.init()  # torch owns the primary context; let it set up first
            check(driver.cuInit(0), "cuInit")
            dev = check(driver.cuDeviceGet(device_index), f"cuDeviceGet({device_index})")
            _primary[device_index] = check(
                driver.cuDevicePrimaryCtxRetain(dev), f"cuDevicePrimaryCtxRetain({device_index})"
            )
    return _primary[device_index]


def make_current(device_index: int) -> None:
    """Make the device's primary context current on this thread (a thread torch has not used)."""
    check(driver.cuCtxSetCurrent(primary_context(device_index)), "cuCtxSetCurrent")


class LoadedFunction:
    """One kernel of a loaded module, on one device. Lives as long as the module it came from."""

    def __init__(self, artifact: Artifact, device_index: int) -> None:
        self.name = artifact.name
        self.symbol = str(artifact.meta.get("symbol", artifact.name))
        self.meta = artifact.meta
        self.device_index = device_index
        ctx = primary_context(device_index)
        check(driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
        try:
            self.module = check(
                driver.cuModuleLoadData(artifact.binary), f"cuModuleLoadData({self.name})"
            )
            self._finalizer = weakref.finalize(self, driver.cuModuleUnload, self.module)
            self._finalizer.atexit = False  # the driver may be gone at exit; the OS frees it anyway
            self.handle = check(
                driver.cuModuleGetFunction(self.module, self.symbol.encode()),
                f"cuModuleGetFunction({self.symbol})",
            )
            if hasattr(driver, "cuFuncLoad"):
                check(driver.cuFuncLoad(self.handle), f"cuFuncLoad({self.symbol})")
            self.attributes = self._attributes()
            # without the opt-in, static and dynamic shared memory share the 48 KB
            self.max_dynamic_smem = DEFAULT_SMEM_LIMIT - self.attributes["static_smem_bytes"]
        finally:
            check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def _attributes(self) -> dict[str, int]:
        attr = driver.CUfunction_attribute
        wanted = {
            "registers": attr.CU_FUNC_ATTRIBUTE_NUM_REGS,
            "static_smem_bytes": attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            "local_bytes": attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            "max_threads_per_block": attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        }
        return {
            key: int(check(driver.cuFuncGetAttribute(a, self.handle), f"cuFuncGetAttribute({key})"))
            for key, a in wanted.items()
        }

    def reserve_smem(self, nbytes: int) -> None:
        """Allow launches with `nbytes` of dynamic shared memory (opt-in above 48 KB)."""
        if nbytes <= self.max_dynamic_smem:
            return
        check(
            driver.cuFuncSetAttribute(
                self.handle,
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                nbytes,
            ),
            f"raising {self.symbol}'s dynamic shared memory to {nbytes} bytes "
            f"(its static smem is {self.attributes['static_smem_bytes']} bytes; see the arch's "
            "smem_per_block in humming_cuda.caps)",
        )
        self.max_dynamic_smem = nbytes

    def resident_ctas(self, threads: int, smem: int) -> int:
        """How many CTAs of `threads` threads and `smem` bytes of dynamic shared memory the whole
        device holds at once (the grid of a persistent kernel; reserve_smem first)."""
        check(driver.cuCtxPushCurrent(primary_context(self.device_index)), "cuCtxPushCurrent")
        try:
            per_sm = check(
                driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.handle, threads, smem),
                f"cuOccupancyMaxActiveBlocksPerMultiprocessor({self.symbol})",
            )
            dev = check(driver.cuDeviceGet(self.device_index), "cuDeviceGet")
            sms = check(
                driver.cuDeviceGetAttribute(
                    driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev
                ),
                "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)",
            )
        finally:
            check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")
        if per_sm < 1:
            raise ValueError(
                f"{self.symbol}: a CTA of {threads} threads with {smem} bytes of dynamic shared "
                f"memory does not fit on an SM of cuda:{self.device_index} (registers "
                f"{self.attributes['registers']} per thread, static smem "
                f"{self.attributes['static_smem_bytes']} bytes)"
            )
        return int(per_sm) * int(sms)

    def __repr__(self) -> str:
        return f"LoadedFunction({self.symbol!r}, cuda:{self.device_index}, {self.attributes})"


def load(artifact: Artifact, device_index: int | None = None) -> LoadedFunction:
    """Load `artifact` on `device_index` (default: torch's current device)."""
    if device_index is None:
        import torch

        device_index = torch.cuda.current_device()
    return LoadedFunction(artifact, device_index)
