"""NVRTC compilation: a representative kernel for every arch, resource parsing, errors and dumps."""

from __future__ import annotations

import pytest
from testkernels import hmma_source, smem_source

from humming_core.device import KernelSource
from humming_cuda.caps import ARCHS

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda import compiler
from humming_cuda.compiler import CompileError, compile_source, parse_ptxas_log

ELF_MAGIC = b"\x7fELF"
EM_CUDA = 0xBE


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_representative_kernel_compiles_for_every_arch(arch):
    artifact = compile_source(hmma_source(arch))
    assert artifact.binary[:4] == ELF_MAGIC
    assert int.from_bytes(artifact.binary[18:20], "little") == EM_CUDA  # e_machine: a cubin
    meta = artifact.meta
    assert meta["arch"] == arch
    assert meta["symbol"].startswith("_ZN12humming_test14hmma_scale_add")  # the lowered name
    res = meta["resources"]
    assert 8 <= res["registers"] <= 255
    assert res["spill_stores"] == 0 and res["spill_loads"] == 0 and res["smem_bytes"] == 0
    assert set(meta["functions"]) >= {meta["symbol"]}
    assert "ptxas" in meta["log"] and meta["compile_s"] > 0


STATIC_SMEM = r"""
extern "C" __global__ void staged(const float* x, float* y) {
  __shared__ float tile[3][512];
  for (int i = 0; i < 3; ++i) tile[i][threadIdx.x] = x[i * 512 + threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = tile[0][511 - threadIdx.x] + tile[2][threadIdx.x];
}
"""

# Many live values and a register cap of 24 (ptxas's floor): it must spill, and say so.
SPILLER = r"""
extern "C" __global__ void spiller(const float* x, float* y, int n) {
  float acc[48];
  #pragma unroll
  for (int i = 0; i < 48; ++i) acc[i] = x[threadIdx.x * 48 + i];
  for (int j = 0; j < n; ++j) {
    #pragma unroll
    for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + j) % 48] + 1.0f;
  }
  float s = 0.f;
  #pragma unroll
  for (int i = 0; i < 48; ++i) s += acc[i];
  y[threadIdx.x] = s;
}
"""


@pytest.mark.compile
def test_resources_are_parsed_from_ptxas():
    static = compile_source(KernelSource(name="staged", code=STATIC_SMEM, arch="sm_90a"))
    assert static.meta["resources"]["smem_bytes"] == 3 * 512 * 4
    assert static.meta["resources"]["barriers"] == 1
    capped = compile_source(
        KernelSource(name="spiller", code=SPILLER, arch="sm_80", options=("-maxrregcount=24",))
    )
    res = capped.meta["resources"]
    assert res["registers"] <= 24
    assert res["spill_stores"] > 0 and res["spill_loads"] > 0 and res["stack_bytes"] > 0
    dynamic = compile_source(smem_source("sm_90a"))  # dynamic smem is not in the static count
    assert dynamic.meta["symbol"] == "smem_reverse" and dynamic.meta["resources"]["smem_bytes"] == 0


def test_parse_ptxas_log_formats():
    older = (
        "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_80'\n"
        "ptxas info    : Function properties for _Z1kPf\n"
        "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 2048 bytes smem, 368 bytes cmem[0]\n"
        "ptxas info    : Compiling entry function 'other' for 'sm_80'\n"
        "ptxas info    : Used 12 registers, used 1 barriers, 384 bytes cmem[0]\n"
    )
    parsed = parse_ptxas_log(older)
    assert parsed["_Z1kPf"] == {
        "registers": 40, "barriers": 0, "stack_bytes": 8, "spill_stores": 4, "spill_loads": 4,
        "smem_bytes": 2048, "cmem_bytes": 368,
    }  # fmt: skip
    assert parsed["other"]["registers"] == 12 and parsed["other"]["barriers"] == 1
    assert parse_ptxas_log("") == {}


@pytest.mark.compile
def test_compile_error_carries_log_and_name():
    bad = KernelSource(
        name="broken_kernel", code="__global__ void broken_kernel() { nope; }", arch="sm_90a"
    )
    with pytest.raises(CompileError) as info:
        compile_source(bad)
    err = info.value
    assert err.source_name == "broken_kernel" and err.arch == "sm_90a"
    assert "nope" in err.log and "identifier" in err.log
    assert "broken_kernel" in str(err) and "nope" in str(err)


@pytest.mark.compile
def test_bad_arch_is_refused_with_the_supported_list():
    with pytest.raises(ValueError, match=r"cannot target sm_70.*sm_75"):
        compile_source(KernelSource(name="k", code="", arch="sm_70"))
    with pytest.raises(ValueError, match="not an NVRTC target"):
        compile_source(KernelSource(name="k", code="", arch="gfx942"))


@pytest.mark.compile
def test_dump_dir_keeps_source_ptx_cubin_and_log(tmp_path, monkeypatch):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    artifact = compile_source(hmma_source("sm_90a"))
    (folder,) = tmp_path.iterdir()
    assert "sm_90a" in folder.name
    assert (folder / "source.cu").read_text() == hmma_source("sm_90a").code
    assert (folder / "kernel.cubin").read_bytes() == artifact.binary
    assert ".entry" in (folder / "kernel.ptx").read_text()
    assert "ptxas" in (folder / "compile.log").read_text()
    assert "-arch=sm_90a" in (folder / "options.txt").read_text()
    sass = folder / "kernel.sass"
    assert not sass.exists() or "HMMA" in sass.read_text()  # SASS only where cuobjdump exists
    with pytest.raises(CompileError):
        compile_source(KernelSource(name="bad", code="oops", arch="sm_80"))
    failed = [p for p in tmp_path.iterdir() if p.name.startswith("bad-")]
    assert failed and (failed[0] / "source.cu").read_text() == "oops"


@pytest.mark.compile
def test_fingerprint_names_compiler_headers_and_flags():
    fp = compiler.fingerprint()
    major, minor = compiler.nvrtc_version()
    assert f"nvrtc={major}.{minor}" in fp and "cuda=" in fp and "cccl=" in fp
    assert "-std=c++17" in fp and "humming-cuda=" in fp


@pytest.mark.compile
def test_cross_compile_through_a_device_bound_to_another_arch():
    from humming_cuda.device import CudaDevice

    device = CudaDevice.for_arch("sm_120a")
    assert device.caps().arch == "sm_120a" and device.caps().has("block_scaled_mma")
    artifact = device.compile(hmma_source("sm_120a", has_bias=False))
    assert artifact.meta["arch"] == "sm_120a" and artifact.binary[:4] == ELF_MAGIC
    with pytest.raises(ValueError, match="unknown cuda arch"):
        CudaDevice.for_arch("sm_91")


@pytest.mark.compile
def test_lineinfo_is_opt_in_and_part_of_the_fingerprint(monkeypatch):
    monkeypatch.delenv("HUMMING_LINEINFO", raising=False)
    plain_fp, plain = compiler.fingerprint(), compile_source(hmma_source("sm_90a"))
    monkeypatch.setenv("HUMMING_LINEINFO", "1")
    assert "-lineinfo" in compiler.fingerprint() and compiler.fingerprint() != plain_fp
    assert len(compile_source(hmma_source("sm_90a")).binary) > len(plain.binary)  # line tables


@pytest.mark.compile
def test_nvrtc_own_cache_is_off_and_a_rejected_flag_is_dropped(monkeypatch):
    assert compiler._nvrtc_cache_flags == ["--no-cache"]  # ptxas always runs: resources are logged
    monkeypatch.setattr(compiler, "_nvrtc_cache_flags", ["--not-an-nvrtc-flag"])
    artifact = compile_source(hmma_source("sm_80"))  # an NVRTC without the flag still compiles
    assert artifact.meta["resources"]["registers"] > 0
    assert compiler._nvrtc_cache_flags == []
