"""Launching without a GPU, for the prepared-call tests: CPU tensors that report cuda:0 (so the
argument checks run as on a GPU), a stand-in loaded function, and a launcher that records each
launch's parameters, reading a prepared call's parameter block back through its void*[] the way
the driver does."""

from __future__ import annotations

import ctypes

import torch


class OnCuda(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl
    is_cuda = True

    def get_device(self) -> int:
        return 0


class OnCudaKept(torch.Tensor):
    """OnCuda whose results stay on "cuda:0" through torch ops (e.g. `.float().contiguous()` of
    router weights inside a call); slower, so only where a call derives tensors."""

    is_cuda = True

    def get_device(self) -> int:
        return 0


def cuda(t: torch.Tensor, kept: bool = False) -> torch.Tensor:
    return t.as_subclass(OnCudaKept if kept else OnCuda)


class FakeFunction:
    symbol = "humming_wna16_test"
    device_index = 0
    max_dynamic_smem = 1 << 20

    def __init__(self) -> None:
        self.meta: dict = {}

    def reserve_smem(self, nbytes: int) -> None:
        pass


def _plain(value):
    """A parameter as a comparable value: by-value arrays (a TMA tensor map) as tuples."""
    return tuple(value) if isinstance(value, ctypes.Array) else value


class Recorder:
    """Stands in for Launcher: records (grid, block, smem, parameter values) per launch."""

    def __init__(self, ctypes_list) -> None:
        self.ctypes = ctypes_list
        self.launches: list[tuple] = []

    def __call__(self, grid, block, params, smem=0, stream=None) -> None:
        self.launches.append((tuple(grid), tuple(block), smem, [_plain(p) for p in params]))

    def launch(self, grid, block, smem, address, stream=None) -> None:
        pointers = (ctypes.c_void_p * len(self.ctypes)).from_address(address)
        values = [
            _plain(t.from_address(p)) if issubclass(t, ctypes.Array) else t.from_address(p).value
            for t, p in zip(self.ctypes, pointers, strict=True)
        ]
        self.launches.append((tuple(grid), tuple(block), smem, values))
