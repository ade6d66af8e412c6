"""Launch a loaded kernel with cuLaunchKernel(Ex) on torch's current stream.

A launch does no host synchronisation and no allocation (parameters go through a per-thread,
preallocated ctypes block that the driver copies at launch), so it is safe inside CUDA-graph capture:
under capture torch's current stream is the capturing stream and the launch becomes a graph node.
Cluster dims and programmatic dependent launch (PDL: the kernel may start while the previous one
in the stream finishes, and waits with griddepcontrol.wait) are launch attributes; HUMMING_PDL=0
drops the latter.
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from cuda.bindings import driver

from humming_core.env import ENV

from .args import Signature
from .loader import CudaDriverError, LoadedFunction, make_current

Dim3 = tuple[int, int, int]
_SUCCESS = driver.CUresult.CUDA_SUCCESS
_INVALID_CONTEXT = driver.CUresult.CUDA_ERROR_INVALID_CONTEXT

_MAX_CONFIGS = 256
_MAX_STREAMS = 256


def _torch_stream(device_index: int) -> int:
    return torch.cuda.current_stream(device_index).cuda_stream


# current_stream(device_index): torch's current stream on the device, as a raw CUstream handle;
# torch's own accessor where the build has it (no Python frame of ours on every launch)
current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or _torch_stream


class ParamBlock:
    """Storage for one launch's parameters plus the void*[] the driver reads them through.

    Fields are named after the kernel's arguments when names are given (so a prepared call can
    patch `block.struct.x = ptr`), else p0, p1, ...; the driver copies the values at launch, so
    one block per thread can be reused for every launch.
    """

    def __init__(self, ctypes_list: Sequence[type], names: Sequence[str] | None = None) -> None:
        names = list(names) if names is not None else [f"p{i}" for i in range(len(ctypes_list))]
        fields = list(zip(names, ctypes_list, strict=True))
        struct_type = type("KernelParams", (ctypes.Structure,), {"_fields_": fields})
        self.struct = struct_type()
        base = ctypes.addressof(self.struct)
        offsets = [getattr(struct_type, name).offset for name, _ in fields]
        self.pointers = (ctypes.c_void_p * max(len(fields), 1))(*(base + o for o in offsets))
        self.address = ctypes.addressof(self.pointers) if fields else 0
        self.names = names

    def fill(self, values: Sequence[Any]) -> int:
        struct = self.struct
        for name, value in zip(self.names, values, strict=True):
            setattr(struct, name, value)
        return self.address


class ThreadParams:
    """A prepared call's parameter blocks: one per thread, each filled from the same template (the
    fully checked first call's values) and then patched by that thread's calls."""

    def __init__(self, ctypes_list: Sequence[type], names: Sequence[str], template: list) -> None:
        self.ctypes, self.names, self.template = ctypes_list, names, template
        self._local = threading.local()

    def block(self) -> ParamBlock:
        try:
            return self._local.params
        except AttributeError:  # first launch on this thread: its own block, from the template
            params = ParamBlock(self.ctypes, self.names)
            params.fill(self.template)
            self._local.params = params
            return params


_streams: dict[int, Any] = {}


def stream_handle(raw: int) -> Any:
    """The binding's CUstream for a raw handle, made once per stream (cuda.bindings would
    otherwise build one from the int on every launch)."""
    handle = _streams.get(raw)
    if handle is None:
        if len(_streams) >= _MAX_STREAMS:
            _streams.clear()
        handle = _streams[raw] = driver.CUstream(raw)
    return handle


def split_cluster_z(splits: int, divisor: int = 0) -> int:
    """CTAs per cluster of a launch whose grid z holds a tile's `splits` K splits: all of them,
    or with `divisor` (several clusters per tile) the greatest common divisor of the two."""
    return math.gcd(splits, divisor) if divisor else splits


class Launcher:
    """Launches one loaded function with a fixed parameter list (C types) and launch attributes.

    Without cluster dims or PDL it uses cuLaunchKernel with plain integers (no per-call config
    object); with them, cuLaunchKernelEx and a config cached per (grid, block, smem, stream): a
    cached config is never written again, so every thread can launch with it.
    `cluster_z_from_grid`: each launch's clusters are its grid's z extent, (1, 1, grid z) (split-K
    whose splits of a tile form one cluster), or with `cluster_z_divisor` the greatest common
    divisor of the two (several clusters of a tile's splits); clusters of 1 launch without.
    """

    def __init__(
        self,
        function: LoadedFunction,
        ctypes_list: Sequence[type],
        cluster: Dim3 | None = None,
        pdl: bool = False,
        cluster_z_from_grid: bool = False,
        cluster_z_divisor: int = 0,
    ) -> None:
        if cluster is not None and cluster_z_from_grid:
            raise ValueError("give cluster dims or cluster_z_from_grid, not both")
        if cluster_z_divisor and not cluster_z_from_grid:
            raise ValueError("cluster_z_divisor goes with cluster_z_from_grid")
        self.function = function
        self.ctypes = tuple(ctypes_list)
        self.cluster = cluster
        self.cluster_z_from_grid = cluster_z_from_grid
        self.cluster_z_divisor = cluster_z_divisor
        self.pdl = pdl and ENV.HUMMING_PDL
        self._attrs = _launch_attributes(cluster, self.pdl)
        self._configs: dict[tuple[Dim3, Dim3, int, int], Any] = {}
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
        try:
            block_params = self._local.params
        except AttributeError:  # first launch on this thread
            block_params = self._local.params = ParamBlock(self.ctypes)
        self.launch(grid, block, smem, block_params.fill(params), stream)

    def launch(
        self, grid: Dim3, block: Dim3, smem: int, address: int, stream: int | None = None
    ) -> None:
        """Launch with the parameters already in place at `address` (a ParamBlock's)."""
        raw = current_stream(self.function.device_index) if stream is None else stream
        err = self._issue(grid, block, smem, address, raw)
        if err is not _SUCCESS:  # identity: the cheap test on the hot path; _failed compares
            self._failed(err, grid, block, smem, address, raw)

    def _issue(self, grid: Dim3, block: Dim3, smem: int, address: int, raw: int) -> Any:
        handle = self.function.handle
        if not self._attrs and not (self.cluster_z_from_grid and grid[2] > 1):
            gx, gy, gz = grid
            bx, by, bz = block
            stream = stream_handle(raw)
            (err,) = driver.cuLaunchKernel(handle, gx, gy, gz, bx, by, bz, smem, stream, address, 0)
            return err
        config = self._configs.get((grid, block, smem, raw))
        if config is None:
            config = self._config(grid, block, smem, raw)
        (err,) = driver.cuLaunchKernelEx(config, handle, address, 0)
        return err

    def _cluster(self, grid: Dim3) -> Dim3 | None:
        """The cluster dims of a launch of `grid`."""
        if not self.cluster_z_from_grid:
            return self.cluster
        return (1, 1, split_cluster_z(grid[2], self.cluster_z_divisor))

    def _failed(self, err: Any, grid: Dim3, block: Dim3, smem: int, address: int, raw: int) -> None:
        if err == _INVALID_CONTEXT:  # a thread torch never touched has no current context
            make_current(self.function.device_index)
            err = self._issue(grid, block, smem, address, raw)
        if err != _SUCCESS:
            raise CudaDriverError(
                f"launching {self.function.symbol} grid={grid} block={block} smem={smem} "
                f"cluster={self._cluster(grid)} pdl={self.pdl}",
                err,
            )

    def _config(self, grid: Dim3, block: Dim3, smem: int, raw: int) -> Any:
        """A new launch config, cached (filled before it is published: another thread may take
        it from the cache at once)."""
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = smem
        config.hStream = raw
        attrs = self._attrs
        if self.cluster_z_from_grid:
            attrs = _launch_attributes(self._cluster(grid), self.pdl)
        config.attrs = attrs
        config.numAttrs = len(attrs)
        configs = self._configs
        if len(configs) >= _MAX_CONFIGS:  # grids vary with M: keep the recent ones only
            configs.clear()
        configs[(grid, block, smem, raw)] = config
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
