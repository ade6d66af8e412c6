"""A quantized weight bound to a device: packed once, every M bucket's kernel built up front.

This is where core runs the device contract in order (DESIGN.md): check -> candidates -> select ->
weight_layout/pack -> render -> cache.get_or_build(compile) -> load. After construction a call does
no compilation, no host synchronisation and no allocation other than its output, so it is safe to
capture in a CUDA graph.
"""

from __future__ import annotations

import itertools
import threading
from bisect import bisect_left
from typing import Any

import torch

from ..device import Device, GemmProblem, Kernel, KernelSource, get_device
from ..packing import CanonicalWeight
from ..spec import QuantSpec

# Batch sizes a layer gets a kernel for; a call with M rows uses the first bucket >= M (the last
# bucket serves everything larger). Buckets that choose the same config share one kernel.
# 48: M = 33-48 (vLLM's CUDA-graph sizes 40 and 48 among them) would otherwise run the 64 bucket's
# kernel; devices may choose narrower tiles there (humming-cuda's sm_90a WnA16 48-row tiles:
# 0.87-0.94x the 64-row tiles' time at M = 40 / 48, benchmarks/notes/session50.md).
M_BUCKETS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192)

_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
_LAYERS: dict[int, PreparedLayer] = {}
_IDS = itertools.count()
_LOCK = threading.Lock()


def bucket_of(m: int, buckets: tuple[int, ...] = M_BUCKETS) -> int:
    """The first of the (ascending) `buckets` >= m, the last one past them."""
    i = bisect_left(buckets, m)
    return buckets[min(i, len(buckets) - 1)]


def _build(device: Device, sources: list[KernelSource]) -> list[Any]:
    """Compile through the shared cache (or directly for devices with nothing to cache)."""
    if not getattr(device, "persistent_cache", True):
        return [device.compile(s) for s in sources]
    from ..jit import build_many

    return build_many(device, sources)


class PreparedLayer:
    """What dense and MoE layers share: device choice, one config per M bucket, packing, kernels."""

    def __init__(
        self,
        cw: CanonicalWeight,
        device: Device | str | None = None,
        buckets: tuple[int, ...] = M_BUCKETS,
    ) -> None:
        self._accept(cw)
        self.device = (
            device if device is not None and not isinstance(device, str) else get_device(device)
        )
        self.spec: QuantSpec = cw.spec
        self.n, self.k, self.num_experts = cw.n, cw.k, cw.num_experts
        # x's features: K, or [gate | up] (2K) where the quantizer fuses an input GLU
        self.x_k = self.k * self.spec.act.x_columns
        glu = self.spec.epilogue.glu != "none"
        if glu and self.n % 2:
            raise ValueError(f"a GLU epilogue needs an even N (gate and up halves), got N={self.n}")
        self.n_out = self.n // 2 if glu else self.n
        self.out_dtype = _DTYPES[self.spec.output_dtype]
        self.act_dtype = (
            _DTYPES[self.spec.act.dtype.name] if not self.spec.act.is_quantized else None
        )
        # the x dtypes _check_input accepts, for the layers' one-comparison check of x
        self._x_dtypes = (
            (self.act_dtype,) if self.act_dtype is not None else (torch.float16, torch.bfloat16)
        )
        if (cw.bias is not None) != self.spec.epilogue.bias:
            raise ValueError(
                f"the weight {'has' if cw.bias is not None else 'has no'} bias but its spec says "
                f"epilogue.bias={self.spec.epilogue.bias}: the bias is part of the layer "
                "(CanonicalWeight.bias); set both or neither"
            )
        # MoE weights carry one bias row per expert (CanonicalWeight: leading E on every tensor).
        bias_shape = (cw.num_experts, cw.n) if cw.is_moe else (cw.n,)
        if cw.bias is not None and tuple(cw.bias.shape) != bias_shape:
            raise ValueError(f"bias has shape {tuple(cw.bias.shape)}, expected {bias_shape}")
        configs = {b: self._select(b) for b in buckets}
        # Configs whose layouts share an identity share one packed copy of the weights.
        layouts = {
            getattr(lay, "identity", lay): lay
            for lay in (self.device.weight_layout(self.spec, c) for c in configs.values())
        }
        if len(layouts) != 1:
            raise RuntimeError(
                f"device {self.device.name!r} chose {len(layouts)} weight layouts for one layer; a "
                "layer's configs must share one layout so the weights are packed once"
            )
        target = getattr(self.device, "torch_device", None)
        self.packed = next(iter(layouts.values())).pack(cw, target)
        # One kernel per distinct config. Configs that render the same code (they differ in a
        # launch setting such as a split-K count) share one binary through the JIT memo, but each
        # is loaded with its own binding: sources compare by code alone, so deduplicating them
        # would run every such bucket with the first one's launch settings.
        unique = list(dict.fromkeys(configs.values()))
        sources = [self.device.render(self.spec, c) for c in unique]
        kernels = dict(
            zip(unique, (self.device.load(a) for a in _build(self.device, sources)), strict=True)
        )
        self.kernels: dict[int, Kernel] = {b: kernels[c] for b, c in configs.items()}
        self.configs = configs
        self._buckets = tuple(sorted(configs))
        with _LOCK:
            self.id = next(_IDS)
            _LAYERS[self.id] = self

    @staticmethod
    def _accept(cw: CanonicalWeight) -> None:
        """Refuse weights of the wrong kind (dense vs expert-stacked) before any work is done."""

    def _select(self, m: int) -> Any:
        problem = GemmProblem(
            n=self.n,
            k=self.k,
            m=m,
            num_experts=self.num_experts,
            act_dtype=self.spec.act.dtype.name,
        )
        support = self.device.check(self.spec, problem)
        if not support:
            raise ValueError(
                f"device {self.device.name!r} cannot run this spec on N={self.n}, K={self.k}: {support.reason}"
            )
        candidates = self.device.candidates(self.spec, problem)
        if not candidates:
            raise ValueError(
                f"device {self.device.name!r} offered no kernel config for N={self.n}, K={self.k}, M={m}"
            )
        return candidates[0]

    def config_for(self, rows: int) -> Any:
        """The config of the kernel a call with `rows` rows runs (routed rows, M * top_k, for
        an expert-stacked layer): its bucket's, the last bucket's past them."""
        return self.configs[bucket_of(rows, self._buckets)]

    @property
    def num_kernels(self) -> int:
        return len({id(k) for k in self.kernels.values()})

    def _check_input(self, x: torch.Tensor) -> None:
        if x.shape[-1] != self.x_k:
            glu = self.spec.act.input_glu
            takes = f": x takes [gate | up] = {self.x_k} (act.input_glu={glu!r})"
            raise ValueError(
                f"x has {x.shape[-1]} features in its last dim, the layer was built for "
                f"K={self.k}{takes if glu != 'none' else ''}"
            )
        if self.act_dtype is not None and x.dtype != self.act_dtype:
            raise ValueError(
                f"x is {x.dtype}, the layer's spec takes {self.act_dtype} activations "
                f"(act.dtype={self.spec.act.dtype.name!r}); cast x or build the layer for {x.dtype}"
            )
        if self.act_dtype is None and x.dtype not in (torch.float16, torch.bfloat16):
            raise ValueError(f"x is {x.dtype}: quantized-activation layers take fp16 or bf16 input")

    def release(self) -> None:
        """Forget the layer in the op registry (its tensors go with the last reference)."""
        with _LOCK:
            _LAYERS.pop(self.id, None)

    def _check_out(self, out: torch.Tensor | None, rows: int, shape: tuple, device) -> torch.Tensor:
        """A new [rows, n_out] output, or the caller's `out` checked against `shape` (itself when
        it is already 2-D: a view would cost a microsecond of every eager call)."""
        if out is None:
            return torch.empty((rows, self.n_out), dtype=self.out_dtype, device=device)
        if tuple(out.shape) != shape or out.dtype != self.out_dtype or not out.is_contiguous():
            raise ValueError(
                f"out must be a contiguous {self.out_dtype} tensor of shape {shape}, "
                f"got {out.dtype} {tuple(out.shape)}"
            )
        return out if out.dim() == 2 else out.view(rows, self.n_out)


class PreparedGemm(PreparedLayer):
    """out = epilogue(x @ dequant(W)^T) for one quantized weight on one device.

    Per M bucket it keeps a call `call(x, out, **extra)` with the packed weights already bound:
    the kernel's own `prepare(**packed)` when it has one (a kernel that precomputes its argument
    template, see humming_core.device.Kernel), else a plain forwarding to `kernel(x=, out=, ...)`.
    """

    def __init__(
        self,
        cw: CanonicalWeight,
        device: Device | str | None = None,
        buckets: tuple[int, ...] = M_BUCKETS,
    ) -> None:
        super().__init__(cw, device, buckets)
        calls: dict[int, Any] = {}
        for kernel in self.kernels.values():
            if id(kernel) not in calls:
                calls[id(kernel)] = _bind_weights(kernel, self.packed)
        # bisect_left gives len(buckets) past the last bucket, which serves everything larger
        bucket_calls = [calls[id(self.kernels[b])] for b in self._buckets]
        self._calls = (*bucket_calls, bucket_calls[-1])

    @staticmethod
    def _accept(cw: CanonicalWeight) -> None:
        if cw.is_moe:
            raise ValueError(
                "this weight has an expert dimension: use humming_core.ops.PreparedMoe"
            )

    def run(
        self,
        x: torch.Tensor,
        out: torch.Tensor | None = None,
        act_scale: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Compute into a new tensor, or into `out` (shape [..., n_out], the layer's output dtype).

        `act_scale`: a static activation scale (fp32 (1,), a multiplier) for specs with
        act.quant='static' or NVFP4 activations' global scale; handed to the kernel as is."""
        if x.dtype not in self._x_dtypes or x.shape[-1] != self.x_k:
            self._check_input(x)  # raises, saying which
        flat = x.dim() == 2
        x2 = x if flat else x.reshape(-1, self.x_k)
        if not x2.is_contiguous():
            x2 = x2.contiguous()
        m = x2.shape[0]
        if out is None:
            out2 = x.new_empty((m, self.n_out), dtype=self.out_dtype)
        elif (
            flat
            and out.shape == (m, self.n_out)
            and out.dtype is self.out_dtype
            and out.is_contiguous()
        ):
            out2 = out  # the kernel checks the device and alignment
        else:
            out2 = self._check_out(out, m, (*x.shape[:-1], self.n_out), x.device)
        if m:
            call = self._calls[bisect_left(self._buckets, m)]
            if act_scale is None:
                call(x2, out2)
            else:
                call(x2, out2, act_scale=act_scale)
        if flat:
            return out2
        return out2.reshape(*x.shape[:-1], self.n_out)


def _bind_weights(kernel: Kernel, packed: dict[str, torch.Tensor]) -> Any:
    """`call(x, out, **extra)` for `kernel` with this layer's packed weights bound."""
    prepare = getattr(kernel, "prepare", None)
    if prepare is not None:
        return prepare(**packed)

    def call(x: torch.Tensor, out: torch.Tensor, **extra: Any) -> None:
        kernel(x=x, out=out, **extra, **packed)

    return call


def layer_by_id(layer_id: int) -> PreparedLayer:
    try:
        return _LAYERS[layer_id]
    except KeyError:
        raise KeyError(
            f"humming layer {layer_id} is not registered (released or never prepared)"
        ) from None
