"""Bind a loaded WnA16-wgmma function: check the arguments (the wna16 layout's tensors), encode
x's TMA tensor map (cached per pointer), launch one CTA per output tile (block_m x block_n) and K
split, with split-K's shared workspace for the register-A form (none for its cluster split-K, whose
splits of a tile are one cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from humming_core.env import ENV
from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Dim3, Launcher, split_cluster_z
from ..common_bind import out_arg
from ..split_k import split_iterations, tile_workspace
from ..wna16.bind import layout_args
from ..wna16.config import LAYOUT_TILE_K, LAYOUT_TILE_N, KernelFormat
from .config import BLOCK_K, WgmmaWna16Config
from .tma import ActMapCache, TensorMapParam

if TYPE_CHECKING:
    from .call import WgmmaWna16Call


def signature(fmt: KernelFormat, name: str, split: bool = False) -> Signature:
    """Parameters in the order of HUMMING_WNA16_WGMMA_ENTRY, and with `split` (the register-A
    form's HUMMING_WNA16_WGMMA_RS_ENTRY) split-K's workspace, counters, K steps per split and the
    CTAs the device holds at once (0 unless the config sums splits all at once). `x` is checked
    here but reaches the kernel as the tensor map that replaces it; TMA needs 16-byte aligned,
    K-contiguous rows."""
    split_args = (
        TensorArg("workspace", torch.float32, ("WS",), optional=True),
        TensorArg("counters", torch.int32, ("CT",), optional=True),
        ScalarArg("iters_per_split", "int32", dim="IPS"),
        ScalarArg("resident", "int32", dim="RES"),
    )
    return Signature(
        *layout_args(fmt),
        out_arg(fmt.out),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "N", "K")),
        ScalarArg("ldc", "int32", dim="LDC"),
        ScalarArg("n_pad", "int32", dim="NP"),
        ScalarArg("k_tiles", "int32", dim="KT"),
        ScalarArg("group_shift", "int32", dim="GS"),
        *(split_args if split else ()),
        kernel=name,
    )


def group_shift(fmt: KernelFormat) -> int:
    """log2 of the in-loop scale group (0 without one): the kernels find a K row's scale row by
    shifting (groups are powers of two; a whole-K group is WHOLE_K_GROUP)."""
    return fmt.group.bit_length() - 1 if fmt.group > 0 else 0


class WgmmaWna16Kernel:
    """`kernel(x=..., out=..., **packed)`: out[M, N] = x @ W^T (+ bias).

    x is fp16 or bf16 [M, K] (K contiguous, 16-byte aligned rows); `packed` is the wna16 layout's
    qweight / scales / zeros / channel_scale / global_scale / bias (whichever the format has).
    `kernel.prepare(**packed)` binds one layer's weights for repeated calls (WgmmaWna16Call)."""

    max_m = 1 << 31  # rows of x one launch computes (PreparedDenseCall's quick check)

    def __init__(self, function: Any, spec: QuantSpec, config: WgmmaWna16Config) -> None:
        self.fmt = KernelFormat.from_spec(spec)
        self.config = config
        self.name = function.symbol
        self.function = function
        self.signature = signature(self.fmt, function.symbol, config.weights_in_registers)
        ctypes_list = (TensorMapParam, *self.signature.ctypes[1:])
        # cluster split-K: a tile's splits (the grid's z) are one cluster, or clusters of
        # rs_cluster_ctas of them
        self.launcher = Launcher(
            function,
            ctypes_list,
            pdl=config.pdl,
            cluster_z_from_grid=config.rs_cluster_split,
            cluster_z_divisor=config.rs_cluster_ctas,
        )
        self.maps = ActMapCache(config.block_m)
        function.reserve_smem(config.smem_bytes)
        # stream-K's persistent grid: the CTAs the device holds at once (one per SM)
        self.resident = (
            function.resident_ctas(config.threads, config.smem_bytes) if config.rs_stream_k else 0
        )
        # rs_split_scatter: the grids whose splits may wait for each other (all resident at once;
        # the kernel sums a larger grid's splits the workspace form's way, as all of them with
        # HUMMING_SPLIT_SCATTER=0)
        self.scatter_ctas = (
            function.resident_ctas(config.threads, config.smem_bytes)
            if config.rs_split_scatter and ENV.HUMMING_SPLIT_SCATTER
            else 0
        )

    def _dims(self, x: torch.Tensor, out: torch.Tensor, ips: int) -> dict[str, int]:
        """The wna16 layout's padded sizes for this N and K: a packed tensor of another shape
        then fails the signature's check by name."""
        tiles_n = -(-out.shape[1] // LAYOUT_TILE_N)
        return {
            "LDC": out.stride(0),
            "NT": tiles_n,
            "NP": tiles_n * LAYOUT_TILE_N,
            "KT": -(-x.shape[1] // LAYOUT_TILE_K),
            "GS": group_shift(self.fmt),
            "IPS": ips,
            "RES": self.scatter_ctas,
        }

    def __call__(self, **values: Any) -> None:
        grid, params, _ = self.checked(values)
        if grid[1]:
            cfg = self.config
            self.launcher(grid, (cfg.threads, 1, 1), params, cfg.smem_bytes)

    def prepare(self, **packed: torch.Tensor) -> WgmmaWna16Call:
        from .call import WgmmaWna16Call

        return WgmmaWna16Call(self, packed)

    def checked(self, values: dict[str, Any]) -> tuple[Dim3, list, dict[str, int]]:
        """Check every argument: (grid, parameters in order with x's tensor map first, dims).
        Raises naming what is wrong."""
        x, out = values["x"], values["out"]
        if x.dim() != 2 or out.dim() != 2 or out.stride(-1) != 1:
            raise ValueError(
                f"{self.name}: expected x [M, K] and out [M, N] with innermost stride 1, got x "
                f"{tuple(x.shape)} and out {tuple(out.shape)} strides {tuple(out.stride())}"
            )
        m, n = out.shape
        grid_n, grid_m = -(-n // self.config.block_n), -(-m // self.config.block_m)
        split, ips = self.split_k(x.shape[1])
        if (split > 1 and self.cluster_ctas(split) < split) or self.resident:
            values = dict(values)
            values["workspace"], values["counters"] = self.split_k_buffers(
                x.device, grid_n, grid_m, split
            )
        dims, params = self.signature.bind(
            values, self._dims(x, out, ips if split > 1 else 0), self.function.device_index
        )
        if m:
            params[0] = self.maps.get(x, "activations x")
        if self.resident:  # one row of persistent CTAs (none for M = 0)
            return (self.stream_ctas(grid_n, grid_m, x.shape[1]), min(grid_m, 1), 1), params, dims
        return (grid_n, grid_m, split), params, dims

    def stream_ctas(self, grid_n: int, grid_m: int, k: int) -> int:
        """Stream-K's grid: the resident CTAs, at most one per (tile, K step) iteration."""
        iterations = grid_n * grid_m * -(-k // BLOCK_K)
        if iterations >= 1 << 31:
            raise ValueError(
                f"{self.name}: {iterations} (tile, K step) iterations; the stream-K kernel counts "
                "them in 32 bits (at most 2^31 - 1): split M across calls"
            )
        return min(self.resident, iterations)

    def cluster_ctas(self, split: int) -> int:
        """CTAs per cluster of a launch of `split` splits (1: no clusters; `split`: the tile's
        splits sum in one cluster, with no workspace)."""
        cfg = self.config
        if not cfg.rs_cluster_split:
            return 1
        return split_cluster_z(split, cfg.rs_cluster_ctas)

    def split_k(self, k: int) -> tuple[int, int]:
        """(splits, K steps per split) for a reduction depth of `k`."""
        return split_iterations(-(-k // BLOCK_K), self.config.split_k)

    def split_k_buffers(
        self, device: torch.device, grid_n: int, grid_m: int, split: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shared fp32 workspace (a block_m x block_n tile per split and tile) and zeroed tile
        counters big enough for this grid (one per tile, or per tile and rank of its clusters);
        for stream-K two partial tiles and a counter per resident CTA, whatever M is."""
        cfg = self.config
        if self.resident:
            return tile_workspace(device, self.resident, 2, cfg.block_m * cfg.block_n)
        tiles = grid_n * grid_m
        return tile_workspace(
            device, tiles, split, cfg.block_m * cfg.block_n, tiles * self.cluster_ctas(split)
        )
