"""Bind a loaded WnA16 function into a callable kernel: argument checks, workspace, grid, launch."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Dim3, Launcher
from ..dense_call import PreparedDenseCall
from ..split_k import split_iterations, tile_workspace
from .config import KernelFormat, Wna16Config

_ACT = {"fp16": torch.float16, "bf16": torch.bfloat16}
_OUT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def layout_args(fmt: KernelFormat, experts: tuple[str, ...] = ()) -> tuple[TensorArg, ...]:
    """x and the wna16 layout's tensors, in the order every WnA16 entry takes them first
    (HUMMING_WNA16_ENTRY, HUMMING_WNA16_WGMMA_ENTRY, HUMMING_MOE_WNA16_ENTRY). `experts` is ("E",)
    for the MoE layout, whose tensors stack one such set per expert."""
    act = _ACT[fmt.act]
    in_loop = fmt.group > 0
    f32 = torch.float32
    return (
        TensorArg("x", act, ("M", "K"), layout="rows"),
        TensorArg("qweight", torch.int32, (*experts, "NT", "KT", 32 * fmt.bits)),
        TensorArg("scales", act, (*experts, "G", "NP"), optional=not in_loop),
        TensorArg(
            "zeros", act, (*experts, "G", "NP"), optional=not (in_loop and fmt.zero != "none")
        ),
        TensorArg("channel_scale", f32, (*experts, "C"), optional=fmt.epi_scale == "none", align=4),
        TensorArg("global_scale", f32, experts or (1,), optional=not fmt.epi_global, align=4),
        TensorArg("bias", f32, (*experts, "N"), optional=not fmt.bias, align=4),
    )


def signature(fmt: KernelFormat, name: str) -> Signature:
    """Parameters in the order of HUMMING_WNA16_ENTRY (include/humming/kernel/wna16.cuh)."""
    return Signature(
        *layout_args(fmt),
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


class Wna16Kernel:
    """`kernel(x=..., out=..., **packed_weights)`: out[M, N] = x[M, K] @ W^T (+ bias).

    `kernel.prepare(**packed_weights)` binds one layer's weights for repeated calls (Wna16Call)."""

    max_m = 1 << 31  # rows of x one launch computes (the decode kernel's tile takes fewer)

    def __init__(
        self, function: Any, spec: QuantSpec, config: Wna16Config, pdl: bool = False
    ) -> None:
        self.fmt = KernelFormat.from_spec(spec)
        self.config = config
        self.name = function.symbol
        self.function = function
        self.signature = signature(self.fmt, self.name)
        self.launcher = Launcher(function, self.signature.ctypes, pdl=pdl)
        self.smem = self.fmt.smem_bytes(config)
        function.reserve_smem(self.smem)

    def __call__(self, **values: Any) -> None:
        grid, params, _ = self.checked(values)
        if grid[1]:
            self.launcher(grid, (self.config.threads, 1, 1), params, self.smem)

    def prepare(self, **packed: torch.Tensor) -> Wna16Call:
        return Wna16Call(self, packed)

    def checked(self, values: dict[str, Any]) -> tuple[Dim3, list, dict[str, int]]:
        """Check every argument: (grid, parameters in order, dims). Raises naming what is wrong."""
        for name in ("x", "out", "qweight"):
            if not isinstance(values.get(name), torch.Tensor):
                self.signature.check(values)  # raises, naming the argument and what it takes
        x, out, qw = values["x"], values["out"], values["qweight"]
        if x.dim() != 2:
            self.signature.check(values)
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
        if m > self.max_m:
            raise ValueError(
                f"{self.name}: argument 'x': {m} rows, but this kernel computes at most "
                f"{self.max_m} (M <= {self.max_m}); larger M needs a kernel chosen for that M"
            )
        grid_n, grid_m = -(-n // cfg.block_n), -(-m // cfg.block_m)
        split, ips = self.split_k(kt)
        values = dict(values)
        if split > 1:
            values["workspace"], values["counters"] = self.split_k_buffers(
                x.device, grid_n, grid_m, split
            )
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
        dims, params = self.signature.bind(values, dims, self.function.device_index)
        return (grid_n, grid_m, split), params, dims

    def split_k(self, k_tiles: int) -> tuple[int, int]:
        """(splits, K iterations per split) for a layer of `k_tiles` 16-wide K tiles."""
        return split_iterations(-(-(k_tiles * 16) // self.config.block_k), self.config.split_k)

    def split_k_buffers(
        self, device: torch.device, grid_n: int, grid_m: int, split: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shared fp32 workspace and zeroed tile counters big enough for this grid."""
        cfg = self.config
        return tile_workspace(device, grid_n * grid_m, split, cfg.block_m * cfg.block_n)


class Wna16Call(PreparedDenseCall):
    """One layer's packed weights bound to a Wna16Kernel (kernels/dense_call.py): x reaches the
    kernel as its pointer and row stride."""

    def __init__(self, kernel: Wna16Kernel, packed: dict[str, torch.Tensor]) -> None:
        fmt = kernel.fmt
        super().__init__(kernel, packed, _ACT[fmt.act], _OUT[fmt.out], 4, kernel.smem)

    def patch_x(self, struct: Any, x: torch.Tensor, address: int, lda: int, m: int) -> None:
        struct.x, struct.lda = address, lda
