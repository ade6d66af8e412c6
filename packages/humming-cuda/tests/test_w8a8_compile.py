"""Every W8A8 / W4A8 configuration the heuristics generate compiles without spills on its target
arches, and every activation quantizer compiles: int8 activations on sm_80, int8 and fp8 on sm_89,
sm_90a, sm_120a.

Per arch: every format of w8a8_cases.FORMATS and W4_FORMATS x every candidate over the M buckets
(with bias, bf16 out), plus fp16 / fp32 outputs without bias on the decode tile.
"""

from __future__ import annotations

import pytest
from compile_units import Units
from w8a8_cases import all_specs

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_cuda.caps import caps_for_arch

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.compiler import compile_source
from humming_cuda.kernels.act_quant import ActQuantFormat, render_source
from humming_cuda.kernels.w8a8 import FAMILY

ARCHS = ("sm_80", "sm_89", "sm_90a", "sm_120a")
SHAPE = (4096, 4096)


def _runs_on(spec, arch: str) -> bool:
    return spec.act.dtype.name == "int8" or "e4m3" in caps_for_arch(arch).mma


def _units(arch: str) -> tuple[Units, int]:
    """(compile units, number of formats they cover)."""
    units = Units(FAMILY, arch)
    specs = all_specs(True, "bf16")
    plain = {out: all_specs(False, out) for out in ("fp16", "fp32")}
    formats = [i for i, s in enumerate(specs) if _runs_on(s, arch)]
    for i in formats:
        for m in M_BUCKETS:
            units.add_candidates(specs[i], GemmProblem(n=SHAPE[0], k=SHAPE[1], m=m))
        for out in ("fp16", "fp32"):
            units.add_first(plain[out][i], GemmProblem(n=SHAPE[0], k=SHAPE[1], m=1))
    return units, len(formats)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_generated_configs_compile(arch):
    units, formats = _units(arch)
    assert len(units) >= 3 * formats
    for spec, cfg, artifact in units.compile(workers=4):
        functions = artifact.meta["functions"]
        # the GEMM entry plus one quantizer entry per 16-bit input type
        assert len(functions) == 3, functions
        for name, res in functions.items():
            where = f"{arch} {name} {spec.weight.dtype.name}x{spec.act.dtype.name} {cfg}"
            assert res["spill_stores"] == 0, f"spills: {where} {res}"


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_act_quantizers_compile(arch, monkeypatch, tmp_path):
    """Every quantizer form compiles; from sm_90 each entry waits for the previous grid before it
    reads x (ActQuantizer launches it with PDL there), and older arches compile the wait out."""
    from humming_core.spec import ActSpec

    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))

    codes = ("int8", "e4m3") if arch != "sm_80" else ("int8",)
    for code in codes:
        for act in (
            ActSpec(dtype=code, quant="dynamic", granularity="token"),
            ActSpec(dtype=code, quant="static", granularity="tensor"),
            ActSpec(dtype=code, quant="dynamic", granularity="group", group_size=128),
        ):
            for wide in (False, True):  # wide: moe_wna16_a8's bf16 code values
                fmt = ActQuantFormat.from_spec(act, wide=wide)
                artifact = compile_source(render_source(fmt, arch))
                assert set(artifact.meta["functions"]) == {
                    artifact.meta["source"]["base"] + "_quant_fp16",
                    artifact.meta["source"]["base"] + "_quant_bf16",
                }
    ptx = [p.read_text() for p in tmp_path.glob("*/kernel.ptx")]
    assert ptx
    waits = {t.count("griddepcontrol.wait") for t in ptx}
    assert waits == ({2} if caps_for_arch(arch).has("pdl") else {0}), (arch, waits)
