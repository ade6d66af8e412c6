"""Declared kernel arguments, checked before every launch and packed in the kernel's parameter order.

A kernel declares its parameters once, in the order of its C signature:

    SIG = Signature(
        TensorArg("x", torch.float16, ("M", "K"), layout="rows"),
        TensorArg("w", torch.int32, ("N", "KP")),
        TensorArg("out", torch.float16, ("M", "N")),
        TensorArg("bias", torch.float16, ("N",), optional=True),
        ScalarArg("m", "int32", dim="M"),
        kernel="wna16_4bit",
    )
    dims = SIG.check(tensors, {"N": 4096, "K": 4096, "KP": 512}, device_index=0)
    params = SIG.pack(tensors, dims)

Symbolic dims (strings) are bound by the dict given to `check` or, failing that, by the first
tensor that has them; every later use must agree. A wrong argument raises ValueError naming the
kernel, the argument, what was expected and what was given: a bad pointer is otherwise a silent
wrong answer or an illegal-address fault far from its cause.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch

from .binder import compile_binder

Dim = int | str
Layout = Literal["contiguous", "rows", "strided"]

C_TYPES: dict[str, type[ctypes._SimpleCData]] = {
    "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}
POINTER = ctypes.c_uint64  # a device pointer parameter: 8 bytes on every CUDA target


@dataclass(frozen=True)
class TensorArg:
    """A device tensor passed as a pointer.

    layout: "contiguous" (dense row-major), "rows" (innermost stride 1, row stride free but
    aligned: a slice of a wider tensor), "strided" (anything; the kernel takes strides itself).
    align: required byte alignment of the data pointer (and of the row stride for "rows"): the
    kernels load with 16-byte vector instructions.
    """

    name: str
    dtype: torch.dtype | tuple[torch.dtype, ...]
    shape: tuple[Dim, ...]
    layout: Layout = "contiguous"
    align: int = 16
    optional: bool = False

    @property
    def dtypes(self) -> tuple[torch.dtype, ...]:
        return self.dtype if isinstance(self.dtype, tuple) else (self.dtype,)

    @property
    def ctype(self) -> type[ctypes._SimpleCData]:
        return POINTER


@dataclass(frozen=True)
class ScalarArg:
    """A scalar passed by value as C type `ctype`; when not given, taken from the bound dim `dim`."""

    name: str
    ctype_name: Literal["int32", "uint32", "int64", "uint64", "float32", "float64"]
    dim: str | None = None

    @property
    def ctype(self) -> type[ctypes._SimpleCData]:
        return C_TYPES[self.ctype_name]


Arg = TensorArg | ScalarArg


class Signature:
    """The ordered parameters of one kernel, with the checks and packing that go with them."""

    def __init__(self, *args: Arg, kernel: str = "kernel") -> None:
        names = [a.name for a in args]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"{kernel}: argument names must be unique, repeated: {dupes}")
        for a in args:
            if isinstance(a, ScalarArg) and a.ctype_name not in C_TYPES:
                raise ValueError(
                    f"{kernel}: scalar {a.name!r} has C type {a.ctype_name!r}; allowed: "
                    f"{', '.join(C_TYPES)}"
                )
        self.args = args
        self.kernel = kernel
        self.ctypes = tuple(a.ctype for a in args)
        self.names = tuple(names)
        self._names = frozenset(names)
        self._fast = compile_binder(args)

    def bind(
        self,
        values: Mapping[str, Any],
        dims: Mapping[str, int] | None = None,
        device_index: int | None = None,
    ) -> tuple[dict[str, int], list[int | float]]:
        """check + pack in one pass: (dims, parameter values in order). The launch path's call."""
        bound = dict(dims) if dims else {}
        params = self._fast(values, bound, device_index)
        if params is None:  # something is off: the explanatory path names it (and raises)
            bound = self._check_explained(values, dims, device_index)
            params = self.pack(values, bound)
        return bound, params

    def check(
        self,
        values: Mapping[str, Any],
        dims: Mapping[str, int] | None = None,
        device_index: int | None = None,
    ) -> dict[str, int]:
        """Check every argument; returns the dims (given ones plus those bound by tensor shapes)."""
        return self.bind(values, dims, device_index)[0]

    def _check_explained(
        self,
        values: Mapping[str, Any],
        dims: Mapping[str, int] | None,
        device_index: int | None,
    ) -> dict[str, int]:
        unknown = [k for k in values if k not in self._names]
        if unknown:
            raise ValueError(
                f"{self.kernel}: unexpected argument(s) {sorted(unknown)}; this kernel takes "
                f"{', '.join(a.name for a in self.args)}"
            )
        bound = dict(dims or {})
        tensors = []
        for arg in self.args:
            value = values.get(arg.name)
            if isinstance(arg, TensorArg):
                if self._check_tensor(arg, value, bound):
                    tensors.append((arg, value))
            else:
                self._check_scalar(arg, value, bound)
        # Devices last: a wrong shape or dtype is the more specific error when both are wrong.
        for arg, t in tensors:
            if not t.is_cuda or (device_index is not None and t.get_device() != device_index):
                where = "a CUDA device" if device_index is None else f"cuda:{device_index}"
                raise self._fail(
                    arg, f"a tensor on {where} (the kernel's device)", f"one on {t.device}"
                )
        return bound

    def pack(self, values: Mapping[str, Any], dims: Mapping[str, int]) -> list[int | float]:
        """Parameter values in order: tensors as device addresses (0 for an absent optional one)."""
        out: list[int | float] = []
        for arg in self.args:
            value = values.get(arg.name)
            if isinstance(arg, TensorArg):
                out.append(0 if value is None else value.data_ptr())
            else:
                out.append(dims[arg.dim] if value is None else value)
        return out

    def _fail(self, arg: Arg, expected: str, given: str) -> ValueError:
        return ValueError(f"{self.kernel}: argument {arg.name!r}: expected {expected}, got {given}")

    def _check_scalar(self, arg: ScalarArg, value: Any, bound: Mapping[str, int]) -> None:
        if value is None:
            if arg.dim is None or arg.dim not in bound:
                source = f" or bind the dim {arg.dim!r}" if arg.dim else ""
                raise ValueError(
                    f"{self.kernel}: scalar argument {arg.name!r} missing: pass it{source}"
                )
            return
        floating = arg.ctype_name.startswith("float")
        allowed = (int, float) if floating else (int,)
        if isinstance(value, bool) or not isinstance(value, allowed):
            kind = "a number" if floating else "an int"
            raise self._fail(arg, f"{kind} ({arg.ctype_name})", repr(value))

    def _check_tensor(self, arg: TensorArg, t: Any, bound: dict[str, int]) -> bool:
        """Check all but the device; False for an absent optional tensor."""
        if t is None:
            if arg.optional:
                return False
            raise self._fail(
                arg, f"a tensor of shape {_show(arg.shape)}", "nothing (it is required)"
            )
        if not isinstance(t, torch.Tensor):
            raise self._fail(arg, "a torch.Tensor", type(t).__name__)
        if t.dtype not in arg.dtypes:
            wanted = " or ".join(str(d).removeprefix("torch.") for d in arg.dtypes)
            raise self._fail(arg, f"dtype {wanted}", str(t.dtype).removeprefix("torch."))
        self._check_shape(arg, t, bound)
        self._check_layout(arg, t)
        return True

    def _check_shape(self, arg: TensorArg, t: torch.Tensor, bound: dict[str, int]) -> None:
        shape = tuple(t.shape)
        if len(shape) != len(arg.shape):
            raise self._fail(arg, f"{len(arg.shape)} dims {_show(arg.shape)}", f"shape {shape}")
        for axis, (want, have) in enumerate(zip(arg.shape, shape, strict=True)):
            if isinstance(want, str):
                if want not in bound:
                    bound[want] = have
                    continue
                expected = bound[want]
                label = f"{want}={expected}"
            else:
                expected, label = want, str(want)
            if have != expected:
                resolved = _show(
                    tuple(bound.get(d, d) if isinstance(d, str) else d for d in arg.shape)
                )
                raise self._fail(arg, f"shape {resolved} (dim {axis} is {label})", f"shape {shape}")

    def _check_layout(self, arg: TensorArg, t: torch.Tensor) -> None:
        if arg.layout == "contiguous" and not t.is_contiguous():
            raise self._fail(
                arg, "a contiguous tensor", f"strides {tuple(t.stride())} (call .contiguous())"
            )
        if arg.layout == "rows" and t.dim() > 0 and t.stride(-1) != 1 and t.shape[-1] > 1:
            raise self._fail(arg, "innermost stride 1", f"strides {tuple(t.stride())}")
        if t.data_ptr() % arg.align:
            raise self._fail(
                arg,
                f"a data pointer aligned to {arg.align} bytes",
                f"address {t.data_ptr():#x} (a slice at an unaligned offset; copy it)",
            )
        if arg.layout == "rows" and t.dim() > 1 and (t.stride(-2) * t.element_size()) % arg.align:
            raise self._fail(
                arg,
                f"a row stride that is a multiple of {arg.align} bytes",
                f"{t.stride(-2) * t.element_size()} bytes",
            )


def _show(shape: tuple[Dim, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
