"""The SDK compiler in a subprocess, against a fake hgcc that records its command lines."""

from __future__ import annotations

import pytest

from humming_core.device import KernelSource
from humming_cuda.headers import humming_include_root
from humming_ppu.elf import read_device_binary
from humming_ppu.toolchain import (
    BASE_FLAGS,
    PpuCompileError,
    PpuToolchain,
    ToolchainError,
    find_compiler,
    sdk_root,
)

_SRC = KernelSource(
    name="wna16_gemm",
    code='#include "humming/mma/mma_sync.cuh"\nextern "C" __global__ void wna16_gemm() {}\n',
    arch="ppu_10",
    headers=("/opt/extra/include",),
    options=("-DHM_TILE_N=128",),
)


def test_finds_the_sdk_compiler(fake_sdk):
    root, _ = fake_sdk
    assert sdk_root() == root
    assert find_compiler() == root / "CUDA_SDK" / "bin" / "hgcc"


def test_sdk_bin_layout_and_override(tmp_path, monkeypatch, fake_sdk):
    root, _ = fake_sdk
    other = tmp_path / "alt" / "bin" / "hgcc"
    other.parent.mkdir(parents=True)
    other.write_text("")
    monkeypatch.setenv("PPU_SDK", str(tmp_path / "alt"))
    assert find_compiler() == other  # $PPU_SDK/bin/hgcc when CUDA_SDK/ is absent
    monkeypatch.setenv("HUMMING_PPU_COMPILER", str(root / "CUDA_SDK" / "bin" / "hgcc"))
    assert find_compiler() == root / "CUDA_SDK" / "bin" / "hgcc"
    monkeypatch.setenv("HUMMING_PPU_COMPILER", str(tmp_path / "missing"))
    with pytest.raises(ToolchainError, match=r"does not exist.*HUMMING_PPU_COMPILER"):
        find_compiler()


def test_missing_sdk_lists_where_it_looked(no_ppu_env):
    with pytest.raises(ToolchainError) as info:
        find_compiler()
    message = str(info.value)
    assert str(no_ppu_env / "CUDA_SDK" / "bin" / "hgcc") in message
    assert "PPU_SDK" in message and "HUMMING_PPU_COMPILER" in message


def test_compile_runs_the_command_line_and_returns_the_binary(fake_sdk):
    _, calls = fake_sdk
    tc = PpuToolchain.locate()
    artifact = tc.compile(_SRC)
    (argv,) = calls()
    assert argv[0].endswith("kernel.cu") and argv[1] == "-o" and argv[2].endswith("kernel.hgbin")
    assert argv[3] == "-arch=ppu_10"
    assert "-DUSE_PPU=1" in argv
    i = argv.index("-mllvm")
    assert argv[i + 1] == "-ppu-mbar-yield-analysis=false"
    assert argv.index(f"-I{humming_include_root()}") < argv.index("-I/opt/extra/include")
    assert argv[-1] == "-DHM_TILE_N=128"  # the source's own options come last
    assert read_device_binary(artifact.binary).machine == "ppu"
    assert artifact.name == "wna16_gemm"
    assert artifact.meta["entries"] == ["wna16_gemm"]
    assert artifact.meta["command"][1:] == argv


def test_compiler_errors_carry_its_stderr(fake_sdk, monkeypatch):
    monkeypatch.setenv("FAKE_HGCC_FAIL", "1")
    with pytest.raises(PpuCompileError) as info:
        PpuToolchain.locate().compile(_SRC)
    assert 'identifier "ppu_mma" is undefined' in str(info.value)
    assert "exit code 2" in str(info.value) and "-arch=ppu_10" in str(info.value)


def test_refuses_a_non_ppu_binary(fake_sdk, monkeypatch):
    monkeypatch.setenv("FAKE_HGCC_MACHINE", "0xBE")
    with pytest.raises(ToolchainError, match=r"produced a cuda binary.*not the PPU SDK's"):
        PpuToolchain.locate().compile(_SRC)


def test_refuses_missing_output_and_missing_entry(fake_sdk, monkeypatch):
    tc = PpuToolchain.locate()
    other = KernelSource(name="other_kernel", code=_SRC.code, arch="ppu_10")
    with pytest.raises(ToolchainError, match=r"'other_kernel' is not among.*wna16_gemm"):
        tc.compile(other)
    monkeypatch.setenv("FAKE_HGCC_NO_OUTPUT", "1")
    with pytest.raises(PpuCompileError, match="no output file"):
        tc.compile(_SRC)


def test_rejects_non_ppu_arch(fake_sdk):
    _, calls = fake_sdk
    cuda_src = KernelSource(name="k", code="", arch="sm_80")
    with pytest.raises(
        ToolchainError, match="'sm_80' is not a PPU arch: use one of ppu_10, ppu_15"
    ):
        PpuToolchain.locate().compile(cuda_src)
    assert calls() == []


def test_fingerprint_is_path_version_and_flags(fake_sdk):
    root, _ = fake_sdk
    tc = PpuToolchain.locate()
    fp = tc.fingerprint()
    assert str(root / "CUDA_SDK" / "bin" / "hgcc") in fp
    assert "hgcc (fake PPU SDK) version 9.9.1" in fp
    assert " ".join(BASE_FLAGS) in fp
    assert PpuToolchain.locate(extra_flags=("-g",)).fingerprint() != fp


def test_fingerprint_of_a_broken_compiler_explains(tmp_path):
    broken = tmp_path / "hgcc"
    broken.write_text("#!/bin/sh\necho 'license expired' >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(ToolchainError, match=r"(?s)exited with 3.*license expired"):
        PpuToolchain(compiler=broken).fingerprint()
