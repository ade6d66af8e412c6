"""The ELF reader on a real NVRTC cubin (CUDA flags) and on a simulated PPU binary (PPU flags)."""

from __future__ import annotations

import pytest

from humming_ppu.elf import ElfError, read_device_binary

_KERNEL = b"""
extern "C" __global__ void axpy(float a, const float* x, float* y) {
  y[threadIdx.x] += a * x[threadIdx.x];
}
__device__ __noinline__ float twice(float v) { return 2.0f * v; }
extern "C" __global__ void scale2(float* y) { y[threadIdx.x] = twice(y[threadIdx.x]); }
"""


def _nvrtc_cubin(source: bytes, arch: str) -> bytes:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-python (NVRTC) not installed")
    err, prog = nvrtc.nvrtcCreateProgram(source, b"tiny.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture={arch}".encode()])
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@pytest.mark.compile
def test_real_cubin_lists_its_kernels():
    parsed = read_device_binary(_nvrtc_cubin(_KERNEL, "sm_80"))
    assert (parsed.machine, parsed.e_machine) == ("cuda", 0xBE)
    assert parsed.entries == ("axpy", "scale2") or sorted(parsed.entries) == ["axpy", "scale2"]
    entry = next(s for s in parsed.symbols if s.name == "axpy")
    assert entry.other & 0x10 and entry.is_function


def test_ppu_binary_uses_its_own_entry_flag(elf_builder):
    data = elf_builder(0x10E, [("helper", 0), ("wna16_gemm", 0x20), ("cuda_flag_only", 0x10)])
    parsed = read_device_binary(data)
    assert (parsed.machine, parsed.e_machine) == ("ppu", 0x10E)
    assert parsed.entries == ("wna16_gemm",)  # 0x10 is not an entry on a PPU


def test_cuda_flag_on_cuda_machine(elf_builder):
    parsed = read_device_binary(elf_builder(0xBE, [("k", 0x10), ("ppu_flag_only", 0x20)]))
    assert parsed.entries == ("k",)


def test_rejects_what_it_cannot_read(elf_builder):
    with pytest.raises(ElfError, match="not an ELF file"):
        read_device_binary(b"// PTX text\n.version 8.0")
    with pytest.raises(ElfError, match=r"e_machine 0x3e .*0xbe \(cuda\), 0x10e \(ppu\)"):
        read_device_binary(elf_builder(0x3E, [("main", 0)]))  # an x86-64 object
    whole = elf_builder(0x10E, [("k", 0x20)])
    with pytest.raises(ElfError, match="truncated"):
        read_device_binary(whole[: len(whole) - 70])
