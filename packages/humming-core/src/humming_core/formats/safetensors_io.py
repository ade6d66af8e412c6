"""Lazy reading of safetensors checkpoints: one file, or several shards with an index.

Only headers are read up front; a tensor's bytes are read when it is asked for. The header parser
is our own (the format is an 8-byte length, a JSON header and raw little-endian data) so that every
defect — a truncated file, a tensor outside the data, a missing shard — gets an error naming it.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import torch

from .errors import FormatError, read_exact

_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "U16": torch.uint16,
    "U32": torch.uint32,
    "U64": torch.uint64,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
    # E8M0 scales are read as their raw bytes: the canonical form keeps e8m0 codes as uint8.
    "F8_E8M0": torch.uint8,
}
INDEX_NAME = "model.safetensors.index.json"
_MAX_HEADER = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorInfo:
    file: Path
    dtype: str
    shape: tuple[int, ...]
    start: int  # absolute byte offset in the file
    nbytes: int


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Tensor infos and the `__metadata__` of one safetensors file, checked against its size."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise FormatError(
                f"{path}: truncated safetensors file ({size} bytes, no 8-byte header length)"
            )
        (hlen,) = struct.unpack("<Q", head)
        if hlen > min(_MAX_HEADER, size - 8):
            raise FormatError(
                f"{path}: header length {hlen} exceeds the file ({size} bytes): the file is "
                "truncated or not safetensors; download it again"
            )
        try:
            header = json.loads(f.read(hlen))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise FormatError(
                f"{path}: the safetensors JSON header does not parse ({exc})"
            ) from None
    meta = header.pop("__metadata__", None) or {}
    base = 8 + hlen
    infos = {name: _tensor_info(path, name, entry, base, size) for name, entry in header.items()}
    return infos, meta


def _tensor_info(path: Path, name: str, entry: dict, base: int, size: int) -> TensorInfo:
    dtype, shape = entry.get("dtype"), tuple(entry.get("shape", ()))
    if dtype not in _DTYPES:
        raise FormatError(
            f"{path}: tensor {name!r} has dtype {dtype!r}; readable: {', '.join(_DTYPES)}"
        )
    begin, end = entry["data_offsets"]
    elem = torch.empty((), dtype=_DTYPES[dtype]).element_size()
    count = 1
    for d in shape:
        count *= d
    if end - begin != count * elem:
        raise FormatError(
            f"{path}: tensor {name!r} spans {end - begin} bytes but shape {shape} of {dtype} needs "
            f"{count * elem}: the header is corrupt"
        )
    if base + end > size:
        raise FormatError(
            f"{path}: tensor {name!r} ends at byte {base + end} but the file has {size} bytes: the "
            "file is truncated; download it again"
        )
    return TensorInfo(path, dtype, shape, base + begin, end - begin)


class SafetensorsCheckpoint:
    """All tensors of a checkpoint (single file, a folder, or sharded with an index), read lazily."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.infos: dict[str, TensorInfo] = {}
        self.metadata: dict[str, str] = {}
        for file in self._files():
            infos, meta = read_header(file)
            self.infos.update(infos)
            self.metadata.update(meta)

    def _files(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        index = self.path / INDEX_NAME
        if index.exists():
            weight_map = json.loads(index.read_text()).get("weight_map")
            if not isinstance(weight_map, dict):
                raise FormatError(
                    f"{index}: no 'weight_map' object mapping tensor names to shard files"
                )
            files = [self.path / name for name in sorted(set(weight_map.values()))]
            missing = [str(f) for f in files if not f.exists()]
            if missing:
                raise FormatError(
                    f"{index} names shard files that are missing: {', '.join(missing)}"
                )
            return files
        files = sorted(self.path.glob("*.safetensors"))
        if not files:
            raise FormatError(f"{self.path}: no *.safetensors file and no {INDEX_NAME}")
        return files

    def __contains__(self, name: str) -> bool:
        return name in self.infos

    def names(self) -> list[str]:
        return list(self.infos)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._info(name).shape

    def _info(self, name: str) -> TensorInfo:
        try:
            return self.infos[name]
        except KeyError:
            raise FormatError(
                f"tensor {name!r} is missing from {self.path}: the quantization config needs it; "
                "check that every shard was downloaded"
            ) from None

    def get(self, name: str) -> torch.Tensor:
        info = self._info(name)
        data = read_exact(info.file, info.start, info.nbytes, name)
        dtype = _DTYPES[info.dtype]
        if not data:
            return torch.empty(info.shape, dtype=dtype)
        return torch.frombuffer(bytearray(data), dtype=dtype).reshape(info.shape)

    def get_optional(self, name: str) -> torch.Tensor | None:
        return self.get(name) if name in self.infos else None
