"""The one error type every checkpoint reader raises for a malformed or unsupported file."""

from __future__ import annotations

from pathlib import Path


class FormatError(ValueError):
    """A checkpoint that cannot be read exactly: the message names the file or tensor, what was
    found, what was expected and how to fix it."""


def expect_shape(name: str, shape: tuple[int, ...], want: tuple[int, ...], why: str) -> None:
    """Raise a FormatError naming the tensor when its shape is not `want`."""
    if tuple(shape) != tuple(want):
        raise FormatError(
            f"tensor {name!r} has shape {tuple(shape)}, expected {tuple(want)} ({why}); the "
            "checkpoint is inconsistent with its quantization config: re-export it or fix the config"
        )


def expect_dtype(name: str, dtype: object, allowed: tuple[object, ...]) -> None:
    if dtype not in allowed:
        names = ", ".join(str(a) for a in allowed)
        raise FormatError(f"tensor {name!r} has dtype {dtype}, expected one of {names}")


def read_exact(path: Path, start: int, nbytes: int, name: str) -> bytes:
    """The `nbytes` bytes of tensor `name` at `start` in `path`; a short file is a clear error."""
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(nbytes)
    if len(data) != nbytes:
        raise FormatError(f"{path}: tensor {name!r} is truncated ({len(data)} of {nbytes} bytes)")
    return data
