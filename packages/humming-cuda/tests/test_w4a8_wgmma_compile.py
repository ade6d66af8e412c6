"""Every W4A8-wgmma configuration the heuristics return compiles for sm_90a without spills, and
its PTX really uses the Hopper paths (wgmma.mma_async fp8, cp.async.bulk.tensor, mbarrier
expect_tx) and the 4-bit expansion (prmt): a fallback to ordinary loads or MMAs would still compile
but not be this kernel.

Units: every format of w4a8_wgmma_cases x every candidate over the M buckets the family takes
(bias, bf16 out: the 32- and 64-token tiles of M <= 64 among them), plus fp16 / fp32 outputs
without bias on the first candidate (act8_wgmma_compile.py).
"""

from __future__ import annotations

import re

import pytest
from act8_wgmma_compile import PTX_NEEDS, SHAPE, act8_wgmma_units, check_act8_wgmma_units
from compile_units import Units
from sass_audit import disassemble
from w4a8_wgmma_cases import W4_WGMMA_FORMATS
from w8a8_cases import make_w4_spec

from humming_core.device import GemmProblem

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.w4a8_wgmma import FAMILY


@pytest.mark.compile
def test_generated_configs_compile_without_spills(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = act8_wgmma_units(FAMILY, make_w4_spec, W4_WGMMA_FORMATS)
    assert len(units) >= 2 * len(W4_WGMMA_FORMATS) + 2 * len(W4_WGMMA_FORMATS)
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "prmt.b32"))
    # the M = 32 and 64 buckets' narrow token tiles: wgmma N 32 (two CTAs per SM) and 64
    ptx = [p.read_text() for p in tmp_path.glob("*/kernel.ptx")]
    for n, ctas in ((32, 2), (64, 1)):
        narrow = [t for t in ptx if f"m64n{n}k32.f32.e4m3.e4m3" in t]
        assert narrow and all(f".maxntid 384, 1, 1\n.minnctapersm {ctas}" in t for t in narrow)
    # every other unit is a 128-token tile or, at the large-M buckets, a wider one: wgmma N 128,
    # 160 or 176 (the shared PTX_NEEDS accept any N)
    wide = [t for t in ptx if "m64n32k32" not in t and "m64n64k32" not in t]
    shapes = [[n for n in (128, 160, 176) if f"m64n{n}k32.f32.e4m3.e4m3" in t] for t in wide]
    assert wide and all(len(s) == 1 for s in shapes)
    assert {128, 176} <= {s[0] for s in shapes}


@pytest.mark.compile
def test_shared_memory_form_compiles_without_spills(monkeypatch, tmp_path):
    """The shared-memory form (weights_in_registers off) on every format, bias and fp16 / fp32
    outputs."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    caps = caps_for_arch("sm_90a")
    for fmt in W4_WGMMA_FORMATS:
        for bias, out in ((True, "bf16"), (False, "fp16"), (False, "fp32")):
            spec = make_w4_spec(*fmt, bias=bias, out=out)
            cfg = FAMILY.candidates(spec, GemmProblem(*SHAPE, m=256), caps)[0]
            shared = {"weights_in_registers": False, "staged_store": False}
            units.add(spec, cfg.model_copy(update=shared))
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "prmt.b32"))


@pytest.mark.compile
def test_issue_turns_compile_without_spills(monkeypatch, tmp_path):
    """issue_turns on the 128-, 64- and 32-token tiles of every format (the two consumers' code is
    instantiated once per turn order)."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    caps = caps_for_arch("sm_90a")
    for fmt in W4_WGMMA_FORMATS:
        spec = make_w4_spec(*fmt, bias=True, out="bf16")
        for m in (32, 64, 256):
            cfg = FAMILY.candidates(spec, GemmProblem(*SHAPE, m=m), caps)[0]
            units.add(spec, cfg.model_copy(update={"issue_turns": True}))
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "prmt.b32"))
    # the turns: arrivals on a named barrier over both consumer warpgroups (256 threads)
    ptx = [p.read_text() for p in tmp_path.glob("*/kernel.ptx")]
    assert all(re.search(r"bar\.arrive %r\d+, 256;", text) for text in ptx)


@pytest.mark.compile
def test_wide_token_tiles_compile_without_spills(monkeypatch, tmp_path):
    """160- and 176-token tiles (2 x 80 / 88 accumulators and as many totals next to two fragment
    sets under 232 registers) on every format, staged and not, with wgmma N 160 / 176."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    caps = caps_for_arch("sm_90a")
    for fmt in W4_WGMMA_FORMATS:
        for bias, out, staged in ((True, "bf16", True), (False, "fp32", False)):
            spec = make_w4_spec(*fmt, bias=bias, out=out)
            cfg = FAMILY.candidates(spec, GemmProblem(*SHAPE, m=4096), caps)[0]
            for tokens in (160, 176):
                wide = {"rs_block_m": tokens, "stages": 4, "staged_store": staged}
                units.add(spec, cfg.model_copy(update=wide))
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "prmt.b32"))
    ptx = [p.read_text() for p in tmp_path.glob("*/kernel.ptx")]
    for tokens in (160, 176):
        assert sum(f"m64n{tokens}k32.f32.e4m3.e4m3" in t for t in ptx) == 2 * len(W4_WGMMA_FORMATS)


@pytest.mark.compile
def test_register_form_holds_its_code_table_in_registers():
    """NibbleLut::hold: the out^T form's expansion reads the code table from registers it keeps,
    not from a move per lookup out of a uniform register (ptxas's choice for plain constants:
    about 48 such moves per K block, 96 of the 551 instructions of the unrolled main loop). A
    few moves stay outside the loop (setup, epilogue)."""
    caps = caps_for_arch("sm_90a")
    units = Units(FAMILY, "sm_90a")
    for fmt in W4_WGMMA_FORMATS:
        spec = make_w4_spec(*fmt, bias=True, out="bf16")
        for m in (32, 64, 4096):
            units.add(spec, FAMILY.candidates(spec, GemmProblem(*SHAPE, m=m), caps)[0])
    for spec, cfg, artifact in units.compile(workers=4):
        moves = re.findall(r"IMAD\.U32 R\d+, RZ, RZ, UR\d+", disassemble(artifact.binary))
        assert len(moves) <= 16, f"{spec.weight} {cfg}: {len(moves)} moves from uniform registers"


@pytest.mark.compile
def test_cluster_split_k_sums_over_distributed_shared_memory(monkeypatch, tmp_path):
    """cluster_split (reduce_wgmma_cluster) at the routed split plans of every format (32- and
    64-token tiles at M = 32 / 64, 128 at M = 128): clean, the PTX reads the peers' partials
    (mapa, ld.shared::cluster, the cluster barrier) and never the workspace or its counter."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    for i, fmt in enumerate(W4_WGMMA_FORMATS):
        spec = make_w4_spec(*fmt, bias=i % 2 == 0, out=("bf16", "fp16", "fp32")[i % 3])
        for m in (32, 64, 128):
            cfg = FAMILY.candidates(spec, GemmProblem(n=6144, k=4096, m=m), units.caps)[0]
            assert cfg.split_k > 1, (fmt, m)
            update = {"cluster_split": True, "staged_store": False}
            units.add(spec, type(cfg).model_validate({**cfg.model_dump(), **update}))
    cluster = ("mapa.shared::cluster", "ld.shared::cluster.f32", "barrier.cluster.wait")
    check_act8_wgmma_units(units, tmp_path, (*PTX_NEEDS, "prmt.b32", *cluster))
    for ptx in tmp_path.glob("*/kernel.ptx"):
        text = ptx.read_text()
        assert "atom.global.add" not in text and "ld.global.cg.f32" not in text
