"""Kernel metadata from a compiled device binary: NVIDIA cubins and PPU binaries alike.

Both are little-endian ELF64 files; they differ in `e_machine` (CUDA 0xBE, PPU 0x10E) and in the
`st_other` bit that marks a kernel entry symbol (CUDA 0x10, PPU 0x20). Anything that reads cubin
metadata must accept both, so this reader knows both and reports which one it saw. It reads only
the section headers and the symbol table: no driver, no toolkit, no GPU.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# e_machine -> device name, and the st_other flag marking a kernel entry on that machine.
MACHINES: dict[int, str] = {0xBE: "cuda", 0x10E: "ppu"}
ENTRY_FLAG: dict[str, int] = {"cuda": 0x10, "ppu": 0x20}

_ELF_MAGIC = b"\x7fELF"
_ELFCLASS64 = 2
_ELFDATA2LSB = 1
_SHT_SYMTAB = 2
_STT_FUNC = 2
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # ELF64 file header, 64 bytes
_SHDR = struct.Struct("<IIQQQQIIQQ")  # ELF64 section header, 64 bytes
_SYM = struct.Struct("<IBBHQQ")  # ELF64 symbol, 24 bytes


class ElfError(ValueError):
    """The bytes are not a device binary this reader understands."""


@dataclass(frozen=True)
class ElfSymbol:
    name: str
    info: int  # binding << 4 | type
    other: int  # visibility in the low bits; vendors put the kernel-entry flag above them
    shndx: int
    value: int
    size: int

    @property
    def is_function(self) -> bool:
        return self.info & 0xF == _STT_FUNC


@dataclass(frozen=True)
class DeviceBinary:
    """What a compiled device binary says about itself."""

    machine: str  # "cuda" or "ppu"
    e_machine: int
    e_flags: int  # vendor-specific (the target arch is encoded here)
    entries: tuple[str, ...]  # kernel entry symbols, in symbol-table order
    symbols: tuple[ElfSymbol, ...]


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _slice(data: bytes, offset: int, size: int, what: str) -> bytes:
    if offset < 0 or size < 0 or offset + size > len(data):
        raise ElfError(
            f"{what} at bytes [{offset}, {offset + size}) lies outside the {len(data)}-byte file: "
            "the binary is truncated or corrupt; compile it again"
        )
    return data[offset : offset + size]


def _header(data: bytes) -> tuple:
    if len(data) < _EHDR.size or data[:4] != _ELF_MAGIC:
        raise ElfError(
            f"not an ELF file (starts with {data[:4]!r}, expected {_ELF_MAGIC!r}): a device binary "
            "must be a cubin (CUDA) or a PPU binary; PTX text or a fatbin cannot be read here"
        )
    if data[4] != _ELFCLASS64 or data[5] != _ELFDATA2LSB:
        raise ElfError(
            f"ELF class {data[4]} / data encoding {data[5]}: device binaries are ELF64 "
            "little-endian (class 2, encoding 1)"
        )
    return _EHDR.unpack_from(data, 0)


def _sections(data: bytes, shoff: int, shentsize: int, shnum: int) -> list[tuple]:
    if shnum and shentsize != _SHDR.size:
        raise ElfError(f"section header size {shentsize}, expected {_SHDR.size} for ELF64")
    _slice(data, shoff, shnum * _SHDR.size, "section header table")
    return [_SHDR.unpack_from(data, shoff + i * _SHDR.size) for i in range(shnum)]


def _symbols(data: bytes, sections: list[tuple]) -> tuple[ElfSymbol, ...]:
    found: list[ElfSymbol] = []
    for _name, sh_type, _f, _a, offset, size, link, _i, _al, _es in sections:
        if sh_type != _SHT_SYMTAB:
            continue
        if link >= len(sections):
            raise ElfError(f"symbol table links to string section {link}, which does not exist")
        str_off, str_size = sections[link][4], sections[link][5]
        strtab = _slice(data, str_off, str_size, "symbol string table")
        table = _slice(data, offset, size, "symbol table")
        for pos in range(0, len(table) - _SYM.size + 1, _SYM.size):
            st_name, info, other, shndx, value, sym_size = _SYM.unpack_from(table, pos)
            found.append(ElfSymbol(_cstr(strtab, st_name), info, other, shndx, value, sym_size))
    return tuple(found)


def read_device_binary(data: bytes) -> DeviceBinary:
    """Parse a cubin or PPU binary: its machine and its kernel entry symbols."""
    data = bytes(data)
    header = _header(data)
    e_machine, e_flags = header[2], header[7]
    shoff, shentsize, shnum = header[6], header[11], header[12]
    if e_machine not in MACHINES:
        known = ", ".join(f"{hex(k)} ({v})" for k, v in MACHINES.items())
        raise ElfError(
            f"ELF e_machine {hex(e_machine)} is not a device this reader knows: expected {known}"
        )
    machine = MACHINES[e_machine]
    symbols = _symbols(data, _sections(data, shoff, shentsize, shnum))
    flag = ENTRY_FLAG[machine]
    entries = tuple(s.name for s in symbols if s.is_function and s.other & flag)
    return DeviceBinary(machine, e_machine, e_flags, entries, symbols)
