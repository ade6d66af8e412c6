"""Scalar types: what one stored code means.

A `ScalarType` is pure description (bits, sign, exponent/mantissa split, special-value convention);
the arithmetic that encodes and decodes codes lives in `humming_core.numerics.scalar`.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

Kind = Literal["int", "uint", "float"]
# How a float type spends its top codes:
#   ieee   - the all-ones exponent is inf (mantissa 0) or NaN (fp16, bf16, fp32, e5m2)
#   fn     - no inf; only the all-ones pattern (exponent and mantissa) is NaN (OCP e4m3, ue4m3, e8m0)
#   finite - every pattern is a finite number (OCP e2m1, e2m3, e3m2)
Special = Literal["ieee", "fn", "finite"]

_NAME_RE = re.compile(r"^(?P<u>u?)e(?P<e>\d)m(?P<m>\d+)(?P<sfx>fn|ieee|fin)?$")
_WIDE = {"fp16": (5, 10), "bf16": (8, 7), "fp32": (8, 23)}


class ScalarType(BaseModel):
    """One scalar number format, parseable from and printable to a short name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    bits: int
    exponent: int = 0
    mantissa: int = 0
    signed: bool = True
    special: Special = "finite"

    @model_validator(mode="after")
    def _check(self) -> ScalarType:
        if self.kind in ("int", "uint"):
            if not 1 <= self.bits <= 8:
                raise ValueError(
                    f"bits={self.bits} is not supported for {self.kind}: integer types have 1 to 8 bits"
                )
            if self.exponent or self.mantissa or self.special != "finite":
                raise ValueError("integer types take no exponent, mantissa or special convention")
            if self.signed != (self.kind == "int"):
                raise ValueError(f"signed={self.signed} contradicts kind={self.kind!r}")
            return self
        want = self.exponent + self.mantissa + (1 if self.signed else 0)
        if self.bits != want:
            raise ValueError(
                f"bits={self.bits} does not match e{self.exponent}m{self.mantissa} "
                f"({'signed' if self.signed else 'unsigned'}): expected {want}"
            )
        if self.exponent < 1 or self.exponent > 8:
            raise ValueError(f"exponent={self.exponent} is not supported: allowed 1 to 8 bits")
        if self.bits > 8 and (self.exponent, self.mantissa) not in _WIDE.values():
            raise ValueError(
                f"{self.bits}-bit floats other than fp16, bf16 and fp32 are not supported"
            )
        if self.bits > 8 and self.special != "ieee":
            raise ValueError("fp16, bf16 and fp32 use the ieee convention")
        if self.mantissa == 0 and self.signed:
            raise ValueError("exponent-only types (like e8m0) are unsigned")
        if self.special == "ieee" and self.exponent < 2:
            raise ValueError(
                f"e{self.exponent}m{self.mantissa} with the ieee convention has no normal numbers "
                "(its only non-zero exponent code means inf/NaN): use 'fn' or 'fin', or >= 2 exponent bits"
            )
        return self

    # ---- names -------------------------------------------------------------------------------
    @classmethod
    def parse(cls, name: str | ScalarType) -> ScalarType:
        """Parse a short name: int1..int8, uint1..uint8, eXmY[fn|ieee|fin], ue4m3, e8m0, fp16, bf16, fp32."""
        if isinstance(name, ScalarType):
            return name
        text = name.strip().lower()
        for prefix, kind in (("uint", "uint"), ("int", "int")):
            if text.startswith(prefix) and text[len(prefix) :].isdigit():
                return cls(kind=kind, bits=int(text[len(prefix) :]), signed=kind == "int")
        if text in _WIDE:
            e, m = _WIDE[text]
            return cls(kind="float", bits=1 + e + m, exponent=e, mantissa=m, special="ieee")
        if text in ("e8m0", "ue8m0", "e8m0fnu"):
            return cls(kind="float", bits=8, exponent=8, mantissa=0, signed=False, special="fn")
        match = _NAME_RE.match(text)
        if match is None:
            raise ValueError(
                f"unknown scalar type name {name!r}: allowed int1..int8, uint1..uint8, eXmY floats "
                "(e2m1, e3m2, e2m3, e4m3, e5m2, ...), ue4m3, e8m0, fp16, bf16, fp32"
            )
        e, m = int(match["e"]), int(match["m"])
        signed = not match["u"] and m > 0  # exponent-only types (e8m0) are unsigned by nature
        bits = e + m + (1 if signed else 0)
        special = _SUFFIX[match["sfx"]] if match["sfx"] else _default_special(e, m, bits, signed)
        return cls(kind="float", bits=bits, exponent=e, mantissa=m, signed=signed, special=special)

    @cached_property
    def name(self) -> str:
        if self.kind != "float":
            return f"{self.kind}{self.bits}"
        for wide, (e, m) in _WIDE.items():
            if (self.exponent, self.mantissa) == (e, m) and self.bits > 8:
                return wide
        if self.mantissa == 0:
            return f"e{self.exponent}m0"
        base = f"{'' if self.signed else 'u'}e{self.exponent}m{self.mantissa}"
        if self.special != _default_special(self.exponent, self.mantissa, self.bits, self.signed):
            base += {v: k for k, v in _SUFFIX.items()}[self.special]
        return base

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ScalarType({self.name!r})"

    # ---- derived facts -----------------------------------------------------------------------
    @property
    def is_integer(self) -> bool:
        return self.kind != "float"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_exponent_only(self) -> bool:
        """E8M0-style: value 2^(code - bias), no zero, no subnormals, no sign."""
        return self.is_float and self.mantissa == 0

    @property
    def storage_bits(self) -> int:
        """Bits one value occupies when stored on its own: ue4m3 is an e4m3 byte with the sign at 0."""
        return self.bits + (0 if self.signed or self.is_exponent_only or self.is_integer else 1)

    @property
    def bias(self) -> int:
        return (1 << (self.exponent - 1)) - 1 if self.is_float else 0

    @property
    def has_inf(self) -> bool:
        return self.special == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.special in ("ieee", "fn")

    @property
    def min_int(self) -> int:
        return -(1 << (self.bits - 1)) if self.kind == "int" else 0

    @property
    def max_int(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.kind == "int" else (1 << self.bits) - 1

    @cached_property
    def max_value(self) -> float:
        """Largest finite value."""
        if self.is_integer:
            return float(self.max_int)
        e_max = (1 << self.exponent) - 1
        m_max = (1 << self.mantissa) - 1
        if self.special == "ieee":
            e_max -= 1
        elif self.special == "fn":
            if self.mantissa == 0:
                e_max -= 1
            else:
                m_max -= 1
        return 2.0 ** (e_max - self.bias) * (1 + m_max / (1 << self.mantissa))

    @cached_property
    def min_value(self) -> float:
        """Most negative finite value (0 for unsigned integers, the smallest power for e8m0)."""
        if self.is_integer:
            return float(self.min_int)
        if not self.signed:
            return 2.0 ** (-self.bias) if self.is_exponent_only else 0.0
        return -self.max_value

    @cached_property
    def min_subnormal(self) -> float:
        """Smallest positive value."""
        if self.is_integer:
            return 1.0
        if self.is_exponent_only:
            return 2.0 ** (-self.bias)
        return 2.0 ** (1 - self.bias - self.mantissa)

    def torch_dtype(self):
        """The torch dtype storing this type natively, or None."""
        import torch

        table = {
            "fp16": torch.float16,
            "bf16": torch.bfloat16,
            "fp32": torch.float32,
            "int8": torch.int8,
            "uint8": torch.uint8,
            "e4m3": torch.float8_e4m3fn,
            "e5m2": torch.float8_e5m2,
        }
        if hasattr(torch, "float8_e8m0fnu"):
            table["e8m0"] = torch.float8_e8m0fnu
        return table.get(self.name)


_SUFFIX: dict[str, Special] = {"fn": "fn", "ieee": "ieee", "fin": "finite"}


def _default_special(e: int, m: int, bits: int, signed: bool = True) -> Special:
    # Unsigned floats are scale types (ue4m3 is e4m3fn with the sign bit fixed at 0).
    if bits < 8 and signed:
        return "finite"
    if (e, m) == (5, 2):
        return "ieee"
    return "fn"


def scalar(name: str | ScalarType) -> ScalarType:
    """Shorthand for `ScalarType.parse`."""
    return ScalarType.parse(name)
