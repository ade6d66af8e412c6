"""Lazy reading of GGUF files (llama.cpp): header, metadata, tensor table; tensor bytes on demand.

Layout (little-endian): magic "GGUF", uint32 version (2 or 3), uint64 tensor count, uint64 metadata
count, the metadata key/values, then per tensor (name, n_dims, dims innermost first, uint32 type,
uint64 offset); the data section starts at the next multiple of `general.alignment` (default 32).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import torch

from .errors import FormatError, read_exact

# type id -> (name, elements per block, bytes per block)
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    30: ("BF16", 1, 2),
}
# metadata value type id -> struct format (8 = string, 9 = array are handled apart)
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
# Arrays longer than this (tokenizer vocabularies) are skipped, not decoded: formats never need them.
_MAX_ARRAY = 4096


@dataclass(frozen=True)
class GGUFTensor:
    name: str
    type_name: str
    shape: tuple[int, ...]  # torch order: outermost first, so a linear weight is (N, K)
    start: int
    nbytes: int


class _Cursor:
    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path = f, path

    def read(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise FormatError(
                f"{self.path}: truncated GGUF header (wanted {n} bytes at {self.f.tell()})"
            )
        return data

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.read(self.unpack("<Q")).decode("utf-8", errors="replace")

    def value(self, vtype: int) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == 8:
            return self.string()
        if vtype == 9:
            item, count = self.unpack("<I"), self.unpack("<Q")
            if count > _MAX_ARRAY and item in _SCALARS:
                self.f.seek(count * struct.calcsize(_SCALARS[item]), 1)
                return None
            values = [self.value(item) for _ in range(count)]
            return tuple(values) if count <= _MAX_ARRAY else None
        raise FormatError(f"{self.path}: unknown GGUF metadata value type {vtype}")


class GGUFFile:
    """Metadata and tensor table of a GGUF file; `raw(name)` reads one tensor's bytes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        size = self.path.stat().st_size
        with self.path.open("rb") as f:
            cur = _Cursor(f, self.path)
            if cur.read(4) != b"GGUF":
                raise FormatError(f"{self.path}: not a GGUF file (magic is not 'GGUF')")
            self.version = cur.unpack("<I")
            if self.version not in (2, 3):
                raise FormatError(
                    f"{self.path}: GGUF version {self.version} is not supported (2 or 3)"
                )
            n_tensors, n_kv = cur.unpack("<Q"), cur.unpack("<Q")
            self.metadata: dict[str, Any] = {}
            for _ in range(n_kv):
                key = cur.string()
                self.metadata[key] = cur.value(cur.unpack("<I"))
            table = [self._tensor_entry(cur) for _ in range(n_tensors)]
            align = int(self.metadata.get("general.alignment", 32))
            data_start = -(-f.tell() // align) * align
        self.tensors: dict[str, GGUFTensor] = {}
        for name, type_id, shape, offset in table:
            tname, block, block_bytes = GGML_TYPES[type_id]
            count = 1
            for d in shape:
                count *= d
            if shape[-1] % block:
                raise FormatError(
                    f"{self.path}: tensor {name!r} of type {tname} has a row of {shape[-1]} elements, "
                    f"not a multiple of its block size {block}"
                )
            nbytes = count // block * block_bytes
            start = data_start + offset
            if start + nbytes > size:
                raise FormatError(
                    f"{self.path}: tensor {name!r} ends at byte {start + nbytes} but the file has "
                    f"{size} bytes: the file is truncated; download it again"
                )
            self.tensors[name] = GGUFTensor(name, tname, shape, start, nbytes)

    def _tensor_entry(self, cur: _Cursor) -> tuple[str, int, tuple[int, ...], int]:
        name = cur.string()
        dims = [cur.unpack("<Q") for _ in range(cur.unpack("<I"))]
        type_id, offset = cur.unpack("<I"), cur.unpack("<Q")
        if type_id not in GGML_TYPES:
            raise FormatError(
                f"{self.path}: tensor {name!r} has GGML type id {type_id}, which this reader does not "
                f"know; known: {', '.join(n for n, _, _ in GGML_TYPES.values())}"
            )
        return name, type_id, tuple(reversed(dims)), offset

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def tensor(self, name: str) -> GGUFTensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise FormatError(f"tensor {name!r} is missing from {self.path}") from None

    def raw(self, name: str) -> torch.Tensor:
        """The stored bytes of one tensor as uint8, shape (rows, bytes per row)."""
        t = self.tensor(name)
        data = read_exact(self.path, t.start, t.nbytes, name)
        rows = 1
        for d in t.shape[:-1]:
            rows *= d
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(rows, -1)
