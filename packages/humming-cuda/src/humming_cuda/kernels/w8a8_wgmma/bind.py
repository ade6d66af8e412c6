"""Bind a loaded W8A8-wgmma module: quantize x (the module's own entries), encode the two TMA
tensor maps (cached per pointer), launch one CTA of 384 threads per 128x128 tile of out and K
split (grid z), with the shared split-K workspace when the config splits (none when the splits of
a tile are one cluster), or (persistent configs) one CTA per SM walking the tiles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from humming_core.env import ENV
from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from ..act_quant import ActQuantizer
from ..common_bind import check_x_out, out_arg
from ..family import arch_has_pdl
from ..split_k import split_iterations, split_launch, tile_workspace
from ..w8a8.config import W8a8Format
from .config import BLOCK_K
from .tma import BOX_ROWS, HALF_BOX_ROWS, TensorMapCache, TensorMapParam

_WS_SHAPE = {"tensor": (1,), "channel": ("N",), "block": ("NB", "KB")}
_FP8 = torch.float8_e4m3fn


def signature(fmt: W8a8Format, name: str) -> Signature:
    """The checked arguments. `a` and `qweight` are checked here but reach the kernel as the
    tensor maps that replace them (HUMMING_W8A8_WGMMA_ENTRY's first two parameters); TMA needs
    16-byte aligned, K-contiguous rows. workspace / counters are the split-K buffers (absent when
    unsplit); iters_per_split is the K blocks per split (all of them when unsplit); a_rows is the
    rows of a's tensor-map box (a_box_rows); resident the CTAs the device holds at once (0 unless
    the config sums splits all at once)."""
    return Signature(
        TensorArg("a", _FP8, ("M", "K")),
        TensorArg("qweight", _FP8, ("N", "K")),
        TensorArg("a_scales", torch.float32, ("G", "M"), align=4),
        TensorArg("weight_scale", torch.float32, _WS_SHAPE[fmt.weight_scale], align=4),
        TensorArg("bias", torch.float32, ("N",), optional=not fmt.bias, align=4),
        out_arg(fmt.out),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "N", "K")),
        ScalarArg("ldc", "int32", dim="LDC"),
        ScalarArg("ws_ld", "int32", dim="KB"),
        TensorArg("workspace", torch.float32, ("WS",), optional=True, align=4),
        TensorArg("counters", torch.int32, ("CT",), optional=True, align=4),
        ScalarArg("iters_per_split", "int32", dim="IPS"),
        ScalarArg("a_rows", "int32", dim="AR"),
        ScalarArg("resident", "int32", dim="RES"),
        kernel=name,
    )


class W8a8WgmmaKernel:
    """`kernel(x=..., out=..., [act_scale=...], **packed)`: out[M, N] = quant(x) @ W^T (+ bias).

    x is fp16 or bf16 [M, K] ([M, 2K] = [gate | up] with an input GLU, ActSpec.input_glu);
    `packed` is the w8a8 layout's qweight / weight_scale / bias.
    `kernel.prepare(**packed)` binds one layer's weights for repeated calls (W8a8WgmmaCall).
    Subclasses for other weight forms (w4a8_wgmma) set `signature`, `k_dims` and `PACKED`."""

    signature_of = staticmethod(signature)
    PACKED = False  # qweight holds the W4A8 layout's 4-bit slabs (their own tensor map)
    max_m = 1 << 31  # rows of x one launch computes (PreparedDenseCall's quick check)

    def __init__(self, function: Any, spec: QuantSpec, config: Any) -> None:
        self.fmt = W8a8Format.from_spec(spec)
        self.x_columns = self.fmt.act.x_columns  # 2 with an input GLU: x = [gate | up]
        self.config = config
        self.name = function.symbol
        self.function = function
        self.signature = self.signature_of(self.fmt, function.symbol)
        self.quantizer = ActQuantizer.from_module(
            self.fmt.act, function, function.symbol, arch_has_pdl(config.arch)
        )
        ctypes_list = (TensorMapParam, TensorMapParam, *self.signature.ctypes[2:])
        # cluster split-K: a tile's splits (the grid's z) are one cluster
        cluster = getattr(config, "cluster_split", False)
        self.launcher = Launcher(function, ctypes_list, cluster_z_from_grid=cluster)
        self.maps = TensorMapCache()
        self.smem = config.smem_bytes
        function.reserve_smem(self.smem)
        # a persistent config's grid: the CTAs the device holds at once (one per SM)
        persistent = getattr(config, "persistent", False)
        self.resident = function.resident_ctas(config.threads, self.smem) if persistent else 0
        # split_scatter: the grids whose splits may wait for each other (all resident at once)
        scatter = config.split_scatter and ENV.HUMMING_SPLIT_SCATTER
        self.scatter_ctas = function.resident_ctas(config.threads, self.smem) if scatter else 0

    def __call__(self, **values: Any) -> None:
        grid, params, _, quantize = self.checked(values)
        quantize()
        if grid[0]:
            self.launcher(grid, (self.config.threads, 1, 1), params, self.smem)

    def prepare(self, **packed: torch.Tensor) -> Any:
        from .call import W8a8WgmmaCall

        return W8a8WgmmaCall(self, packed)

    def checked(
        self, values: dict[str, Any]
    ) -> tuple[tuple[int, int, int], list, dict[str, int], Callable[[], None]]:
        """(grid, parameters in order with the two tensor maps first, dims, the quantizer's
        launch): every argument checked, the quantized activations' buffers allocated. Raises
        naming what is wrong."""
        values = dict(values)
        x, out = values.pop("x"), values["out"]
        check_x_out(self.name, x, out)
        values["a"], values["a_scales"], quantize = self.quantizer.checked(
            x, values.pop("act_scale", None)
        )
        m, n = out.shape
        k = x.shape[1] // self.x_columns
        cfg = self.config
        grid_n, grid_m = -(-n // cfg.block_n), -(-m // cfg.block_m)
        splits, buffers, split_dims = self.split_k(k, grid_n * grid_m, x.device)
        values.update(buffers)
        a_rows = self.a_box_rows(m)  # one value for the map and the kernel's expected bytes
        dims = {"LDC": out.stride(0), "AR": a_rows, "RES": self.scatter_ctas}
        dims.update(**self.k_dims(k), **split_dims)
        dims, params = self.signature.bind(values, dims, self.function.device_index)
        if not m:
            return (0, 0, 0), params, dims, quantize
        params[0] = self.maps.get(values["a"], "activations a", box_rows=a_rows)
        params[1] = self.maps.get(
            values["qweight"], "qweight", packed=self.PACKED, box_rows=cfg.block_n
        )
        return self.grid(grid_n, grid_m, splits), params, dims, quantize

    def grid(self, grid_n: int, grid_m: int, splits: int) -> tuple[int, int, int]:
        """One CTA per tile and split, or (persistent, never split) the resident CTAs, at most
        one per tile, each walking every gridDim.x-th tile."""
        if self.resident:
            return (min(self.resident, grid_n * grid_m), 1, 1)
        return (grid_n, grid_m, splits)

    def k_dims(self, k: int) -> dict[str, int]:
        """The K-dependent dimensions of the signature."""
        return {"KB": -(-k // BLOCK_K) if self.fmt.weight_scale == "block" else 0}

    def a_box_rows(self, m: int) -> int:
        """Rows per TMA box of the activations: the 64-row tile's 64; in the 128-row tile 64 when
        all M rows fit the first consumer warpgroup (the second computes nothing then, and a
        128-row box would only have TMA fill its rows with zeros), else 128."""
        if m <= HALF_BOX_ROWS or self.config.block_m == HALF_BOX_ROWS:
            return HALF_BOX_ROWS
        return BOX_ROWS

    def split_k_buffers(
        self, device: torch.device, grid_n: int, grid_m: int, split: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shared fp32 workspace (a tile per split and tile) and zeroed tile counters big enough
        for this grid (a prepared call's growing M)."""
        cfg = self.config
        return tile_workspace(device, grid_n * grid_m, split, cfg.block_m * cfg.block_n)

    def split_k(
        self, k: int, tiles: int, device: torch.device
    ) -> tuple[int, dict[str, Any], dict[str, int]]:
        """(CTAs per tile along K, the split-K buffers by argument name, the signature's split
        dims) for `tiles` output tiles over K: whole 128-deep blocks per split, none left empty."""
        cfg = self.config
        if getattr(cfg, "cluster_split", False):  # the splits sum within clusters: no buffers
            split, per_split = split_iterations(-(-k // BLOCK_K), cfg.split_k)
            return split, {}, {"IPS": per_split}
        return split_launch(-(-k // BLOCK_K), cfg.split_k, tiles, cfg.block_m * cfg.block_n, device)
