"""Launching without a GPU, for the prepared-call tests: CPU tensors that report cuda:0 (so the
argument checks run as on a GPU), a stand-in loaded function, and a launcher that records each
launch's parameters, reading a prepared call's parameter block back through its void*[] the way
the driver does."""

from __future__ import annotations

import ctypes

import pytest
import torch

FAKE_STREAM = 0x5EED  # the raw stream handle the fake launch path reports as current


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


def wna16_packed(n: int, k: int, group: int) -> dict[str, torch.Tensor]:
    """Zero W4A16 weights of an N x K layer with fp16 group scales in the wna16 layout's shapes
    (the dense prepared-call tests' packed tensors)."""
    return {
        "qweight": cuda(torch.zeros(n // 64, k // 16, 128, dtype=torch.int32)),
        "scales": cuda(torch.zeros(k // group, n, dtype=torch.float16)),
        "global_scale": cuda(torch.ones(1)),
    }


def fp16_operands(m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x [m, k] and out [m, n], fp16 on the fake cuda:0."""
    x, out = torch.zeros(m, k, dtype=torch.float16), torch.zeros(m, n, dtype=torch.float16)
    return cuda(x), cuda(out)


def assert_refused_after_template(kernel, weights: dict, operands, make, message: str) -> None:
    """A prepared call of `kernel` on `weights`, once it has built its template from a good call
    (`operands()`: x, out), refuses make(x, out) with `message` and launches nothing more."""
    call = kernel.prepare(**weights)
    call(*operands())
    assert call.template is not None
    x, out = make(*operands())
    with pytest.raises(ValueError, match=message):
        call(x, out)
    assert len(kernel.launcher.launches) == 1


class FakeFunction:
    symbol = "humming_wna16_test"
    device_index = 0
    max_dynamic_smem = 1 << 20

    def __init__(self) -> None:
        self.meta: dict = {}

    def reserve_smem(self, nbytes: int) -> None:
        pass

    def resident_ctas(self, threads: int, smem: int) -> int:
        return 132  # the H200's SMs, one CTA each


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


def fake_split_workspace(monkeypatch) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """SPLIT_K_BUFFERS on the fake device: one workspace and counter pair, grown on demand; the
    list of pairs handed out (the last is the current one)."""
    from humming_cuda.kernels import split_k

    held: list[tuple[torch.Tensor, torch.Tensor]] = []

    def get(device, floats, tiles):
        if not held or held[-1][0].numel() < floats or held[-1][1].numel() < tiles:
            held.append((cuda(torch.zeros(floats)), cuda(torch.zeros(tiles, dtype=torch.int32))))
        return held[-1]

    monkeypatch.setattr(split_k.SPLIT_K_BUFFERS, "get", get)
    return held


def fake_act_quantizer(monkeypatch) -> None:
    """A quantizing kernel's module quantizer entries as fake functions whose launches are recorded
    (`kernel.quantizer._by_dtype[dtype][2].launches`), and the q and scales buffers allocated on
    the fake cuda:0 as x is (kept there by the views of q and the scales); the prepared calls'
    reused buffers start empty, on the one stream FAKE_STREAM."""
    from humming_cuda import launch
    from humming_cuda.kernels.act_quant import ActQuantizer, scratch

    def from_module(fmt, loaded, base, pdl):
        quantizer = ActQuantizer(fmt, {"fp16": FakeFunction(), "bf16": FakeFunction()}, pdl)
        for dtype, (fn, sig, _) in list(quantizer._by_dtype.items()):
            quantizer._by_dtype[dtype] = (fn, sig, Recorder(sig.ctypes))
        return quantizer

    monkeypatch.setattr(ActQuantizer, "from_module", staticmethod(from_module))
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: cuda(empty(*a, **k), kept=True))
    # the prepared calls' reused buffers (act_quant/scratch.py): none yet, on one fake stream
    monkeypatch.setattr(scratch, "_BUFFERS", scratch._ThreadBuffers())
    monkeypatch.setattr(scratch, "_capturing", lambda: False)
    monkeypatch.setattr(launch, "current_stream", lambda index: FAKE_STREAM)


def quant_launches(kernel, dtype=torch.bfloat16) -> list:
    """The recorded launches of `kernel`'s quantizer entry for x of `dtype` (fake_act_quantizer)."""
    return kernel.quantizer._by_dtype[dtype][2].launches
