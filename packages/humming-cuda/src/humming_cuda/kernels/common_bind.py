"""The call path shared by the families that quantize x on the GPU before the GEMM (w8a8, w4a4).

Both take `kernel(x=..., out=..., [act_scale=...], **packed)`: x [M, K] is quantized by the
module's own quantizer entries, the codes and scales join the packed weights as the GEMM's
arguments, and the GEMM launches one CTA per (block_n, block_m) tile of out and K split. A family's
kernel supplies its quantizer step, the K-derived dims of its signature and, if it splits K, the
split and its workspace.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch

from ..args import Signature, TensorArg
from ..launch import Launcher
from .warp_tile import WarpTileConfig

OUT_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def out_arg(out: str) -> TensorArg:
    """out [M, N] with row stride LDC, of the spec's output dtype `out`."""
    dtype = OUT_DTYPES[out]
    # pairs of columns are stored with one 2-element vector store
    return TensorArg("out", dtype, ("M", "N"), layout="strided", align=2 * dtype.itemsize)


def check_x_out(name: str, x: torch.Tensor, out: torch.Tensor) -> None:
    """x [M, K] and out [M, N] are matrices and out's rows are contiguous (the epilogue stores
    column pairs)."""
    if x.dim() != 2 or out.dim() != 2 or out.stride(-1) != 1:
        raise ValueError(
            f"{name}: expected x [M, K] and out [M, N] with innermost stride 1, got x "
            f"{tuple(x.shape)} and out {tuple(out.shape)} strides {tuple(out.stride())}"
        )


class ActQuantGemmKernel(ABC):
    """Checks x and out, quantizes x (`_quantize`), binds the arguments and launches the GEMM.

    Subclasses set `fmt` and their quantizer, then call this __init__ with the signature, and
    define `_quantize` and `_k_dims`."""

    # rows of x one launch computes (the decode kernel's tile takes fewer; checked here and by
    # PreparedDenseCall's quick check)
    max_m = 1 << 31
    # columns of x per column of K: 2 where the quantizer fuses an input GLU (x = [gate | up])
    x_columns = 1

    def __init__(
        self, function: Any, config: WarpTileConfig, signature: Signature, pdl: bool = False
    ) -> None:
        self.config = config
        self.name = function.symbol
        self.function = function
        self.signature = signature
        self.launcher = Launcher(function, signature.ctypes, pdl=pdl)
        self.smem = self._smem_bytes()  # dynamic shared memory of every launch
        function.reserve_smem(self.smem)

    def _smem_bytes(self) -> int:
        """The config's shared memory; a family whose need also depends on the spec overrides it
        (called once the subclass has set `fmt`)."""
        return self.config.smem_bytes

    @abstractmethod
    def _quantize(
        self, x: torch.Tensor, act_scale: torch.Tensor | None
    ) -> tuple[dict[str, Any], Callable[[], None]]:
        """(the quantized activations and their scales by GEMM argument name, a call that runs
        the quantizer): a family whose quantizer runs while it is checked returns a no-op."""

    @abstractmethod
    def _k_dims(self, k: int) -> dict[str, int]:
        """The signature's dims that derive from K (scale groups, packed words)."""

    def _split_k(
        self, k: int, tiles: int, device: torch.device
    ) -> tuple[int, dict[str, Any], dict[str, int]]:
        """(CTAs per tile along K, the extra arguments and signature dims of that split) for
        `tiles` output tiles: one, none and none, unless the family splits K."""
        return 1, {}, {}

    def checked(
        self, values: dict[str, Any]
    ) -> tuple[tuple[int, int, int], list, dict[str, int], Callable[[], None]]:
        """(grid, parameters in order, dims, the quantizer's launch): every argument checked, the
        quantized activations' buffers allocated. Raises naming what is wrong."""
        values = dict(values)
        x, out = values.pop("x"), values["out"]
        check_x_out(self.name, x, out)
        if x.shape[0] > self.max_m:
            raise ValueError(
                f"{self.name}: argument 'x': {x.shape[0]} rows, but this kernel computes at most "
                f"{self.max_m} (M <= {self.max_m}); larger M needs a kernel chosen for that M"
            )
        quantized, quantize = self._quantize(x, values.pop("act_scale", None))
        values.update(quantized)
        m, n = out.shape
        k = x.shape[1] // self.x_columns
        cfg = self.config
        grid_n, grid_m = -(-n // cfg.block_n), -(-m // cfg.block_m)
        split, extra, split_dims = self._split_k(k, grid_n * grid_m, x.device)
        values.update(extra)
        dims = {"LDC": out.stride(0), **self._k_dims(k), **split_dims}
        dims, params = self.signature.bind(values, dims, self.function.device_index)
        return (grid_n, grid_m, split), params, dims, quantize

    def __call__(self, **values: Any) -> None:
        grid, params, _, quantize = self.checked(values)
        quantize()
        if grid[1]:
            cfg = self.config
            self.launcher(grid, (cfg.threads, 1, 1), params, self.smem)
