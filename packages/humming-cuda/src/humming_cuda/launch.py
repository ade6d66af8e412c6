"""Launch a loaded kernel with cuLaunchKernelEx on torch's current stream.

A launch does no host synchronisation and no allocation (parameters go through a per-thread,
preallocated ctypes block that the driver copies at launch), so it is safe inside CUDA-graph capture:
under capture torch's current stream is the capturing stream and the launch becomes a graph node.
Cluster dims and programmatic dependent launch (PDL: the kernel may start while the previous one
in the stream finishes, and waits with griddepcontrol.wait) are launch attributes.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from cuda.bindings import driver

from .args import Signature
from .loader import CudaDriverError, LoadedFunction, make_current

Dim3 = tuple[int, int, int]
_SUCCESS = driver.CUresult.CUDA_SUCCESS
_INVALID_CONTEXT = driver.CUresult.CUDA_ERROR_INVALID_CONTEXT

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_MAX_CONFIGS = 64


def current_stream(device_index: int) -> int:
    """torch's current stream on the device, as a raw CUstream handle."""
    if _raw_stream is not None:
        return _raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


class _ParamBlock:
    """Storage for one launch's parameters plus the void*[] the driver reads them through."""

    def __init__(self, ctypes_list: Sequence[type]) -> None:
        fields = [(f"p{i}", t) for i, t in enumerate(ctypes_list)]
        struct_type = type("KernelParams", (ctypes.Structure,), {"_fields_": fields})
        self.struct = struct_type()
        base = ctypes.addressof(self.struct)
        offsets = [getattr(struct_type, name).offset for name, _ in fields]
        self.pointers = (ctypes.c_void_p * max(len(fields), 1))(*(base + o for o in offsets))
        self.address = ctypes.addressof(self.pointers) if fields else 0
        self.names = [name for name, _ in fields]

    def fill(self, values: Sequence[Any]) -> int:
        struct = self.struct
        for name, value in zip(self.names, values, strict=True):
            setattr(struct, name, value)
        return self.address


class Launcher:
    """Launches one loaded function with a fixed parameter list (C types) and launch attributes."""

    def __init__(
        self,
        function: LoadedFunction,
        ctypes_list: Sequence[type],
        cluster: Dim3 | None = None,
        pdl: bool = False,
    ) -> None:
        self.function = function
        self.ctypes = tuple(ctypes_list)
        self.cluster = cluster
        self.pdl = pdl
        self._attrs = _launch_attributes(cluster, pdl)
        self._local = threading.local()

    def __call__(
        self,
        grid: Dim3,
        block: Dim3,
        params: Sequence[Any],
        smem: int = 0,
        stream: int | None = None,
    ) -> None:
        fn = self.function
        if len(params) != len(self.ctypes):
            raise ValueError(
                f"{fn.symbol}: {len(params)} launch parameters given, the kernel takes {len(self.ctypes)}"
            )
        if smem > fn.max_dynamic_smem:
            fn.reserve_smem(smem)
        local = self._local
        try:
            block_params, configs = local.params, local.configs
        except AttributeError:  # first launch on this thread
            block_params = local.params = _ParamBlock(self.ctypes)
            configs = local.configs = {}
        config = configs.get((grid, block, smem))
        if config is None:
            config = self._config(grid, block, smem)
            if len(configs) >= _MAX_CONFIGS:  # grids vary with M: keep the recent ones only
                configs.clear()
            configs[(grid, block, smem)] = config
        config.hStream = current_stream(fn.device_index) if stream is None else stream
        address = block_params.fill(params)
        (err,) = driver.cuLaunchKernelEx(config, fn.handle, address, 0)
        if err == _INVALID_CONTEXT:  # a thread torch never touched has no current context
            make_current(fn.device_index)
            (err,) = driver.cuLaunchKernelEx(config, fn.handle, address, 0)
        if err != _SUCCESS:
            raise CudaDriverError(
                f"launching {fn.symbol} grid={grid} block={block} smem={smem} "
                f"cluster={self.cluster} pdl={self.pdl}",
                err,
            )

    def _config(self, grid: Dim3, block: Dim3, smem: int) -> Any:
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = smem
        if self._attrs:
            config.attrs = self._attrs
            config.numAttrs = len(self._attrs)
        return config


def _launch_attributes(cluster: Dim3 | None, pdl: bool) -> list[Any]:
    attrs = []
    ids = driver.CUlaunchAttributeID
    if cluster is not None and tuple(cluster) != (1, 1, 1):
        attr = driver.CUlaunchAttribute()
        attr.id = ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        attrs.append(attr)
    if pdl:
        attr = driver.CUlaunchAttribute()
        attr.id = ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        attrs.append(attr)
    return attrs


@dataclass(frozen=True)
class LaunchShape:
    grid: Dim3
    block: Dim3
    smem: int = 0


class BoundKernel:
    """A ready-to-call kernel: `kernel(**tensors)` checks the arguments, then launches.

    `dims` are the sizes fixed when the kernel was built (N, K, ...); the rest are bound from the
    tensors at call time (M). `shape(dims)` gives the grid, block and dynamic smem for those dims.
    A family's `bind` can return one of these, or its own Kernel built from Signature and Launcher.
    """

    def __init__(
        self,
        name: str,
        function: LoadedFunction,
        signature: Signature,
        shape: Callable[[Mapping[str, int]], LaunchShape],
        dims: Mapping[str, int] | None = None,
        cluster: Dim3 | None = None,
        pdl: bool = False,
    ) -> None:
        self.name = name
        self.function = function
        self.signature = signature
        self.shape = shape
        self.dims = dict(dims or {})
        self.launcher = Launcher(function, signature.ctypes, cluster=cluster, pdl=pdl)

    def __call__(self, **values: Any) -> None:
        dims, params = self.signature.bind(values, self.dims, self.function.device_index)
        launch = self.shape(dims)
        self.launcher(launch.grid, launch.block, params, launch.smem)

    def __repr__(self) -> str:
        return f"BoundKernel({self.name!r}, {self.function!r})"
