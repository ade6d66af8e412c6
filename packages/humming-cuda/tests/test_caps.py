"""The capability table: internal consistency (CPU) and every claim checked against NVRTC (compile).

The compile tests build one probe kernel per instruction claim and arch: a listed MMA shape or
feature must compile for its arch, and a known one that is not listed must not. So the table can
neither promise an instruction ptxas rejects nor hide one it accepts.
"""

from __future__ import annotations

import re

import pytest

from humming_cuda.caps import ARCHS, CC_TO_ARCH, ROWS, arch_for_capability, caps_for_arch
from humming_cuda.detect import GpuIdentity, is_ppu_name, refuse_reason

# ---- CPU: the table is well-formed ---------------------------------------------------------------


def test_one_row_per_target_in_capability_order():
    assert ARCHS == (
        "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90a",
        "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a",
    )  # fmt: skip
    assert sorted(CC_TO_ARCH.values(), key=ARCHS.index) == list(ARCHS)
    for row in ROWS:
        assert row.device == "cuda" and row.smem_per_block >= 64 * 1024
        assert row.verified == (row.arch == "sm_90a") and row.notes


def test_capability_lookup_and_errors():
    assert arch_for_capability(9, 0) == "sm_90a"
    assert arch_for_capability(12, 1) == "sm_121a"
    assert caps_for_arch("sm_100a").has("tcgen05")
    with pytest.raises(ValueError, match=r"compute capability 7\.0 .*older than Turing"):
        arch_for_capability(7, 0)
    with pytest.raises(ValueError, match=r"unknown cuda arch 'sm_90'.*sm_90a"):
        caps_for_arch("sm_90")


def test_generation_features():
    has = {r.arch: set(r.features) for r in ROWS}
    assert [a for a in ARCHS if "wgmma" in has[a]] == ["sm_90a"]
    assert [a for a in ARCHS if "tcgen05" in has[a]] == ["sm_100a", "sm_103a", "sm_110a"]
    assert [a for a in ARCHS if "fp8" in has[a]] == list(ARCHS[4:])
    assert [a for a in ARCHS if "block_scaled_mma" in has[a]] == list(ARCHS[6:])
    assert "cp.async" not in has["sm_75"] and "bf16" not in caps_for_arch("sm_75").mma
    assert caps_for_arch("sm_90a").mma["fp16"][-1] == "wgmma.m64nNk16"
    assert "nvf4" in caps_for_arch("sm_120a").mma and "nvf4" not in caps_for_arch("sm_90a").mma


@pytest.mark.parametrize(
    "name", ["PPU-ZW810E", "ZW810E", "ppu m890", " zw-anything", "Alibaba ZW810E"]
)
def test_ppu_names_are_refused(name):
    assert is_ppu_name(name)
    reason = refuse_reason(GpuIdentity(name, 8, 0))
    assert reason and "PPU" in reason and "humming-ppu" in reason


def test_nvidia_names_are_taken():
    assert not is_ppu_name("NVIDIA H200")
    assert refuse_reason(GpuIdentity("NVIDIA H200", 9, 0)) is None
    assert "not supported" in refuse_reason(GpuIdentity("Tesla V100", 7, 0))


# ---- compile: every claim against NVRTC ----------------------------------------------------------

_BITS = {"fp16": 16, "bf16": 16, "tf32": 32, "int8": 8, "uint8": 8, "int4": 4, "uint4": 4}
_PTX_TYPE = {"fp16": "f16", "int8": "s8", "uint8": "u8", "int4": "s4", "uint4": "u4"}
_F8F6F4 = ("e3m2", "e2m3", "e2m1")  # only through mma .kind::f8f6f4


def _kernel(body: str) -> str:
    return (
        'extern "C" __global__ void probe(unsigned* o, unsigned long long* q) {\n'
        "  unsigned r[16]; for (int i = 0; i < 16; ++i) r[i] = o[i];\n"
        "  unsigned long long da = q[0], db = q[1];\n"
        "  __shared__ __align__(128) unsigned sm[256];\n"
        "  unsigned sa = (unsigned)__cvta_generic_to_shared(sm); (void)sa; (void)da; (void)db;\n"
        f"  {body}\n"
        "  for (int i = 0; i < 16; ++i) o[i] = r[i];\n}\n"
    )


def _asm(text: str, outs: int, ins: list[str], extra: str = "") -> str:
    operands = [f'"+r"(r[{i}])' for i in range(outs)]
    return f'asm volatile("{text}" : {", ".join(operands)} : {", ".join(ins)}{extra});'


def _regs(start: int, count: int) -> str:
    return "{" + ",".join(f"%{start + i}" for i in range(count)) + "}"


def _mma_sync_probe(dtype: str, shape: str) -> str:
    m, n, k = map(int, re.fullmatch(r"m(\d+)n(\d+)k(\d+)", shape).groups())
    bits = 8 if dtype in ("e4m3", "e5m2", *_F8F6F4) else _BITS[dtype]
    na, nb, nc = max(1, m * k * bits // 1024), max(1, n * k * bits // 1024), m * n // 32
    acc = "s32" if "int" in dtype else "f32"
    ptx = _PTX_TYPE.get(dtype, dtype)
    kind = ".kind::f8f6f4" if dtype in _F8F6F4 else ""
    text = (
        f"mma.sync.aligned.{shape}.row.col{kind}.{acc}.{ptx}.{ptx}.{acc} "
        f"{_regs(0, nc)}, {_regs(nc, na)}, {_regs(nc + na, nb)}, {_regs(0, nc)};"
    )
    return _asm(text, nc, [f'"r"(r[{nc + i}])' for i in range(na + nb)])


_BLOCK_SCALE = {  # kind -> (shape, qualifiers, A regs)
    "mxf8f6f4": ("m16n8k32", "kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0", 4),
    "mxf4": ("m16n8k64", "kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0", 4),
    "nvf4": ("m16n8k64", "kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3", 4),
}


def _block_scale_probe(kind: str) -> str:
    shape, quals, na = _BLOCK_SCALE[kind]
    text = (
        f"mma.sync.aligned.{shape}.row.col.{quals} {_regs(0, 4)}, {_regs(4, na)}, {_regs(4 + na, 2)}, "
        f"{_regs(0, 4)}, %{6 + na}, {{0, 0}}, %{7 + na}, {{0, 0}};"
    )
    return _asm(text, 4, [f'"r"(r[{4 + i}])' for i in range(na + 4)])


_WGMMA = {  # dtype -> (k, type qualifiers, trailing immediates)
    "fp16": (16, "f32.f16.f16", ", 1, 1, 0, 0"),
    "bf16": (16, "f32.bf16.bf16", ", 1, 1, 0, 0"),
    "tf32": (8, "f32.tf32.tf32", ", 1, 1"),
    "e4m3": (32, "f32.e4m3.e4m3", ", 1, 1"),
    "e5m2": (32, "f32.e5m2.e5m2", ", 1, 1"),
    "int8": (32, "s32.s8.s8", ""),
    "uint8": (32, "s32.u8.u8", ""),
}


def _wgmma_probe(dtype: str) -> str:
    k, types, imms = _WGMMA[dtype]
    text = (
        "{ .reg .pred p; setp.ne.b32 p, %6, 0; "
        f"wgmma.mma_async.sync.aligned.m64n8k{k}.{types} {_regs(0, 4)}, %4, %5, p{imms}; }}"
    )
    return _asm(text, 4, ['"l"(da)', '"l"(db)', '"r"(r[5])'])


_TCGEN05_KIND = {
    "fp16": "f16", "bf16": "f16", "tf32": "tf32", "int8": "i8", "uint8": "i8",
    **dict.fromkeys(("e4m3", "e5m2", "e3m2", "e2m3", "e2m1"), "f8f6f4"),
    "mxf8f6f4": "mxf8f6f4.block_scale", "mxf4": "mxf4.block_scale",
    "nvf4": "mxf4nvf4.block_scale.scale_vec::4X",
}  # fmt: skip


def _tcgen05_probe(dtype: str) -> str:
    kind = _TCGEN05_KIND[dtype]
    scales = ", [%5], [%6]" if "block_scale" in kind else ""
    text = (
        "{ .reg .pred p; setp.ne.b32 p, %4, 0; "
        f"tcgen05.mma.cta_group::1.kind::{kind} [%0], %1, %2, %3{scales}, p; }}"
    )
    ins = '"r"(r[0]), "l"(da), "l"(db), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4])'
    return f'asm volatile("{text}" :: {ins});'


def mma_probe(dtype: str, instruction: str) -> str:
    family, _, shape = instruction.partition(".")
    if family == "wgmma":
        return _kernel(_wgmma_probe(dtype))
    if family == "tcgen05":
        return _kernel(_tcgen05_probe(dtype))
    if shape.startswith("block_scale"):
        return _kernel(_block_scale_probe(dtype))
    return _kernel(_mma_sync_probe(dtype, shape))


FEATURE_PROBES = {
    "ldmatrix": 'asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" '
    ': "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(sa));',
    "cp.async": 'asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\\ncp.async.wait_all;" '
    ':: "r"(sa), "l"(o + 4));',
    "mbarrier": 'asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(sa));',
    "tma": 'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes '
    '[%0], [%1, {%2, %3}], [%4];" :: "r"(sa), "l"(da), "r"(r[0]), "r"(r[1]), "r"(sa + 512) : "memory");',
    "clusters": 'asm volatile("barrier.cluster.arrive;\\nbarrier.cluster.wait;");',
    "pdl": 'asm volatile("griddepcontrol.wait;\\ngriddepcontrol.launch_dependents;");',
    "wgmma": 'asm volatile("wgmma.fence.sync.aligned;");',
    "setmaxnreg": 'asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");',
    "stmatrix": 'asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(sa), "r"(r[0]));',
    "tcgen05": 'asm volatile("tcgen05.fence::before_thread_sync;");',
    "fp8": 'asm volatile("{ .reg .b16 h; mov.b32 {h, _}, %1; cvt.rn.f16x2.e4m3x2 %0, h; }" '
    ': "=r"(r[0]) : "r"(r[1]));',
    "fp6": 'asm volatile("{ .reg .b16 h; mov.b32 {h, _}, %1; cvt.rn.f16x2.e3m2x2 %0, h; }" '
    ': "=r"(r[0]) : "r"(r[1]));',
    "fp4": 'asm volatile("{ .reg .b8 b; .reg .b16 h; mov.b32 {h, _}, %1; cvt.u8.u16 b, h; '
    'cvt.rn.f16x2.e2m1x2 %0, b; }" : "=r"(r[0]) : "r"(r[1]));',
}


def _compiles(code: str, arch: str) -> tuple[bool, str]:
    from humming_core.device import KernelSource
    from humming_cuda.compiler import CompileError, compile_source

    try:
        compile_source(KernelSource(name="probe", code=code, arch=arch))
    except CompileError as exc:
        return False, exc.log
    return True, ""


def _all_instructions() -> set[tuple[str, str]]:
    return {(dtype, shape) for row in ROWS for dtype, shapes in row.mma.items() for shape in shapes}


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_mma_claims_match_nvrtc(arch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    row = caps_for_arch(arch)
    wrong = []
    for dtype, shape in sorted(_all_instructions()):
        listed = shape in row.mma.get(dtype, [])
        ok, log = _compiles(mma_probe(dtype, shape), arch)
        if ok != listed:
            wrong.append(f"{dtype} {shape}: listed={listed} compiles={ok} {log.strip()[:200]}")
    assert not wrong, f"{arch}: table and NVRTC disagree:\n" + "\n".join(wrong)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_feature_claims_match_nvrtc(arch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    row = caps_for_arch(arch)
    wrong = []
    for feature, body in FEATURE_PROBES.items():
        ok, log = _compiles(_kernel(body), arch)
        if ok != row.has(feature):
            wrong.append(f"{feature}: listed={row.has(feature)} compiles={ok} {log.strip()[:200]}")
    assert not wrong, f"{arch}: table and NVRTC disagree:\n" + "\n".join(wrong)
