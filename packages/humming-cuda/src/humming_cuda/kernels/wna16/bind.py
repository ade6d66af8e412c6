"""Bind a loaded WnA16 function into a callable kernel: argument checks, workspace, grid, launch."""

from __future__ import annotations

from typing import Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Dim3, Launcher, ThreadParams
from ..split_k import SPLIT_K_BUFFERS, split_iterations
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
        floats = grid_n * grid_m * split * self.config.block_m * self.config.block_n
        return SPLIT_K_BUFFERS.get(device, floats, grid_n * grid_m)


class Wna16Call:
    """One layer's packed weights bound to a Wna16Kernel: `call(x, out)` launches out = x @ W^T.

    The first call checks every argument (Wna16Kernel.checked) and keeps the resulting parameter
    list as a template: the weights' pointers, N, K, groups and split-K never change for this
    layer. Later calls check only what can change — x and out: type, dtype, shape (K and N as in
    the template), innermost strides, alignment of pointers and of x's row stride, device — with
    one comparison each, patch x, out, M and the row strides into this thread's parameter block
    and launch. Anything the quick check does not accept goes through the full check again, which
    launches a call that is valid after all and otherwise raises naming the argument.
    """

    def __init__(self, kernel: Wna16Kernel, packed: dict[str, torch.Tensor]) -> None:
        self.kernel = kernel
        self.packed = dict(packed)  # holds the weights alive: the template points at them
        self.launcher = kernel.launcher
        fmt, cfg = kernel.fmt, kernel.config
        self.act, self.out_dtype = _ACT[fmt.act], _OUT[fmt.out]
        self.device_index = kernel.function.device_index
        self.block = (cfg.threads, 1, 1)
        self.smem = kernel.smem
        self.block_m = cfg.block_m
        self.max_m = kernel.max_m
        self.template: ThreadParams | None = None  # set by the first fully checked call
        self.k = self.n = self.grid_n = self.split = -1
        self.workspace: tuple[torch.Tensor, torch.Tensor] | None = None
        self.ws_rows = 0  # grid rows (of block_m) the held split-K workspace covers

    def __call__(self, x: torch.Tensor, out: torch.Tensor, **extra: Any) -> None:
        try:
            m, k = x.shape
            rows, n = out.shape
            lda, x_inner = x.stride()
            ldc, out_inner = out.stride()
            xp, op = x.data_ptr(), out.data_ptr()
            fast = (
                x.dtype is self.act
                and out.dtype is self.out_dtype
                and k == self.k
                and n == self.n
                and rows == m
                and m <= self.max_m
                and x_inner == 1
                and out_inner == 1
                and not xp % 16
                and not (lda * 2) % 16
                and not op % 4
                and x.get_device() == self.device_index
                and out.get_device() == self.device_index
                and not extra
            )
        except (AttributeError, TypeError, ValueError):  # not a 2-D tensor: the full check says so
            fast = False
        if not fast:
            self._checked_call(x, out, extra)
            return
        if not m:
            return
        grid_m = -(-m // self.block_m)
        params = self.template.block()
        struct = params.struct
        struct.x, struct.out, struct.M, struct.lda, struct.ldc = xp, op, m, lda, ldc
        if self.split > 1:
            if grid_m > self.ws_rows:
                self._grow_workspace(x.device, grid_m)
            ws, ct = self.workspace
            struct.workspace, struct.counters = ws.data_ptr(), ct.data_ptr()
        self.launcher.launch(
            (self.grid_n, grid_m, self.split), self.block, self.smem, params.address
        )

    def _checked_call(self, x: Any, out: Any, extra: dict[str, Any]) -> None:
        kernel = self.kernel
        grid, params, dims = kernel.checked({"x": x, "out": out, **extra, **self.packed})
        if grid[1]:
            kernel.launcher(grid, self.block, params, self.smem)
        if self.template is None and not extra:
            self.k, self.n, self.grid_n, self.split = dims["K"], dims["N"], grid[0], grid[2]
            self.template = ThreadParams(kernel.signature.ctypes, kernel.signature.names, params)

    def _grow_workspace(self, device: torch.device, grid_m: int) -> None:
        self.workspace = self.kernel.split_k_buffers(device, self.grid_n, grid_m, self.split)
        self.ws_rows = grid_m
