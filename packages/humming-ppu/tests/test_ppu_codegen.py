"""humming-cuda's WnA16 kernels rendered in the PPU dialects.

CPU: the render step's dialect switch. compile (NVRTC, no GPU): the PTX of a "ppu" source, where
inline asm passes through unassembled, holds the PPU instructions and none of the NVIDIA-only
ones; "ppu_emulation" compiles to sm_80 / sm_90a cubins for every weight format.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from wna16_cases import FORMATS, make_spec

from humming_core.device import GemmProblem
from humming_core.spec import QuantSpec, presets
from humming_cuda.caps import caps_for_arch as cuda_caps
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
    assert {"evict_first", "mma.sync.aligned.m16n8k16"} <= set(_nvidia_only(_ptx(nvidia)))


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
