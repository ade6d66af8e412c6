"""Every W8A8 configuration the heuristics generate compiles without spills on its target arches,
and every activation quantizer compiles: int8 on sm_80, int8 and fp8 on sm_89, sm_90a, sm_120a.

Per arch: every format of w8a8_cases.FORMATS x every candidate over the M buckets (with bias, bf16
out), plus fp16 / fp32 outputs without bias on the decode tile.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from w8a8_cases import FORMATS, make_spec

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_cuda.caps import caps_for_arch

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.compiler import compile_source
from humming_cuda.kernels.act_quant import ActQuantFormat, render_source
from humming_cuda.kernels.w8a8 import FAMILY

ARCHS = ("sm_80", "sm_89", "sm_90a", "sm_120a")
SHAPE = (4096, 4096)


def _formats(arch: str) -> list[tuple]:
    fp8 = "e4m3" in caps_for_arch(arch).mma
    return [f for f in FORMATS if f[0] == "int8" or fp8]


def _jobs(arch: str) -> list:
    caps = caps_for_arch(arch)
    jobs = {}
    for fmt in _formats(arch):
        spec = make_spec(*fmt, bias=True, out="bf16")
        for m in M_BUCKETS:
            for cfg in FAMILY.candidates(spec, GemmProblem(n=SHAPE[0], k=SHAPE[1], m=m), caps):
                jobs[FAMILY.render(spec, cfg, caps).code] = (spec, cfg)
        for out in ("fp16", "fp32"):
            spec = make_spec(*fmt, bias=False, out=out)
            cfg = FAMILY.candidates(spec, GemmProblem(n=SHAPE[0], k=SHAPE[1], m=1), caps)[0]
            jobs[FAMILY.render(spec, cfg, caps).code] = (spec, cfg)
    return [(spec, cfg, caps) for spec, cfg in jobs.values()]


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_generated_configs_compile(arch):
    jobs = _jobs(arch)
    assert len(jobs) >= 3 * len(_formats(arch))

    def build(job):
        spec, cfg, caps = job
        return job, compile_source(FAMILY.render(spec, cfg, caps))

    with ThreadPoolExecutor(max_workers=4) as pool:
        for (spec, cfg, _), artifact in pool.map(build, jobs):
            functions = artifact.meta["functions"]
            # the GEMM entry plus one quantizer entry per 16-bit input type
            assert len(functions) == 3, functions
            for name, res in functions.items():
                where = f"{arch} {name} {spec.weight.dtype.name} {cfg}"
                assert res["spill_stores"] == 0, f"spills: {where} {res}"


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_act_quantizers_compile(arch):
    from humming_core.spec import ActSpec

    codes = ("int8", "e4m3") if arch != "sm_80" else ("int8",)
    for code in codes:
        for act in (
            ActSpec(dtype=code, quant="dynamic", granularity="token"),
            ActSpec(dtype=code, quant="static", granularity="tensor"),
            ActSpec(dtype=code, quant="dynamic", granularity="group", group_size=128),
        ):
            artifact = compile_source(render_source(ActQuantFormat.from_spec(act), arch))
            assert set(artifact.meta["functions"]) == {
                artifact.meta["source"]["base"] + "_quant_fp16",
                artifact.meta["source"]["base"] + "_quant_bf16",
            }
