"""Every W4A4 configuration the heuristics return compiles without spills on its target arches:
int4 x int4 on sm_80, sm_86, sm_89 and NVFP4 / MXFP4 on sm_120a, sm_121a, and each generated unit
holds the 4-bit MMA it was written for. None of these arches is reachable as hardware here (the
H200 is sm_90a, which has neither MMA): this compile test is all the W4A4 GEMM is checked by.

Per arch: every format below x every candidate over the M buckets (bf16 out with bias), plus fp16
and fp32 outputs on the decode tile; and every 4-bit activation quantizer the arch can run.
"""

from __future__ import annotations

import pytest
from compile_units import Units

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_core.spec import ActSpec, ScaleSpec, WeightSpec, presets

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.compiler import compile_source
from humming_cuda.kernels.act_quant.act4 import Act4Format, render_source
from humming_cuda.kernels.w4a4 import FAMILY

SHAPE = (4096, 4096)
MMA = {"int4": "m16n8k64.row.col.s32.s4.s4.s32", "nvfp4": "kind::mxf4nvf4", "mxfp4": "kind::mxf4."}


def _int4(act_group: int | None, w_group: int | None):
    act = ActSpec(
        dtype="int4", quant="dynamic", granularity="group" if act_group else "token",
        group_size=act_group,
    )  # fmt: skip
    scale = (
        ScaleSpec(granularity="group", group_size=w_group, dtype="fp16")
        if w_group
        else ScaleSpec(granularity="channel", dtype="fp32")
    )
    return presets.W4A4_INT4.replace(act=act, weight=WeightSpec(dtype="int4", scale=scale))


FORMATS = {
    "int4": [_int4(None, 128), _int4(64, None), _int4(128, 64), _int4(256, 512)],
    "fp4": [presets.W4A4_NVFP4, presets.W4A4_MXFP4],
}
ARCHS = {"sm_80": "int4", "sm_86": "int4", "sm_89": "int4", "sm_120a": "fp4", "sm_121a": "fp4"}


def _with_epilogue(spec, bias: bool, out: str):
    return spec.replace(epilogue={"bias": bias, "out_dtype": out})


def _units(arch: str) -> Units:
    units = Units(FAMILY, arch)
    for base in FORMATS[ARCHS[arch]]:
        spec = _with_epilogue(base, True, "bf16")
        for m in M_BUCKETS:
            units.add_candidates(spec, GemmProblem(n=SHAPE[0], k=SHAPE[1], m=m))
        for out in ("fp16", "fp32"):
            spec = _with_epilogue(base, False, out)
            units.add_first(spec, GemmProblem(n=SHAPE[0], k=SHAPE[1], m=1))
    return units


@pytest.mark.compile
@pytest.mark.parametrize("arch", list(ARCHS))
def test_generated_configs_compile(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _units(arch)
    assert len(units) >= 3 * len(FORMATS[ARCHS[arch]])
    for spec, cfg, artifact in units.compile(workers=4):
        functions = artifact.meta["functions"]
        quantizers = 4 if spec.act.scale_dtype.name == "ue4m3" else 2  # + NVFP4 amax pass
        assert len(functions) == 1 + quantizers, functions
        for name, res in functions.items():
            where = f"{arch} {name} {spec.act.dtype.name} {cfg}"
            assert res["spill_stores"] == 0, f"spills: {where} {res}"
    # the intended MMA is in every unit (not the __trap fallback of another arch)
    ptx = [p.read_text() for p in tmp_path.glob("*/kernel.ptx")]
    assert len(ptx) == len(units)
    wanted = {"int4": MMA["int4"]} if ARCHS[arch] == "int4" else {}
    for text in ptx:
        kind = wanted.get("int4") or (MMA["nvfp4"] if "ue4m3" in text else MMA["mxfp4"])
        assert kind in text and "trap;" not in text


ACTS = {
    "int4_token": ActSpec(dtype="int4", quant="dynamic", granularity="token"),
    "int4_static": ActSpec(dtype="int4", quant="static", granularity="tensor"),
    "int4_group": ActSpec(dtype="int4", quant="dynamic", granularity="group", group_size=64),
    "nvfp4": presets.W4A4_NVFP4.act,
    "mxfp4": presets.W4A4_MXFP4.act,
}


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a", "sm_120a"])
def test_act4_quantizers_compile(arch):
    # NVFP4 rounds its ue4m3 scales with the fp8 conversion of sm_89+
    modes = [m for m in ACTS if arch != "sm_80" or m != "nvfp4"]
    for mode in modes:
        fmt = Act4Format.from_spec(ACTS[mode])
        artifact = compile_source(render_source(fmt, arch))
        base = artifact.meta["source"]["base"]
        expected = {q for pair in fmt.entry_names(base).values() for q in pair if q}
        assert set(artifact.meta["functions"]) == expected
        assert all(r["spill_stores"] == 0 for r in artifact.meta["functions"].values())
