"""Every W8A8-wgmma configuration the heuristics return compiles for sm_90a without spills, and
its PTX really uses the Hopper paths (wgmma.mma_async fp8, cp.async.bulk.tensor, mbarrier
expect_tx): a fallback to ordinary loads or MMAs would still compile but not be this kernel.

Units: every e4m3 format x every candidate over the M buckets the family takes (bias, bf16 out),
plus fp16 / fp32 outputs without bias on the first candidate (act8_wgmma_compile.py); and every
format's split-K config, whose split path (the cross-CTA reduction) must be in the same code.
"""

from __future__ import annotations

import pytest
from act8_wgmma_compile import PTX_NEEDS, act8_wgmma_units, check_act8_wgmma_units
from compile_units import Units
from w8a8_cases import make_spec
from w8a8_wgmma_cases import FP8_FORMATS

from humming_core.device import GemmProblem

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.w8a8_wgmma import FAMILY

# The split path in PTX: the partial's stores and loads past L1, the tile counter's atomic and the
# named barrier over the two consumer warpgroups (its id a register; __syncthreads is bar.sync 0).
SPLIT_PTX = ("st.global.cg.f32", "ld.global.cg.f32", "atom.global.add.u32", "bar.sync %r")


@pytest.mark.compile
def test_generated_configs_compile_without_spills(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = act8_wgmma_units(FAMILY, make_spec, FP8_FORMATS)
    assert len(units) >= 2 * len(FP8_FORMATS) + 2 * len(FP8_FORMATS)
    check_act8_wgmma_units(units, tmp_path, PTX_NEEDS)
    # 128-column tiles, or 192 where the largest M bucket's waves pick them
    ptx = [p.read_text() for p in tmp_path.glob("*/kernel.ptx")]
    assert all("m64n128k32" in t or "m64n192k32" in t for t in ptx)
    assert any("m64n192k32" in t for t in ptx)
    # the M <= 64 buckets' 64-row tile: one consumer warpgroup, two CTAs per SM (setmaxnreg)
    narrow = [t for t in ptx if ".maxntid 256, 1, 1\n.minnctapersm 2" in t]
    assert narrow and all("setmaxnreg.inc.sync.aligned.u32 216" in t for t in narrow)


@pytest.mark.compile
def test_split_k_configs_compile_with_the_reduction_without_spills(monkeypatch, tmp_path):
    """N=4096 at M=128 is 32 tiles: the heuristic splits K for every weight-scale kind. The split
    count is a launch parameter, so the split config renders the unsplit source; that one module
    holds the reduction and still fits the registers without spills."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    for i, fmt in enumerate(FP8_FORMATS):
        spec = make_spec(*fmt, bias=i % 2 == 0, out=("bf16", "fp16", "fp32")[i % 3])
        configs = FAMILY.candidates(spec, GemmProblem(n=4096, k=14336, m=128), units.caps)
        split = next(c for c in configs if not c.cluster_split)  # the workspace plan
        assert split.split_k > 1, split
        unsplit = split.model_copy(update={"split_k": 1})
        source = FAMILY.render(spec, split, units.caps).code
        assert source == FAMILY.render(spec, unsplit, units.caps).code
        units.add(spec, split)
    assert len(units) == len(FP8_FORMATS)
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "m64n128k32", *SPLIT_PTX))


@pytest.mark.compile
def test_192_column_tiles_compile_without_spills(monkeypatch, tmp_path):
    """The 192-column tile (m64n192k32, 96 accumulators and 96 totals per consumer thread under
    setmaxnreg 232) on every format without block weight scales, where the heuristics pick it
    (57344x8192 M=1024), with each output dtype: persistent with staged rows (bf16 / fp16) and one
    CTA per tile with register stores."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    problem = GemmProblem(n=57344, k=8192, m=1024)
    for fmt in (f for f in FP8_FORMATS if f[2] != "block"):
        for bias, out in ((True, "bf16"), (False, "fp16"), (False, "fp32")):
            spec = make_spec(*fmt, bias=bias, out=out)
            first = FAMILY.candidates(spec, problem, units.caps)[0]
            assert first.tile_cols == 192 and first.persistent, first
            assert first.staged_store == (out != "fp32")
            units.add(spec, first)
            units.add(spec, first.model_copy(update={"persistent": False, "staged_store": False}))
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "m64n192k32", "setmaxnreg.inc"))


@pytest.mark.compile
def test_cluster_split_k_sums_over_distributed_shared_memory(monkeypatch, tmp_path):
    """cluster_split (reduce_wgmma_cluster): the split plans of every format, both tile heights,
    and 128 / 192 columns compile without spills; the PTX reads the peers' partials (mapa,
    ld.shared::cluster, the cluster barrier) and never the workspace or its counter."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    for i, fmt in enumerate(FP8_FORMATS):
        spec = make_spec(*fmt, bias=i % 2 == 0, out=("bf16", "fp16", "fp32")[i % 3])
        split = FAMILY.candidates(spec, GemmProblem(n=4096, k=14336, m=128), units.caps)[0]
        assert split.cluster_split and not split.staged_store, split  # routed (split 3)
        units.add(spec, split)
        narrow = split.model_copy(update={"tile_rows": 64, "stages": 4, "split_k": 4})
        units.add(spec, narrow.model_copy(update={"cluster_split": True, "staged_store": False}))
    wide = make_spec(*next(f for f in FP8_FORMATS if f[2] != "block"), bias=True, out="bf16")
    first = FAMILY.candidates(wide, GemmProblem(n=57344, k=8192, m=1024), units.caps)[0]
    update = {"persistent": False, "staged_store": False, "split_k": 2, "cluster_split": True}
    units.add(wide, first.model_copy(update=update))
    cluster = ("mapa.shared::cluster", "ld.shared::cluster.f32", "barrier.cluster.wait")
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, *cluster))
    for ptx in tmp_path.glob("*/kernel.ptx"):
        text = ptx.read_text()
        assert "atom.global.add" not in text and "ld.global.cg.f32" not in text
