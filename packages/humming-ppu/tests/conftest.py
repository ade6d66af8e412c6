"""Fixtures simulating what this machine lacks: a PPU binary and a PPU SDK compiler."""

from __future__ import annotations

import inspect
import json
import os
import stat
import sys
from pathlib import Path

import pytest


def build_elf(e_machine, symbols):
    """A minimal little-endian ELF64 file: one .symtab of (name, st_other) function symbols."""
    import struct

    strtab, offsets = b"\0", []
    for name, _ in symbols:
        offsets.append(len(strtab))
        strtab += name.encode() + b"\0"
    sym = struct.Struct("<IBBHQQ")
    symtab = b"\0" * sym.size + b"".join(
        sym.pack(off, 0x12, other, 1, 0, 16)
        for off, (_, other) in zip(offsets, symbols, strict=True)
    )
    shstr = b"\0.strtab\0.symtab\0.shstrtab\0"
    strtab_off = 64
    symtab_off = strtab_off + len(strtab)
    shstr_off = symtab_off + len(symtab)
    shoff = shstr_off + len(shstr)
    shdr = struct.Struct("<IIQQQQIIQQ")
    sections = [
        shdr.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        shdr.pack(1, 3, 0, 0, strtab_off, len(strtab), 0, 0, 1, 0),
        shdr.pack(9, 2, 0, 0, symtab_off, len(symtab), 1, 1, 8, sym.size),
        shdr.pack(17, 3, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0),
    ]
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    header = struct.pack(
        "<16sHHIQQQIHHHHHH", ident, 2, e_machine, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 4, 3
    )
    return header + strtab + symtab + shstr + b"".join(sections)


# The fake compiler: records its argv, answers --version, writes an ELF whose entries are the
# source's __global__ functions and ENTRY-macro kernels. FAKE_HGCC_FAIL=1 makes it fail like a real compile error;
# FAKE_HGCC_MACHINE picks e_machine; FAKE_HGCC_NO_OUTPUT=1 makes it "succeed" without output.
_MAIN = r"""
def main():
    import json, os, re, sys
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print("hgcc (fake PPU SDK) version 9.9.1")
        return 0
    with open(os.environ["FAKE_HGCC_RECORD"], "a") as f:
        f.write(json.dumps(argv) + "\n")
    if os.environ.get("FAKE_HGCC_FAIL"):
        sys.stderr.write("kernel.cu(3): error: identifier \"ppu_mma\" is undefined\n")
        return 2
    if os.environ.get("FAKE_HGCC_NO_OUTPUT"):
        return 0
    src = open(argv[0]).read()
    # Rendered kernels define their entry through an ENTRY macro (e.g. HUMMING_WNA16_ENTRY).
    names = re.findall(r"__global__\s+void\s+(\w+)", src) + re.findall(r"_ENTRY\((\w+)", src)
    machine = int(os.environ.get("FAKE_HGCC_MACHINE", "0x10E"), 16)
    flag = 0x20 if machine == 0x10E else 0x10
    symbols = [("device_helper", 0)] + [(n, flag) for n in names]
    with open(argv[argv.index("-o") + 1], "wb") as f:
        f.write(build_elf(machine, symbols))
    return 0

sys.exit(main())
"""


@pytest.fixture
def elf_builder():
    return build_elf


@pytest.fixture
def fake_sdk(tmp_path, monkeypatch):
    """A PPU SDK tree whose CUDA_SDK/bin/hgcc is the fake compiler; PPU_SDK points at it.

    Returns (sdk_root, calls) where calls() reads the argv lists the compiler was run with.
    """
    root = tmp_path / "PPU_SDK"
    compiler = root / "CUDA_SDK" / "bin" / "hgcc"
    compiler.parent.mkdir(parents=True)
    text = f"#!{sys.executable}\nimport sys\n{inspect.getsource(build_elf)}\n{_MAIN}"
    compiler.write_text(text)
    compiler.chmod(compiler.stat().st_mode | stat.S_IXUSR)
    record = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PPU_SDK", str(root))
    monkeypatch.setenv("FAKE_HGCC_RECORD", str(record))
    monkeypatch.delenv("HUMMING_PPU_COMPILER", raising=False)

    def calls() -> list[list[str]]:
        if not record.exists():
            return []
        return [json.loads(line) for line in record.read_text().splitlines()]

    return root, calls


@pytest.fixture
def no_ppu_env(monkeypatch, tmp_path):
    """No SDK anywhere: PPU_SDK points at an empty folder, no compiler override."""
    monkeypatch.setenv("PPU_SDK", str(tmp_path / "nowhere"))
    monkeypatch.delenv("HUMMING_PPU_COMPILER", raising=False)
    return Path(os.environ["PPU_SDK"])
