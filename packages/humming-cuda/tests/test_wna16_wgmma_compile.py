"""Every WnA16-wgmma configuration the heuristics return (both forms) compiles for sm_90a without
spills, and its PTX really uses the Hopper paths (wgmma.mma_async on 16-bit operands,
cp.async.bulk.tensor, mbarrier expect_tx): a fallback to ordinary loads or MMAs would still compile
but not be this kernel.

Units: every integer format of the wna16 matrix (activation type alternating) x every candidate
over the M buckets >= 128 (group 128, bias, output = activation type), plus per-channel scales with
an fp32 output and no bias on the first candidate; the gated float formats (FLOAT_FORMATS) on the
first candidate. The group size is a launch argument, so one
group per unit covers them all.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from compile_units import Units, assert_fits_registers, dumped_ptx
from sass_audit import accumulator_reads_in_flight, disassemble, main_loop_opcodes
from wna16_cases import make_spec
from wna16_wgmma_cases import FLOAT_FORMATS, INTEGER_FORMATS

from humming_core.device import GemmProblem
from humming_core.ops.layer import M_BUCKETS
from humming_core.spec import presets

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from humming_cuda.kernels.wna16_wgmma import FAMILY, WgmmaWna16Config
from humming_cuda.kernels.wna16_wgmma.config import (
    RS_MAX_BLOCK_M_2CTAS,
    RS_MID_BLOCK_M,
    RS_WIDE_BLOCK_MS,
)
from humming_cuda.kernels.wna16_wgmma.heuristics import STAGE_CHOICES

N, K = 4096, 4096
PTX_NEEDS = (
    "wgmma.mma_async.sync.aligned.m64n",
    "cp.async.bulk.tensor.2d",
    "mbarrier.arrive.expect_tx",
    "wgmma.wait_group",
)
# the shared-memory form writes its dequantized tiles with generic stores that wgmma then reads
SMEM_FORM_PTX = "fence.proxy.async.shared::cta"


def _units() -> Units:
    units = Units(FAMILY, "sm_90a")
    for i, fmt in enumerate(INTEGER_FORMATS):
        act = ("fp16", "bf16")[i % 2]
        spec = make_spec(fmt, act, 128, K, True, None, fmt[2][0])
        for m in (b for b in M_BUCKETS if b >= 128):
            problem = GemmProblem(N, K, m=m, act_dtype=act)
            units.add_candidates(spec, problem)
            # the shared-memory form, which the cost model keeps for grids it fills in one wave
            group_m = FAMILY.candidates(spec, problem, units.caps)[0].group_m
            for stages in STAGE_CHOICES:
                units.add(spec, WgmmaWna16Config(arch="sm_90a", stages=stages, group_m=group_m))
        fp32 = make_spec(fmt, act, "channel", K, False, "fp32", fmt[2][0])
        units.add_first(fp32, GemmProblem(N, K, m=256, act_dtype=act))
    for i, fmt in enumerate(FLOAT_FORMATS):
        act = ("bf16", "fp16")[i % 2]
        units.add_first(
            make_spec(fmt, act, 128, K, True, None, fmt[2][0]),
            GemmProblem(N, K, m=1024, act_dtype=act),
        )
    return units


@pytest.mark.compile
def test_generated_configs_compile_without_spills(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _units()
    assert len(units) >= 2 * len(INTEGER_FORMATS)  # formats differing only in scale dtype share
    register_form = 0
    rows = []
    for spec, cfg, artifact in units.compile(workers=4):
        assert_fits_registers(artifact, cfg.threads, f"{spec.weight} {spec.act} {cfg}")
        register_form += cfg.weights_in_registers
        rows.append(str(cfg.block_m))
    assert 0 < register_form < len(units)
    texts = dumped_ptx(tmp_path, units, PTX_NEEDS)
    assert sum(SMEM_FORM_PTX in text for text in texts) == len(units) - register_form
    widths = []
    for text in texts:
        act = "bf16" if ".bf16.bf16" in text else "f16"
        # the token rows the cost model takes: 64, 128, or 160 / 176 (M = 1024 is wide enough)
        form = re.search(rf"m64n(176|160|128|64)k16\.f32\.{act}\.{act}", text)
        assert form
        widths.append(form.group(1))
    assert sorted(widths) == sorted(rows)


RS_PTX_NEEDS = (
    "cp.async.bulk.tensor.2d",  # x
    "cp.async.bulk.shared::cluster.global",  # codes and scale rows
    "mbarrier.arrive.expect_tx",
    "wgmma.wait_group.sync.aligned 1;",  # one K slice stays in flight
)


TWO_CTAS = {"rs_ctas_per_sm": 2, "stages": 4}  # a ring that fits two CTAs' shared memory


def register_a_widths(tmp_path, units: Units) -> set[str]:
    """The token widths (wgmma N) of the register-A wgmmas in every unit's PTX, which must also
    hold the register form's copies and waits (RS_PTX_NEEDS): the A operand a register vector, the
    B operand a descriptor."""
    widths = set()
    for text in dumped_ptx(tmp_path, units, RS_PTX_NEEDS):
        act = "bf16" if ".bf16.bf16" in text else "f16"
        form = re.search(rf"m64n(\d+)k16\.f32\.{act}\.{act} \{{[^}}]*\}}, \{{%r", text)
        assert form
        widths.add(form.group(1))
    return widths


def _register_a_units() -> Units:
    """The register-A form (weights_in_registers) of every integer and float format, both ring
    depths, with group scales, and per-channel scales with an fp32 output; the narrow small-M
    tiles (16 token rows for every format and both scale kinds, 32 and 64 for the first two
    formats) as the heuristic picks them, and those of 16 and 32 rows split for two CTAs per SM."""
    units = Units(FAMILY, "sm_90a")
    formats = INTEGER_FORMATS + FLOAT_FORMATS
    for i, fmt in enumerate(formats):
        act = ("fp16", "bf16")[i % 2]
        for group, bias, out in ((128, True, None), ("channel", False, "fp32")):
            spec = make_spec(fmt, act, group if fmt[3] is None else fmt[3], K, bias, out, fmt[2][0])
            problem = GemmProblem(N, K, m=1024, act_dtype=act)
            for cfg in FAMILY.candidates(spec, problem, units.caps):
                units.add(spec, cfg.model_copy(update={"weights_in_registers": True}))
                thread0 = {"rs_producer": False, "rs_frag_buffers": 2}
                units.add(spec, cfg.model_copy(update={"weights_in_registers": True, **thread0}))
            for m in (16, 32, 64) if i < 2 and group == 128 else (16,):
                problem = GemmProblem(N, K, m=m, act_dtype=act)
                units.add_first(spec, problem)
                if m <= RS_MAX_BLOCK_M_2CTAS:
                    first = FAMILY.candidates(spec, problem, units.caps)[0]
                    units.add(spec, WgmmaWna16Config(**{**first.model_dump(), **TWO_CTAS}))
    return units


def _assert_clean(units: Units) -> list:
    """Compile `units`: no spills, registers for their threads per CTA, no wgmma serialized, no
    accumulator read before its wgmma retired. Returns (spec, config, artifact) per unit."""
    compiled = units.compile(workers=4)
    for spec, cfg, artifact in compiled:
        where = f"{spec.weight} {spec.act} {cfg}"
        assert_fits_registers(artifact, cfg.threads * cfg.rs_ctas_per_sm, where)
        early = accumulator_reads_in_flight(disassemble(artifact.binary))
        assert not early, f"{where}: {early[:2]}"
    return compiled


@pytest.mark.compile
def test_register_a_form_compiles_without_spills_or_serialized_wgmma(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _register_a_units()
    assert len(units) >= 2 * len(INTEGER_FORMATS)
    narrow = two_ctas = 0
    for _, cfg, _ in _assert_clean(units):
        consumers = 2 if cfg.rs_block_n == 256 else 1  # 128-column tiles: one warpgroup
        assert cfg.threads == 128 * (consumers + cfg.rs_producer)
        narrow += cfg.rs_block_m < 128
        two_ctas += cfg.rs_ctas_per_sm == 2
    assert narrow >= len(INTEGER_FORMATS + FLOAT_FORMATS)
    assert two_ctas >= len(INTEGER_FORMATS + FLOAT_FORMATS)
    assert register_a_widths(tmp_path, units) == {"16", "32", "64", "128"}


def _format_units(common: dict, channel: list[dict], grouped: list[dict] = ()) -> Units:
    """Every integer and float format with group scales and bias in config `common`; on the first
    two formats also per-channel scales with an fp32 output in each of `channel`'s updates, and
    group scales in each of `grouped`'s."""
    units = Units(FAMILY, "sm_90a")
    for i, fmt in enumerate(INTEGER_FORMATS + FLOAT_FORMATS):
        act = ("fp16", "bf16")[i % 2]
        spec = make_spec(fmt, act, 128, K, True, None, fmt[2][0])
        units.add(spec, WgmmaWna16Config(**common))
        if i < 2:
            fp32 = make_spec(fmt, act, "channel", K, False, "fp32", fmt[2][0])
            for fields in channel:
                units.add(fp32, WgmmaWna16Config(**{**common, **fields}))
            for fields in grouped:
                units.add(spec, WgmmaWna16Config(**{**common, **fields}))
    return units


def _wide_units() -> Units:
    """The wide token tiles (160 / 176 rows, humming/mma/wgmma_wide.cuh): 176 rows on every
    format; 160 and 176 rows with per-channel scales, and with two fragment buffers in turn, on
    the first two."""
    wide = {"arch": "sm_90a", "weights_in_registers": True, "pdl": True, "group_m": 8}
    both = [{"rs_block_m": b} for b in RS_WIDE_BLOCK_MS]
    return _format_units(
        {**wide, "rs_block_m": 176}, both, [{**f, "rs_frag_buffers": 2} for f in both]
    )


@pytest.mark.compile
def test_wide_token_tiles_compile_without_spills_or_serialized_wgmma(monkeypatch, tmp_path):
    """2 x 88 accumulators per consumer thread still fit the 232 registers setmaxnreg gives them
    with every format's dequantizer: no spills, no wgmma serialized (192 rows are: C7512), no
    accumulator read before its wgmma retired; the PTX issues m64n160 / m64n176 with register A."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _wide_units()
    _assert_clean(units)
    assert register_a_widths(tmp_path, units) == {str(b) for b in RS_WIDE_BLOCK_MS}


@pytest.mark.compile
def test_mid_token_tile_compiles_without_spills_or_serialized_wgmma(monkeypatch, tmp_path):
    """The 96-row tile (m64n96k16, register A) on every format, and with per-channel scales on
    the first two: clean like the others, and the PTX issues m64n96 with register A."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    mid = {"arch": "sm_90a", "weights_in_registers": True, "pdl": True, "group_m": 1}
    units = _format_units({**mid, "rs_block_m": RS_MID_BLOCK_M}, [{"rs_block_m": RS_MID_BLOCK_M}])
    _assert_clean(units)
    assert register_a_widths(tmp_path, units) == {"96"}


def _narrow_n_units() -> Units:
    """The 128-column tile (rs_block_n = 128, one consumer warpgroup) at two CTAs per SM: 64 rows
    on every format; on the first two also 32 / 96 / 128 / 160 / 176 rows (the widest with the
    3-deep ring two CTAs fit) with per-channel scales, one CTA per SM at 128 rows, and stream-K at
    48 / 64 / 96 / 160 rows. (Stream-K's 128-row tile spills 4-12 bytes of its walk under ptxas
    13: it runs, benchmarks/notes/session35.md, but is not among these.)"""
    narrow = {"arch": "sm_90a", "weights_in_registers": True, "pdl": True, "group_m": 8}
    narrow |= {"rs_block_n": 128, "rs_ctas_per_sm": 2, "stages": 4}
    channel = [{"rs_block_m": b} for b in (32, 96, 128)]
    channel += [{"rs_block_m": b, "stages": 3} for b in (160, 176)]
    grouped = [{"rs_block_m": 128, "rs_ctas_per_sm": 1, "stages": 6}]
    stream = {"rs_stream_k": True, "stages": 3}
    grouped += [{**stream, "rs_block_m": b} for b in (48, 64, 96, 160)]
    return _format_units({**narrow, "rs_block_m": 64}, channel, grouped)


@pytest.mark.compile
def test_128_column_tile_compiles_without_spills_or_serialized_wgmma(monkeypatch, tmp_path):
    """One consumer warpgroup keeps the 232 registers at two CTAs per SM (its producer 24, its copy
    loop rolled up): every format clean at every token tile, two CTAs' registers per SM, and the
    PTX issues register-A wgmmas over the tile's tokens."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _narrow_n_units()
    for _, cfg, _ in _assert_clean(units):
        assert cfg.threads == 256 and cfg.block_n == 128
    assert register_a_widths(tmp_path, units) == {"32", "48", "64", "96", "128", "160", "176"}


def _stream_units() -> Units:
    """The stream-K form (wna16_wgmma_stream.cuh): 128 rows on every format; 64, 96, 128 and 160
    rows with per-channel scales on the first two."""
    stream = {"arch": "sm_90a", "weights_in_registers": True, "rs_stream_k": True, "pdl": True}
    return _format_units(
        {**stream, "group_m": 8}, [{"group_m": 1, "rs_block_m": b} for b in (64, 96, 128, 160)]
    )


@pytest.mark.compile
def test_stream_k_form_compiles_without_spills_or_serialized_wgmma(monkeypatch, tmp_path):
    """The persistent stream-K kernel keeps its walk in 32-bit registers (64-bit divisions are
    calls whose return addresses ptxas spills), sums partial tiles part by part (the whole tile's
    loads at once spilled), and still issues the register-A wgmmas without serialization."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = _stream_units()
    for spec, cfg, artifact in _assert_clean(units):
        assert artifact.meta["resources"]["stack_bytes"] == 0, f"{spec.weight} {cfg}"
    for text in dumped_ptx(tmp_path, units, (*RS_PTX_NEEDS, "atom.global.add")):
        assert re.search(r"m64n(64|96|128|160)k16\.f32\.(f16|bf16)", text)


@pytest.mark.compile
def test_rings_sized_for_4_bit_codes_compile_clean():
    """The stream-K forms at the ring depth only stages sized for 4-bit codes fit (rs_code_bits =
    4: 5 stages of the 256-column 128-row tile, 5 of the 128-column 64-row tile at two CTAs per
    SM): the rendered check that the kernel uses no more shared memory than the launch reserves
    compiles (a wrong reservation fails it), and the kernels are clean."""
    units = Units(FAMILY, "sm_90a")
    stream = {"arch": "sm_90a", "weights_in_registers": True, "rs_stream_k": True, "pdl": True}
    stream |= {"stages": 5, "rs_code_bits": 4}
    forms = [
        {"rs_block_m": 128},
        {"rs_block_m": 64, "rs_block_n": 128, "rs_ctas_per_sm": 2},
    ]
    for spec in (presets.W4A16_G128, presets.MXFP4):
        for form in forms:
            cfg = WgmmaWna16Config(**stream, **form)
            assert cfg.fits_smem(units.caps)
            assert not cfg.model_copy(update={"rs_code_bits": 8}).fits_smem(units.caps)
            units.add(spec, cfg)
    assert len(_assert_clean(units)) == 4


@pytest.mark.compile
def test_register_a_main_loops_keep_their_wgmma_descriptors_uniform():
    """No R2UR in the main loop of the routed register-A kernels: the wgmma descriptors stay in
    uniform registers. A branch ptxas takes as divergent around the loop (a barrier predicate or
    a threadIdx-derived value it cannot prove warp-uniform) puts them in vector registers, moved
    to uniform ones before every wgmma: the stream-K kernel had 16 R2UR per K step until its
    last-arrival test went through a warp vote (benchmarks/notes/session39.md)."""
    units = Units(FAMILY, "sm_90a")
    for spec, act in ((presets.W4A16_G128, "fp16"), (presets.MXFP4, "bf16")):
        for m in (64, 128, 1024):  # stream-K at 128 and 256 columns, one CTA per tile
            units.add_first(spec, GemmProblem(57344, 8192, m=m, act_dtype=act))
    compiled = units.compile(workers=4)
    assert {cfg.rs_stream_k for _, cfg, _ in compiled} == {True, False}
    for spec, cfg, artifact in compiled:
        loop = main_loop_opcodes(disassemble(artifact.binary))
        assert loop.count("HGMMA") >= 8, f"{spec.weight} {cfg}: no main loop found"
        assert "R2UR" not in loop, f"{spec.weight} {cfg}: {loop.count('R2UR')} R2UR in the loop"


@pytest.mark.compile
def test_cluster_split_k_sums_over_distributed_shared_memory_with_the_same_main_loop(
    monkeypatch, tmp_path
):
    """Cluster split-K (rs_cluster_split) against the workspace form at the routed split-K plans
    of the small layers (both tile widths, one and two CTAs per SM, narrow and 128-row token
    tiles): clean, its epilogue reads the peers' tiles (mapa, ld.shared::cluster,
    barrier.cluster) and holds the workspace's counters only for launches of several clusters
    per tile (rs_cluster_ctas, session 43), and its main loop keeps the workspace form's MMAs
    and length: only the reduction differs."""
    monkeypatch.setenv("HUMMING_DUMP_DIR", str(tmp_path))
    units = Units(FAMILY, "sm_90a")
    pairs = []
    for spec, act in (
        (presets.W4A16_G128, "fp16"),
        (presets.MXFP4, "bf16"),
        (presets.W8A16, "bf16"),
    ):
        for n, k, m in ((6144, 4096, 32), (6144, 4096, 128), (8192, 28672, 256)):
            cfg = FAMILY.candidates(spec, GemmProblem(n, k, m=m, act_dtype=act), units.caps)[0]
            assert cfg.split_k > 1, f"{spec.weight} {n}x{k} M={m}: no split-K plan routed"
            units.add(spec, cfg.model_copy(update={"rs_cluster_split": False}))
            units.add(spec, cfg.model_copy(update={"rs_cluster_split": True}))
            pairs.append(len(units) - 2)
    compiled = _assert_clean(units)
    loops = [main_loop_opcodes(disassemble(artifact.binary)) for _, _, artifact in compiled]
    for i in pairs:
        spec, cfg, _ = compiled[i + 1]
        assert cfg.rs_cluster_split and loops[i].count("HGMMA") >= 4
        # the same MMAs, no descriptor moves, and at most a register move or two more (ptxas
        # orders and allocates the loop a little differently around another epilogue)
        new, old = Counter(loops[i + 1]), Counter(loops[i])
        assert new["HGMMA"] == old["HGMMA"] and "R2UR" not in new, f"{spec.weight} {cfg}"
        assert len(loops[i + 1]) <= len(loops[i]) + 2, f"{spec.weight} {cfg}: {new - old}"
    for spec, cfg, artifact in compiled:
        (ptx,) = tmp_path.glob(f"{artifact.name}-*/kernel.ptx")
        text = ptx.read_text()
        cluster = ("mapa.shared::cluster", "ld.shared::cluster", "barrier.cluster.wait")
        if cfg.rs_cluster_split:
            # and the workspace's counters, for launches of several clusters per tile
            # (rs_cluster_ctas); a launch of one cluster per tile gets no workspace (the
            # prepared-call tests) and never reaches them
            assert all(s in text for s in cluster) and "atom.global.add" in text, spec.weight
        else:
            assert not any(s in text for s in cluster) and "atom.global.add" in text, spec.weight


@pytest.mark.compile
def test_48_row_tiles_compile_clean_on_m64n48_wgmmas():
    """The 48-row token tile (wgmma m64n48k16 with register A: MoE experts of ~32 rows, dense
    M = 33-48) for integer, float and 8-bit codes, unsplit and split: no spills, no serialized
    wgmma, and its main loop's MMAs are the n48 form."""
    units = Units(FAMILY, "sm_90a")
    for spec, act in (
        (presets.W4A16_G128, "fp16"),
        (presets.MXFP4, "bf16"),
        (presets.W8A16, "fp16"),
    ):
        base = FAMILY.candidates(spec, GemmProblem(4096, 14336, m=48, act_dtype=act), units.caps)[0]
        for split in (1, 2):
            plain = {"rs_split_scatter": False, "rs_cluster_split": False, "rs_cluster_ctas": 0}
            units.add(spec, base.with_fields(**plain, rs_block_m=48, split_k=split))
    for spec, cfg, artifact in _assert_clean(units):
        sass = disassemble(artifact.binary)
        assert main_loop_opcodes(sass).count("HGMMA") >= 8, f"{spec.weight} {cfg}"
        widths = set(re.findall(r"HGMMA\.64x(\d+)x16", sass))
        assert widths == {"48"}, f"{spec.weight} {cfg}: {widths}"
