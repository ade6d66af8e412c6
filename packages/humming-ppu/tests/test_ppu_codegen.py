"""humming-cuda's WnA16 and W8A8 (int8) kernels rendered in the PPU dialects.

CPU: the render step's dialect switch. compile (NVRTC, no GPU): the PTX of a "ppu" source, where
inline asm passes through unassembled, holds the PPU instructions and none of the NVIDIA-only
ones; "ppu_emulation" compiles to sm_80 / sm_90a cubins for every weight format (WnA16) and every
int8 format (W8A8-int8, W4A8-int8).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import w8a8_cases
from wna16_cases import FORMATS, make_spec

from humming_core.device import GemmProblem
from humming_core.spec import QuantSpec, presets
from humming_cuda.caps import caps_for_arch as cuda_caps
from humming_cuda.kernels.w8a8 import FAMILY as W8A8
from humming_cuda.kernels.wna16 import FAMILY, Wna16Config
from humming_ppu.caps import caps_for_arch
from humming_ppu.dialect import PPU

PPU_CAPS = caps_for_arch("ppu_10")
SPEC = presets.W4A16_G128


def _ppu_source(spec=SPEC, act="fp16"):
    cfg = FAMILY.candidates(spec, GemmProblem(n=4096, k=4096, m=1, act_dtype=act), PPU_CAPS)[0]
    return FAMILY.render(spec, cfg, PPU_CAPS, dialect="ppu")


def test_ppu_render_defines_the_dialect_and_its_own_name():
    cfg = Wna16Config(arch="sm_80")
    nvidia = FAMILY.render(SPEC, cfg, cuda_caps("sm_80"))
    emu = FAMILY.render(SPEC, cfg, cuda_caps("sm_80"), dialect="ppu_emulation")
    ppu = _ppu_source()
    assert "HUMMING_DIALECT" not in nvidia.code
    assert emu.code.startswith("#define HUMMING_DIALECT 2\n")
    assert ppu.code.startswith("#define HUMMING_DIALECT 1\n") and ppu.arch == "ppu_10"
    assert emu.code.split("\n", 1)[1] == nvidia.code.replace(nvidia.name, emu.name)
    assert len({nvidia.name, emu.name, ppu.name}) == 3  # distinct entries, distinct cache keys
    assert (ppu.meta["dialect"], emu.meta["dialect"]) == ("ppu", "ppu_emulation")


def test_unknown_dialect_is_rejected():
    with pytest.raises(ValueError, match="nvidia, ppu, ppu_emulation"):
        FAMILY.render(SPEC, Wna16Config(arch="sm_80"), cuda_caps("sm_80"), dialect="amd")


def _ptx(source, *defines: str) -> str:
    """NVRTC to PTX for the virtual compute_80 arch: ptxas never sees the inline asm."""
    nvrtc = pytest.importorskip(
        "cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed"
    )
    from humming_cuda.headers import cuda_include_dirs, humming_include_root

    _, prog = nvrtc.nvrtcCreateProgram(source.code.encode(), b"k.cu", 0, [], [])
    opts = ["-arch=compute_80", "-std=c++17", "-default-device", *defines]
    opts += [f"-I{p}" for p in (humming_include_root(), *cuda_include_dirs())]
    (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode()
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(prog, ptx)
    nvrtc.nvrtcDestroyProgram(prog)
    return ptx.decode()


def _nvidia_only(ptx: str) -> list[str]:
    """NVIDIA instruction forms the PPU lacks or spells differently."""
    found = [w for w in ("evict_first", "L2::cache_hint", "createpolicy") if w in ptx]
    found += re.findall(r"(?<!ppu\.)\bmma\.sync\.aligned\.m16n8k\d+", ptx)
    found += re.findall(r"(?<!ppu\.)\bldmatrix\.sync", ptx)
    return found


@pytest.mark.compile
@pytest.mark.parametrize("act", ["fp16", "bf16"])
def test_ppu_ptx_has_the_dialect_and_no_nvidia_only_instructions(act):
    spec = QuantSpec.model_validate({**SPEC.model_dump(mode="json"), "act": {"dtype": act}})
    ptx = _ptx(_ppu_source(spec, act), "-DUSE_PPU=1")
    operand = "f16" if act == "fp16" else "bf16"
    assert PPU.mma_instruction(operand) in ptx  # ppu.mma.sync.aligned.m16n16k16...
    assert "ppu.ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert _nvidia_only(ptx) == []
    # The same check flags the NVIDIA kernel (so an empty list above means something).
    nvidia = FAMILY.render(spec, Wna16Config(arch="sm_80"), cuda_caps("sm_80"))
    assert {"ldmatrix.sync", "mma.sync.aligned.m16n8k16"} <= set(_nvidia_only(_ptx(nvidia)))


@pytest.mark.compile
def test_use_ppu_without_the_ppu_dialect_is_an_error():
    nvidia = FAMILY.render(SPEC, Wna16Config(arch="sm_80"), cuda_caps("sm_80"))
    with pytest.raises(AssertionError, match="rendered with dialect='ppu'"):
        _ptx(nvidia, "-DUSE_PPU=1")


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ppu_emulation_compiles_for_every_format(arch):
    from humming_cuda.compiler import compile_source

    caps = cuda_caps(arch)
    jobs = []
    for i, fmt in enumerate(FORMATS):
        act = ("fp16", "bf16")[i % 2]
        spec = make_spec(fmt, act, 64, 4096, bias=True, out=None, sdt=fmt[2][-1])
        problem = GemmProblem(n=4096, k=4096, m=1, act_dtype=act)
        if FAMILY.supports(spec, problem, caps):
            for m in (1, 256):
                cfg = FAMILY.candidates(spec, GemmProblem(n=4096, k=4096, m=m), caps)[0]
                jobs.append(FAMILY.render(spec, cfg, caps, dialect="ppu_emulation"))
    assert len(jobs) >= len(FORMATS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for source, artifact in zip(jobs, pool.map(compile_source, jobs), strict=True):
            res = artifact.meta["resources"]
            assert res["spill_stores"] <= 16, f"{source.name}: {res}"


# ---- W8A8 / W4A8 with int8 activations ----------------------------------------------------------
W8A8_INT8_SPECS = {
    "w8a8-channel": presets.W8A8_INT8,
    "w8a8-block": w8a8_cases.make_spec("int8", "group", "block", True, "fp16"),
    "w4a8-int4": presets.W4A8_INT8,
    "w4a8-uint4-zero": w8a8_cases.make_w4_spec("uint4", "int8", "static", 32, "fp32", True, "bf16"),
}


def _w8a8_source(spec, caps, dialect, m=1):
    problem = GemmProblem(n=4096, k=4096, m=m, act_dtype="int8")
    return W8A8.render(spec, W8A8.candidates(spec, problem, caps)[0], caps, dialect=dialect)


def test_w8a8_render_defines_the_dialect_and_its_own_name():
    caps = cuda_caps("sm_80")
    nvidia = _w8a8_source(presets.W8A8_INT8, caps, "nvidia")
    emu = _w8a8_source(presets.W8A8_INT8, caps, "ppu_emulation")
    ppu = _w8a8_source(presets.W8A8_INT8, PPU_CAPS, "ppu")
    assert "HUMMING_DIALECT" not in nvidia.code and "dialect" not in nvidia.meta
    assert emu.code.startswith("#define HUMMING_DIALECT 2\n")
    assert ppu.code.startswith("#define HUMMING_DIALECT 1\n") and ppu.arch == "ppu_10"
    # The same kernel otherwise: the quantizer entries and the GEMM entry carry the new name.
    assert emu.code.split("\n", 1)[1] == nvidia.code.replace(nvidia.name, emu.name)
    assert len({nvidia.name, emu.name, ppu.name}) == 3
    assert (ppu.meta["dialect"], emu.meta["dialect"]) == ("ppu", "ppu_emulation")


@pytest.mark.parametrize("dialect", ["ppu", "ppu_emulation"])
def test_w8a8_fp8_has_no_ppu_dialect(dialect):
    caps = cuda_caps("sm_90a")
    for spec in (presets.W8A8_FP8, presets.W4A8_FP8):
        with pytest.raises(ValueError, match="PPU has no fp8 MMA"):
            _w8a8_source(spec, caps, dialect)
    with pytest.raises(ValueError, match="nvidia, ppu, ppu_emulation"):
        _w8a8_source(presets.W8A8_INT8, caps, "amd")


@pytest.mark.compile
@pytest.mark.parametrize("name", list(W8A8_INT8_SPECS))
def test_w8a8_ppu_ptx_has_the_int8_dialect(name):
    spec = W8A8_INT8_SPECS[name]
    ptx = _ptx(_w8a8_source(spec, PPU_CAPS, "ppu", m=256), "-DUSE_PPU=1")
    # ppu.mma.sync.aligned.m16n16k32.row.col.satfinite.s32.s8.s8.s32
    assert PPU.mma_instruction("s8") in ptx
    assert "ppu.ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert _nvidia_only(ptx) == []
    nvidia = _ptx(_w8a8_source(spec, cuda_caps("sm_80"), "nvidia", m=256))
    assert {"ldmatrix.sync", "mma.sync.aligned.m16n8k32"} <= set(_nvidia_only(nvidia))


@pytest.mark.compile
def test_w8a8_emulation_ptx_pairs_n8_int8_mmas_without_evict_first():
    spec = presets.W8A8_INT8
    ptx = _ptx(_w8a8_source(spec, cuda_caps("sm_80"), "ppu_emulation", m=256))
    nvidia = _ptx(_w8a8_source(spec, cuda_caps("sm_80"), "nvidia", m=256))
    mma = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"
    assert "ppu." not in ptx and "evict_first" not in ptx and "createpolicy" not in ptx
    # The same number of N=8 MMAs as the NVIDIA kernel: each N=16 one is exactly two of them.
    assert ptx.count(mma) == nvidia.count(mma) > 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_w8a8_ppu_emulation_compiles_for_every_int8_format(arch):
    from humming_cuda.compiler import compile_source

    caps = cuda_caps(arch)
    specs = [s for s in w8a8_cases.all_specs(bias=True, out="bf16") if s.act.dtype.name == "int8"]
    jobs = [_w8a8_source(s, caps, "ppu_emulation", m) for s in specs for m in (1, 512)]
    assert len(specs) == 7  # 3 W8A8-int8 and 4 W4A8-int8 formats
    with ThreadPoolExecutor(max_workers=2) as pool:
        for source, artifact in zip(jobs, pool.map(compile_source, jobs), strict=True):
            assert source.name in artifact.meta["functions"]
            res = artifact.meta["resources"]
            assert res["spill_stores"] == 0, f"{source.name}: {res}"
