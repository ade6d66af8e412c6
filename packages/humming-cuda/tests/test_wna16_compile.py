"""Every WnA16 configuration the heuristics generate compiles (no real spills) on every target arch.

Per arch: every tile config the candidates produce over the M buckets (W4A16), and every weight
format of the conformance matrix (both activation types where the arch has bf16) on the small-M
tile. The template arguments, not split-K (a launch parameter), decide the compiled code.
"""

from __future__ import annotations

import pytest
from compile_units import Units
from wna16_cases import FORMATS, make_spec

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.wna16 import FAMILY

ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a")
SHAPES = ((4096, 4096), (200, 520), (57344, 8192))
M_VALUES = (1, 16, 32, 64, 128, 1024)


def _units(arch: str) -> Units:
    units = Units(FAMILY, arch)
    acts = ("fp16",) if not units.caps.has("bf16") else ("fp16", "bf16")
    base = presets.W4A16_G128
    for n, k in SHAPES:
        for m in M_VALUES:
            units.add_candidates(base, GemmProblem(n=n, k=k, m=m))
    small = FAMILY.candidates(base, GemmProblem(n=4096, k=4096, m=1), units.caps)[0]
    for fmt in FORMATS:
        for act in acts:
            spec = make_spec(fmt, act, 64, 4096, bias=True, out=None, sdt=fmt[2][-1])
            if FAMILY.supports(spec, GemmProblem(n=4096, k=4096, m=1), units.caps):
                units.add(spec, small)
    return units


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_generated_configs_compile(arch):
    units = _units(arch)
    assert len(units) >= len(FORMATS)
    for spec, cfg, artifact in units.compile(workers=4):
        res = artifact.meta["resources"]
        where = f"{arch} {spec.weight.dtype.name}/{spec.act.dtype.name} {cfg}"
        # A few bytes of spill appear on some rare formats; anything larger is a regression.
        assert res["spill_stores"] <= 16, f"spills: {where} {res}"


def test_sm75_renders_no_bf16_kernel():
    caps = caps_for_arch("sm_75")
    support = FAMILY.supports(presets.MXFP4, GemmProblem(n=256, k=256, m=1), caps)
    assert not support and "bf16" in support.reason
