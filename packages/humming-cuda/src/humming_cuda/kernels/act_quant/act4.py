"""4-bit activation quantization on the GPU: 16-bit x -> packed nibbles + scales, the W4A4 GEMM's input.

Three formats (include/humming/kernel/act_quant4.cuh has the exact rules and layouts):
- int4, symmetric, fp32 scales per token, per group of 64/128/256 along K, or static per tensor;
  scales [G, M] as the 8-bit quantizer writes them;
- NVFP4: e2m1, ue4m3 scales per 16 ([M, K/16] codes) times an fp32 per-tensor global scale, given
  (static) or computed on the GPU by a first amax pass (no host synchronisation);
- MXFP4: e2m1, e8m0 scales per 32 ([M, K/32] codes).
Codes are packed two per byte along K ([M, K/2] uint8, even K in the low nibble); K must be a
multiple of 64 (one MMA step). Results are bit-identical to humming_core.numerics.act.quantize_act.
These quantizers use no 4-bit MMA, so they run (and are verified) on any sm_89+ GPU.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import torch

from humming_core.device import KernelSource
from humming_core.spec.quant import ActSpec

from ...args import ScalarArg, Signature, TensorArg
from ...launch import Launcher
from . import INPUTS, THREADS, ModuleFunction

MODES = {"int4_token": 0, "int4_group": 1, "int4_static": 2, "nvfp4": 3, "mxfp4": 4}
INT4_GROUPS = (64, 128, 256)  # whole 64-deep MMA steps inside one 256-deep GEMM stage
K_MULTIPLE = 64
AMAX_MAX_CTAS = 1024


def _int4_reason(act: ActSpec) -> str:
    if act.scale_dtype.name != "fp32":
        return f"int4 activation scale dtype {act.scale_dtype.name!r}: only fp32 is supported"
    if act.quant == "dynamic" and act.granularity == "tensor":
        return (
            "dynamic per-tensor int4 activation scales need a whole-tensor amax before any element "
            "is encoded: use granularity 'token' or 'group', or quant='static'"
        )
    if act.granularity == "group" and act.group_size not in INT4_GROUPS:
        return (
            f"int4 activation group_size={act.group_size}: supported are {INT4_GROUPS} (whole "
            "64-deep int4 MMA steps)"
        )
    return ""


def _fp4_reason(act: ActSpec) -> str:
    sd = act.scale_dtype.name
    if act.granularity == "group" and (act.group_size, sd) in ((16, "ue4m3"), (32, "e8m0")):
        return ""
    shown = f"{act.granularity} {act.group_size or ''} {sd}".replace("  ", " ")
    return (
        f"e2m1 activations with {shown} scales: supported are NVFP4 (group 16, ue4m3, global "
        "scale) and MXFP4 (group 32, e8m0)"
    )


def unsupported_reason(act: ActSpec) -> str:
    """Why this activation spec has no 4-bit GPU quantizer ('' when it has one)."""
    name = act.dtype.name
    if not act.is_quantized or name not in ("int4", "e2m1"):
        return f"activation dtype {name!r}: the 4-bit quantizers take int4 or e2m1 activations"
    return _int4_reason(act) if name == "int4" else _fp4_reason(act)


@dataclass(frozen=True)
class Act4Format:
    """One 4-bit quantizer: mode (a key of MODES) and group size (0 for per token / static)."""

    mode: str
    group: int

    @classmethod
    def from_spec(cls, act: ActSpec) -> Act4Format:
        reason = unsupported_reason(act)
        if reason:
            raise ValueError(f"no 4-bit activation quantizer for this spec: {reason}")
        if act.dtype.name == "e2m1":
            return cls("nvfp4" if act.scale_dtype.name == "ue4m3" else "mxfp4", act.group_size)
        if act.quant == "static":
            return cls("int4_static", 0)
        return cls(f"int4_{act.granularity}", act.group_size or 0)

    @property
    def int4(self) -> bool:
        return self.mode.startswith("int4")

    @property
    def per_row(self) -> bool:
        return self.mode in ("int4_token", "int4_static")

    def scale_shape(self, m: int, k: int) -> tuple[int, int]:
        if self.per_row:
            return (1, m)
        return (k // self.group, m) if self.int4 else (m, k // self.group)

    def entry_names(self, base: str) -> dict[str, tuple[str, str | None]]:
        """Input dtype name -> (quantizer symbol, NVFP4 amax-pass symbol or None)."""
        amax = self.mode == "nvfp4"
        return {dt: (f"{base}_q4_{dt}", f"{base}_amax4_{dt}" if amax else None) for dt in INPUTS}

    def entries(self, base: str) -> str:
        """C++ text instantiating the entries of every 16-bit input type."""
        lines = []
        for dt, (quant, amax) in self.entry_names(base).items():
            cxx = INPUTS[dt][0]
            group = max(self.group, 8)
            lines.append(f"HUMMING_ACT_QUANT4_ENTRY({quant}, {cxx}, {MODES[self.mode]}, {group})\n")
            if amax:
                lines.append(f"HUMMING_ACT_AMAX4_ENTRY({amax}, {cxx})\n")
        return "".join(lines)

    def grid(self, m: int, k: int) -> int:
        return m if self.per_row else -(-(m * k // 8) // THREADS)


def render_source(fmt: Act4Format, arch: str) -> KernelSource:
    """A unit holding only the quantizer entries; `name` is the fp16 quantizer, meta["base"] the
    name `Act4Quantizer.from_module` takes."""
    base = "humming_actq4_" + hashlib.sha1(repr(fmt).encode()).hexdigest()[:12]
    code = '#include "humming/kernel/act_quant4.cuh"\n' + fmt.entries(base)
    meta = {"family": "act_quant4", "format": repr(fmt), "base": base}
    return KernelSource(name=fmt.entry_names(base)["fp16"][0], code=code, arch=arch, meta=meta)


def quant_signature(fmt: Act4Format, input_dtype: torch.dtype, name: str) -> Signature:
    """Parameters in the order of HUMMING_ACT_QUANT4_ENTRY."""
    nvfp4 = fmt.mode == "nvfp4"
    scales = (
        TensorArg("scales", torch.float32, ("G", "M"), align=4)
        if fmt.int4
        else TensorArg("scales", torch.uint8, ("M", "G"), align=4)
    )
    return Signature(
        TensorArg("x", input_dtype, ("M", "K"), layout="rows"),
        TensorArg("static_scale", torch.float32, (1,), optional=True, align=4),
        TensorArg("amax_bits", torch.int32, (1,), optional=True, align=4),
        TensorArg("q", torch.uint8, ("M", "KH"), align=4),
        scales,
        TensorArg("global_scale", torch.float32, (1,), optional=not nvfp4, align=4),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "K")),
        ScalarArg("lda", "int32", dim="LDA"),
        kernel=name,
    )


def amax_signature(input_dtype: torch.dtype, name: str) -> Signature:
    """Parameters in the order of HUMMING_ACT_AMAX4_ENTRY."""
    return Signature(
        TensorArg("x", input_dtype, ("M", "K"), layout="rows"),
        TensorArg("amax_bits", torch.int32, (1,), align=4),
        *(ScalarArg(n, "int32", dim=n) for n in ("M", "K")),
        ScalarArg("lda", "int32", dim="LDA"),
        kernel=name,
    )


class Act4Quantizer:
    """`quantizer(x, static_scale=None) -> (q [M, K/2] uint8, scales, global_scale [1] | None)`.

    scales: fp32 [G, M] (int4) or uint8 codes [M, K/group] (ue4m3 for NVFP4, e8m0 for MXFP4);
    global_scale only for NVFP4. `functions` maps an input dtype name to its (quantizer, amax)
    loaded entries (amax None except for NVFP4)."""

    def __init__(self, fmt: Act4Format, functions: dict[str, tuple[Any, Any]]) -> None:
        self.fmt = fmt
        self._by_dtype = {}
        for dt, (quant, amax) in functions.items():
            torch_dtype = INPUTS[dt][1]
            qsig = quant_signature(fmt, torch_dtype, quant.symbol)
            entry = [quant, qsig, Launcher(quant, qsig.ctypes), None]
            if amax is not None:
                asig = amax_signature(torch_dtype, amax.symbol)
                entry[3] = (asig, Launcher(amax, asig.ctypes))
            self._by_dtype[torch_dtype] = tuple(entry)

    @classmethod
    def from_module(cls, fmt: Act4Format, loaded: Any, base: str) -> Act4Quantizer:
        """The entries named after `base` (see Act4Format.entries) in a loaded module."""
        functions = {
            dt: (ModuleFunction(loaded, q), ModuleFunction(loaded, a) if a else None)
            for dt, (q, a) in fmt.entry_names(base).items()
        }
        return cls(fmt, functions)

    def _check(self, x: torch.Tensor, static_scale: torch.Tensor | None) -> None:
        if x.dtype not in self._by_dtype:
            raise ValueError(
                f"x is {x.dtype}: the activation quantizer takes float16 or bfloat16 input"
            )
        if static_scale is not None and self.fmt.mode not in ("int4_static", "nvfp4"):
            raise ValueError(
                f"{self.fmt.mode} activation quantization takes no static scale: pass act_scale "
                "only for quant='static' (int4) or as the NVFP4 global scale"
            )
        if static_scale is None and self.fmt.mode == "int4_static":
            raise ValueError("static int4 activation quantization needs act_scale (fp32, (1,))")
        if x.dim() != 2 or x.shape[1] % K_MULTIPLE:
            raise ValueError(
                f"x has shape {tuple(x.shape)}: expected [M, K] with K a multiple of {K_MULTIPLE} "
                "(one 4-bit MMA step); pad K with zeros"
            )

    def __call__(
        self, x: torch.Tensor, static_scale: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        self._check(x, static_scale)
        quant, qsig, launch, amax = self._by_dtype[x.dtype]
        m, k = x.shape
        dev = x.device
        q = torch.empty((m, k // 2), dtype=torch.uint8, device=dev)
        dtype = torch.float32 if self.fmt.int4 else torch.uint8
        scales = torch.empty(self.fmt.scale_shape(m, k), dtype=dtype, device=dev)
        nvfp4 = self.fmt.mode == "nvfp4"
        global_scale = torch.empty(1, dtype=torch.float32, device=dev) if nvfp4 else None
        bits = None
        lda = x.stride(0) if m else k
        if nvfp4 and static_scale is None:
            bits = torch.zeros(1, dtype=torch.int32, device=dev)
            if m:
                asig, alaunch = amax
                _, params = asig.bind({"x": x, "amax_bits": bits}, {"LDA": lda}, quant.device_index)
                ctas = min(-(-(m * k // 8) // THREADS), AMAX_MAX_CTAS)
                alaunch((ctas, 1, 1), (THREADS, 1, 1), params, 0)
        values = {
            "x": x,
            "static_scale": static_scale,
            "amax_bits": bits,
            "q": q,
            "scales": scales,
            "global_scale": global_scale,
        }
        _, params = qsig.bind(values, {"LDA": lda, "KH": k // 2}, quant.device_index)
        if m:
            launch((self.fmt.grid(m, k), 1, 1), (THREADS, 1, 1), params, 0)
        return q, scales, global_scale
