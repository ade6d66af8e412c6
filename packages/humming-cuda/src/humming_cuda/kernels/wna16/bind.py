"""Bind a loaded WnA16 function into a callable kernel: argument checks, workspace, grid, launch."""

from __future__ import annotations

import threading
from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from .config import KernelFormat, Wna16Config

_ACT = {"fp16": torch.float16, "bf16": torch.bfloat16}
_OUT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def signature(fmt: KernelFormat, name: str) -> Signature:
    """Parameters in the order of HUMMING_WNA16_ENTRY (include/humming/kernel/wna16.cuh)."""
    act = _ACT[fmt.act]
    in_loop = fmt.group > 0
    return Signature(
        TensorArg("x", act, ("M", "K"), layout="rows"),
        TensorArg("qweight", torch.int32, ("NT", "KT", 32 * fmt.bits)),
        TensorArg("scales", act, ("G", "NP"), optional=not in_loop),
        TensorArg("zeros", act, ("G", "NP"), optional=not (in_loop and fmt.zero != "none")),
        TensorArg(
            "channel_scale", torch.float32, ("C",), optional=fmt.epi_scale == "none", align=4
        ),
        TensorArg("global_scale", torch.float32, (1,), optional=not fmt.epi_global, align=4),
        TensorArg("bias", torch.float32, ("N",), optional=not fmt.bias, align=4),
        TensorArg("out", _OUT[fmt.out], ("M", "N"), layout="strided", align=4),
        TensorArg("workspace", torch.float32, ("WS",), optional=True),
        TensorArg("counters", torch.int32, ("CT",), optional=True),
        *(ScalarArg(n, "int32", dim=d) for n, d in _SCALARS),
        kernel=name,
    )


_SCALARS = (
    ("M", "M"),
    ("N", "N"),
    ("K", "K"),
    ("lda", "LDA"),
    ("ldc", "LDC"),
    ("n_pad", "N_PAD"),
    ("k_tiles", "KT"),
    ("groups", "G"),
    ("iters_per_split", "IPS"),
)


class _SplitKBuffers:
    """Per-device fp32 workspace and tile counters for split-K, grown on demand and then reused.

    The counters start at zero and every split-K launch leaves them at zero, so a call needs no
    memset (CUDA-graph replays included). Grow them in a warm-up call before capturing a graph.
    Launches that share a device must not run concurrently on different streams.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def get(
        self, device: torch.device, floats: int, tiles: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        index = device.index if device.index is not None else torch.cuda.current_device()
        with self._lock:
            ws, ct = self._buffers.get(index, (None, None))
            if ws is None or ws.numel() < floats:
                ws = torch.empty(max(floats, 1 << 16), dtype=torch.float32, device=device)
            if ct is None or ct.numel() < tiles:
                ct = torch.zeros(max(tiles, 1024), dtype=torch.int32, device=device)
            self._buffers[index] = (ws, ct)
            return ws, ct


SPLIT_K_BUFFERS = _SplitKBuffers()


class Wna16Kernel:
    """`kernel(x=..., out=..., **packed_weights)`: out[M, N] = x[M, K] @ W^T (+ bias)."""

    def __init__(self, function: Any, spec: QuantSpec, config: Wna16Config) -> None:
        self.fmt = KernelFormat.from_spec(spec)
        self.config = config
        self.name = function.symbol
        self.function = function
        self.signature = signature(self.fmt, self.name)
        self.launcher = Launcher(function, self.signature.ctypes)
        self.smem = self.fmt.smem_bytes(config)
        function.reserve_smem(self.smem)

    def __call__(self, **values: Any) -> None:
        x, out, qw = values["x"], values["out"], values["qweight"]
        if out.dim() != 2 or out.stride(-1) != 1:
            raise ValueError(
                f"{self.name}: argument 'out': expected a 2-D tensor with innermost stride 1, got "
                f"shape {tuple(out.shape)} strides {tuple(out.stride())}"
            )
        cfg = self.config
        m, k = x.shape
        n = out.shape[1]
        nt, kt = qw.shape[0], qw.shape[1]
        if nt * 64 < n or kt * 16 < k:
            raise ValueError(
                f"{self.name}: packed weights hold {nt * 64}x{kt * 16} (N x K, padded) but the call "
                f"needs {n}x{k}: pack the weights of this layer with this family's layout"
            )
        grid_n, grid_m = -(-n // cfg.block_n), -(-m // cfg.block_m)
        iters = -(-(kt * 16) // cfg.block_k)
        split = max(1, min(cfg.split_k, iters))
        ips = -(-iters // split)
        split = -(-iters // ips)
        values = dict(values)
        if split > 1:
            ws, ct = SPLIT_K_BUFFERS.get(
                x.device, grid_n * grid_m * split * cfg.block_m * cfg.block_n, grid_n * grid_m
            )
            values["workspace"], values["counters"] = ws, ct
        scales = values.get("scales")
        dims = {
            "LDA": x.stride(0),
            "LDC": out.stride(0),
            "N_PAD": nt * 64,
            "G": scales.shape[0] if scales is not None else 0,
            "IPS": ips,
            "NP": nt * 64,
            "C": 1 if self.fmt.epi_scale == "tensor" else nt * 64,
        }
        dims = self.signature.check(values, dims, self.function.device_index)
        if m == 0:
            return
        self.launcher(
            (grid_n, grid_m, split),
            (cfg.threads, 1, 1),
            self.signature.pack(values, dims),
            self.smem,
        )
