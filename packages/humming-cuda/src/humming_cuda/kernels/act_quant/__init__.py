"""Activation quantization on the GPU: 16-bit x -> 8-bit codes + fp32 scales, the W8A8 GEMM's input.

The quantizer is instantiated in the same translation unit as the GEMM that consumes it (one entry
per 16-bit input type, since a quantized-activation layer accepts fp16 or bf16 x), so one compiled
module serves a layer; `ActQuantizer` launches it. `render_source` builds a standalone unit (tests,
tools). Results are bit-identical to humming_core.numerics.act.quantize_act; scales are laid out
[G, M] (G = 1 per token / static, ceil(K / group) per group): see include/humming/kernel/act_quant.cuh.
q and the scales are views of one allocation (ActQuantFormat.buffer_layout).

With an input GLU (ActSpec.input_glu) x is [M, 2K] = [gate | up] and the quantizer encodes act(gate)
* up rounded to x's dtype; its gate activation is the epilogues' fast form, so it matches
quantize_act except where a product lies within a few fp32 ulp of a 16-bit rounding boundary.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import torch

from humming_core.device import KernelSource
from humming_core.spec.quant import ActSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher, ThreadParams
from .scratch import quant_buffer

THREADS = 256  # kActQuantThreads
CODES = {"int8": 0, "e4m3": 1}
MODES = {"token": 0, "group": 1, "static": 2}
# the gate activation of each input GLU (humming::Activation, include/humming/arith/activation.cuh)
GLU_CODES = {"silu_mul": 2, "gelu_mul": 3, "gelu_tanh_mul": 4}
CODE_DTYPES = {"int8": torch.int8, "e4m3": torch.float8_e4m3fn}
INPUTS = {"fp16": ("half", torch.float16), "bf16": ("nv_bfloat16", torch.bfloat16)}
GROUP_SIZES = (128,)  # the W8A8 GEMM applies a group scale once per 128-deep K iteration
SCALES_ALIGN = 16  # byte alignment of the scales after q in their shared buffer (buffer_layout)


def unsupported_reason(act: ActSpec) -> str:
    """Why this activation spec has no GPU quantizer here ('' when it has one)."""
    name = act.dtype.name
    if name not in CODES:
        return (
            f"activation dtype {name!r} has no 8-bit quantizer: int8 and e4m3 are supported "
            "(4-bit activations belong to the W4A4 work)"
        )
    if act.scale_dtype.name != "fp32":
        return f"activation scale dtype {act.scale_dtype.name!r}: only fp32 scales are supported"
    if act.quant == "dynamic" and act.granularity == "tensor":
        return (
            "dynamic per-tensor activation scales need an amax over the whole tensor before any "
            "element is encoded: use granularity 'token' (same cost, better accuracy) or "
            "quant='static' with a calibrated scale"
        )
    if act.granularity == "group" and act.group_size not in GROUP_SIZES:
        return (
            f"activation group_size={act.group_size}: supported group sizes are {GROUP_SIZES} "
            "(one group per 128-deep K iteration of the GEMM)"
        )
    return ""


@dataclass(frozen=True, repr=False)
class ActQuantFormat:
    """Template arguments of one quantizer: code type, scale mode, group size (0 unless group);
    `wide`: write each code's value as bf16 instead of the 8-bit code (exact), for the WnA16
    kernels that run 8-bit activations; `interleave`: codes with every 16-byte chunk in the
    order of the e4m3 MoE kernel (byte p holds K (p >> 1) + 8 (p & 1), act_quant_interleaved.cuh);
    `glu`: the input GLU (ActSpec.input_glu; x [M, 2K])."""

    code: str
    mode: str
    group: int
    wide: bool = False
    interleave: bool = False
    glu: str = "none"

    def __repr__(self) -> str:
        # the generated repr of the fields before `interleave`: kernel names hash it, and units
        # without interleaved codes or an input GLU keep their names
        extra = ", interleave=True" if self.interleave else ""
        extra += f", glu={self.glu!r}" if self.glu != "none" else ""
        return (
            f"ActQuantFormat(code={self.code!r}, mode={self.mode!r}, group={self.group!r}, "
            f"wide={self.wide!r}{extra})"
        )

    def __post_init__(self) -> None:
        if self.interleave and (self.wide or self.mode == "group"):
            raise ValueError(
                "interleaved codes are 8-bit codes with per-token or static scales (not wide, "
                "not per group)"
            )
        if self.glu != "none" and (self.glu not in GLU_CODES or self.wide or self.interleave):
            raise ValueError(
                f"input GLU {self.glu!r}: the quantizer fuses {', '.join(GLU_CODES)} into plain "
                "8-bit codes (not wide, not interleaved: MoE layers apply the GLU in w13)"
            )

    @classmethod
    def from_spec(
        cls, act: ActSpec, wide: bool = False, interleave: bool = False
    ) -> ActQuantFormat:
        reason = unsupported_reason(act) if act.is_quantized else "activations are not quantized"
        if reason:
            raise ValueError(f"no activation quantizer for this spec: {reason}")
        mode = "static" if act.quant == "static" else act.granularity
        return cls(act.dtype.name, mode, act.group_size or 0, wide, interleave, act.input_glu)

    @property
    def x_columns(self) -> int:
        """Columns of x per quantized column: 2 with an input GLU ([gate | up]), else 1."""
        return 2 if self.glu != "none" else 1

    @property
    def q_dtype(self) -> torch.dtype:
        """The dtype of the quantizer's output q."""
        return torch.bfloat16 if self.wide else CODE_DTYPES[self.code]

    def scale_rows(self, k: int) -> int:
        """G of the [G, M] scale tensor for K columns."""
        return -(-k // self.group) if self.mode == "group" else 1

    def buffer_layout(self, m: int, k: int) -> tuple[int, int]:
        """(bytes, the scales' byte offset) of the one buffer that holds q [M, K] and the fp32
        scales [G, M]. Why one: each torch.empty on cuda took 4.7 us of host time on the H200
        host (session 28), and a prepared call made two per call. q starts the buffer (the
        allocator's alignment, which TMA and the 16-byte loads of q need); the scales follow at
        the next 16-byte boundary (their readers load single floats: 4 would do)."""
        offset = -(-m * k * self.q_dtype.itemsize // SCALES_ALIGN) * SCALES_ALIGN
        return offset + 4 * self.scale_rows(k) * m, offset

    def allocate(
        self, m: int, k: int, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(the buffer, q [M, K], scales [G, M]): q and the scales as views of one allocation laid
        out by `buffer_layout`."""
        size, offset = self.buffer_layout(m, k)
        buffer = torch.empty(size, dtype=torch.uint8, device=device)
        q = buffer[: m * k * self.q_dtype.itemsize].view(self.q_dtype).view(m, k)
        scales = buffer[offset:].view(torch.float32).view(self.scale_rows(k), m)
        return buffer, q, scales

    @property
    def include(self) -> str:
        """The #include line of the header that defines this format's entry macro."""
        header = "act_quant_interleaved" if self.interleave else "act_quant"
        return f'#include "humming/kernel/{header}.cuh"\n'

    def entry_names(self, base: str) -> dict[str, str]:
        """Input dtype name -> C symbol of its quantizer entry."""
        return {dt: f"{base}_quant_{dt}" for dt in INPUTS}

    def entries(self, base: str) -> str:
        """C++ text instantiating one entry per 16-bit input type."""
        lines = []
        for dt, symbol in self.entry_names(base).items():
            macro = (
                "HUMMING_ACT_QUANT_WIDE_ENTRY"
                if self.wide
                else "HUMMING_ACT_QUANT_INTERLEAVED_ENTRY"
                if self.interleave
                else "HUMMING_ACT_QUANT_GLU_ENTRY"
                if self.glu != "none"
                else "HUMMING_ACT_QUANT_ENTRY"
            )
            glu = f", {GLU_CODES[self.glu]}" if self.glu != "none" else ""
            lines.append(
                f"{macro}({symbol}, {INPUTS[dt][0]}, {CODES[self.code]}, "
                f"{MODES[self.mode]}, {max(self.group, 8)}{glu})\n"
            )
        return "".join(lines)

    def grid(self, m: int, k: int) -> int:
        if self.mode != "group":
            return m
        # lanes per group: ActQuant::kLanes (two 16-byte chunks of 8 values each per lane)
        lanes = self.scale_rows(k) * m * (self.group // min(self.group, 16))
        return -(-lanes // THREADS)


def render_source(fmt: ActQuantFormat, arch: str) -> KernelSource:
    """A unit holding only the quantizer entries; `name` is the fp16 entry, meta["base"] the
    name `ActQuantizer.from_module` takes."""
    base = "humming_actq_" + hashlib.sha1(repr(fmt).encode()).hexdigest()[:12]
    code = fmt.include + fmt.entries(base)
    meta = {"family": "act_quant", "format": repr(fmt), "base": base}
    return KernelSource(name=fmt.entry_names(base)["fp16"], code=code, arch=arch, meta=meta)


class ModuleFunction:
    """Another kernel of a module already loaded by humming_cuda.loader (same device and lifetime).

    Quantizer entries use only static shared memory, so no dynamic-smem opt-in is offered."""

    def __init__(self, loaded: Any, symbol: str) -> None:
        from cuda.bindings import driver

        from ...loader import DEFAULT_SMEM_LIMIT, check, primary_context

        self.loaded = loaded  # keeps the module loaded
        self.symbol = symbol
        self.device_index = loaded.device_index
        self.max_dynamic_smem = DEFAULT_SMEM_LIMIT
        check(driver.cuCtxPushCurrent(primary_context(self.device_index)), "cuCtxPushCurrent")
        try:
            self.handle = check(
                driver.cuModuleGetFunction(loaded.module, symbol.encode()),
                f"cuModuleGetFunction({symbol})",
            )
            if hasattr(driver, "cuFuncLoad"):
                check(driver.cuFuncLoad(self.handle), f"cuFuncLoad({symbol})")
        finally:
            check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")

    def reserve_smem(self, nbytes: int) -> None:
        if nbytes > self.max_dynamic_smem:
            raise ValueError(
                f"{self.symbol}: asked for {nbytes} bytes of dynamic shared memory; quantizer "
                f"entries use static shared memory only (launch them with smem=0)"
            )


def signature(fmt: ActQuantFormat, input_dtype: torch.dtype, name: str) -> Signature:
    """Parameters in the order of HUMMING_ACT_QUANT_ENTRY (x: [M, XK], XK = K or 2K with an
    input GLU)."""
    return Signature(
        TensorArg("x", input_dtype, ("M", "XK"), layout="rows"),
        TensorArg("static_scale", torch.float32, (1,), optional=fmt.mode != "static", align=4),
        TensorArg("q", fmt.q_dtype, ("M", "K")),
        TensorArg("scales", torch.float32, ("G", "M"), align=4),
        ScalarArg("M", "int32", dim="M"),
        ScalarArg("K", "int32", dim="K"),
        ScalarArg("lda", "int32", dim="LDA"),
        kernel=name,
    )


class ActQuantizer:
    """`quantizer(x, static_scale=None) -> (q [M, K], scales [G, M] fp32)` on x's stream (q:
    the codes, or their bf16 values for a wide format; both views of one fresh buffer).

    `functions` maps the input dtype name (fp16, bf16) to its loaded entry."""

    def __init__(self, fmt: ActQuantFormat, functions: dict[str, Any], pdl: bool) -> None:
        self.fmt = fmt
        self._by_dtype = {}
        # pdl (where the arch has it, sm_90+): the quantizer launches with PDL (its kernel waits
        # for the previous grid before touching memory), so its CTAs are resident when that grid
        # ends (H200, session 23: 0.90-0.97x the time of decode-size W8A8 / W4A8 layers).
        for dt, fn in functions.items():
            torch_dtype = INPUTS[dt][1]
            sig = signature(fmt, torch_dtype, fn.symbol)
            self._by_dtype[torch_dtype] = (fn, sig, Launcher(fn, sig.ctypes, pdl=pdl))

    @classmethod
    def from_module(cls, fmt: ActQuantFormat, loaded: Any, base: str, pdl: bool) -> ActQuantizer:
        """The entries named after `base` (see ActQuantFormat.entries) in a loaded module, launched
        with PDL when `pdl`."""
        names = fmt.entry_names(base)
        return cls(fmt, {dt: ModuleFunction(loaded, sym) for dt, sym in names.items()}, pdl)

    def __call__(
        self, x: torch.Tensor, static_scale: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        q, scales, launch = self.checked(x, static_scale)
        launch()
        return q, scales

    def checked(
        self, x: torch.Tensor, static_scale: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, QuantLaunch]:
        """(q, scales, launch): every argument checked, the output buffers allocated and the
        parameters bound; `launch()` runs the quantizer (nothing when x has no rows)."""
        entry = self._by_dtype.get(x.dtype)
        if entry is None:
            raise ValueError(
                f"x is {x.dtype}: the activation quantizer takes float16 or bfloat16 input"
            )
        if (static_scale is not None) != (self.fmt.mode == "static"):
            need = "needs a" if self.fmt.mode == "static" else "takes no"
            raise ValueError(
                f"{self.fmt.mode} activation quantization {need} static scale (act_scale): "
                "pass an fp32 tensor of shape (1,) exactly when the spec has act.quant='static'"
            )
        fn, sig, launcher = entry
        m, xk = x.shape
        k = xk // self.fmt.x_columns
        if xk % self.fmt.x_columns:
            raise ValueError(
                f"x has {xk} columns: with input GLU {self.fmt.glu!r} it is [gate | up], 2K "
                "columns (an even number)"
            )
        if k % 16:
            raise ValueError(
                f"K={k}: 8-bit activation rows are written in 16-byte chunks, K % 16 == 0"
            )
        _, q, scales = self.fmt.allocate(m, k, x.device)
        values = {"x": x, "static_scale": static_scale, "q": q, "scales": scales}
        dims = {"LDA": x.stride(0) if m else xk, "XK": xk}
        _, params = sig.bind(values, dims, fn.device_index)
        grid = (self.fmt.grid(m, k), 1, 1) if m else (0, 1, 1)
        return q, scales, QuantLaunch(launcher, sig, grid, params)


@dataclass
class QuantLaunch:
    """One checked quantizer call, ready to launch; its parameters serve as a prepared call's
    template (PreparedQuant)."""

    launcher: Launcher
    signature: Signature
    grid: tuple[int, int, int]
    params: list

    def __call__(self) -> None:
        if self.grid[0]:
            self.launcher(self.grid, (THREADS, 1, 1), self.params, 0)


class PreparedQuant:
    """The quantizer of a prepared GEMM call (kernels/w8a8/call.py) for one input dtype and K: a
    parameter block per thread from a checked call's values, patched with x, the q and scales of
    this thread and stream's buffer (scratch.py; the full check's layout) and M for each call; the caller has checked x (dtype,
    K, 16-byte aligned rows) and that it is on `device`, the checked call's x's device."""

    def __init__(self, fmt: ActQuantFormat, checked: QuantLaunch, device: torch.device) -> None:
        self.fmt = fmt
        self.launcher = checked.launcher
        self.params = ThreadParams(checked.launcher.ctypes, checked.signature.names, checked.params)
        self.device = device

    def __call__(self, m: int, k: int, address: int, lda: int) -> tuple[torch.Tensor, int, int]:
        """Quantize the M x K rows of x at `address` (row stride `lda` elements): (the buffer,
        which the caller keeps alive until the GEMM that reads it is enqueued, q's address, the
        scales' address)."""
        fmt = self.fmt
        size, offset = fmt.buffer_layout(m, k)
        buffer = quant_buffer(size, self.device)
        q = buffer.data_ptr()
        block = self.params.block()
        struct = block.struct
        struct.x, struct.q, struct.scales, struct.M, struct.lda = address, q, q + offset, m, lda
        self.launcher.launch((fmt.grid(m, k), 1, 1), (THREADS, 1, 1), 0, block.address)
        return buffer, q, q + offset
