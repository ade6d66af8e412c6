"""CPU tests of the W4A8-wgmma family: which specs and problems it takes (and why not the rest),
its configs against the header, the rendered source, the packed-slab tensor map, and its place in
the registry (gated until its conformance test has run on an H200)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES
from humming_cuda.kernels.w4a8_wgmma import FAMILY, W4a8WgmmaConfig
from humming_cuda.kernels.w8a8.nibbles import nibble_table, table_words
from humming_cuda.kernels.w8a8_wgmma.tma import packed_map_params

SM90 = caps_for_arch("sm_90a")
LARGE = GemmProblem(n=4096, k=4096, m=1024)
HEADER = (
    Path(__file__).parents[1] / "src/humming_cuda/include/humming/kernel/w4a8_wgmma.cuh"
).read_text()


def test_w4a8_fp8_is_taken():
    assert FAMILY.supports(presets.W4A8_FP8, LARGE, SM90)
    assert FAMILY.supports(presets.W4A8_FP8, GemmProblem(n=4096, k=4096, m=17), SM90)


@pytest.mark.parametrize(
    ("spec", "problem", "words"),
    [
        (presets.MXFP4_A8, LARGE, "multiples of 128"),
        (presets.W4A8_INT8, LARGE, "e4m3 activations"),
        (presets.W8A8_FP8, LARGE, "e4m3 activations"),
        (presets.W4A8_FP8, GemmProblem(n=4096, k=4096, m=16), "M >= 17"),
        (presets.W4A8_FP8, GemmProblem(n=4096, k=4104, m=256), "multiple of 16"),
        (presets.W4A8_FP8.replace(epilogue={"glu": "silu_mul"}), LARGE, "dense GEMMs"),
    ],
)
def test_the_rest_is_refused_with_the_reason(spec, problem, words):
    support = FAMILY.supports(spec, problem, SM90)
    assert not support and words in support.reason
    assert FAMILY.candidates(spec, problem, SM90) == []


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_100a", "sm_120a"])
def test_other_arches_are_refused(arch):
    support = FAMILY.supports(presets.W4A8_FP8, LARGE, caps_for_arch(arch))
    assert not support and "sm_90a" in support.reason and "w8a8 family" in support.reason


def test_configs_mirror_the_header():
    configs = FAMILY.candidates(presets.W4A8_FP8, LARGE, SM90)
    assert [c.stages for c in configs] == [4, 6]
    assert all(c.smem_bytes <= SM90.smem_per_block for c in configs)
    assert "A_BYTES = BM * BK, P_BYTES = BN * BK / 2, STAGE_BYTES = A_BYTES + P_BYTES" in HEADER
    assert "X_BYTES = BN * BK, X_BUFFERS = REG_A ? 0 : 2" in HEADER
    assert "SCALE_BYTES = REG_A ? 4 * BN : 0;" in HEADER
    assert "1024 + STAGES * (STAGE_BYTES + SCALE_BYTES) +" in HEADER
    assert "CONSUMERS * X_BUFFERS * X_BYTES + STAGED_BYTES +" in HEADER
    assert "STAGED_BYTES = STAGED ? CONSUMERS * Rows::BYTES : 0;" in HEADER
    assert "using Rows = StagedRows<BM, 64>;" in HEADER
    assert W4a8WgmmaConfig(arch="sm_90a", stages=4, weights_in_registers=False).smem_bytes == (
        1024 + 4 * (16384 + 8192) + 2 * 2 * 16384 + 64 + 4
    )
    # the out^T form (the default) keeps no expanded tiles, and each stage's 128 row scales
    assert W4a8WgmmaConfig(arch="sm_90a", stages=4).smem_bytes == (
        1024 + 4 * (16384 + 8192 + 512) + 64 + 4
    )
    # staged output rows: each token's 64 weight rows of 2 bytes, 16 bytes longer, per warpgroup
    staged = W4a8WgmmaConfig(arch="sm_90a", stages=4, staged_store=True)
    assert staged.smem_bytes == 1024 + 4 * (16384 + 8192 + 512) + 2 * 128 * (128 + 16) + 64 + 4
    narrow = W4a8WgmmaConfig(
        arch="sm_90a", stages=6, rs_block_m=32, rs_ctas_per_sm=2, staged_store=True
    )
    assert narrow.staged_bytes == 2 * 32 * 144 and narrow.fits_smem(SM90)
    with pytest.raises(ValueError, match="staged_store needs the out\\^T form"):
        W4a8WgmmaConfig(arch="sm_90a", weights_in_registers=False, staged_store=True)
    assert "humming::WgmmaW4a8Tile<4, 8, true, 128, 1, true>" in (
        FAMILY.render(presets.W4A8_FP8, staged, SM90).code
    )
    # chosen for 2-byte outputs from M = 65 (the 128-token tiles), not below
    for m, rows in ((64, False), (65, True), (1024, True)):
        problem = GemmProblem(n=6144, k=4096, m=m)
        assert FAMILY.candidates(presets.W4A8_FP8, problem, SM90)[0].staged_store == rows


def test_issue_turns_render_and_need_the_register_form():
    """issue_turns is the tile's seventh argument (after STAGED, spelled out when only turns are
    asked); off, the text (and so every existing kernel's name) is unchanged."""
    base = W4a8WgmmaConfig(arch="sm_90a", stages=4)
    turns = base.model_copy(update={"issue_turns": True})
    assert "humming::WgmmaW4a8Tile<4, 8, true>" in FAMILY.render(presets.W4A8_FP8, base, SM90).code
    assert "humming::WgmmaW4a8Tile<4, 8, true, 128, 1, false, true>" in (
        FAMILY.render(presets.W4A8_FP8, turns, SM90).code
    )
    both = W4a8WgmmaConfig(
        arch="sm_90a",
        stages=6,
        rs_block_m=32,
        rs_ctas_per_sm=2,
        staged_store=True,
        issue_turns=True,
    )
    assert "humming::WgmmaW4a8Tile<6, 8, true, 32, 2, true, true>" in (
        FAMILY.render(presets.W4A8_FP8, both, SM90).code
    )
    assert turns.smem_bytes == base.smem_bytes  # named barriers only
    with pytest.raises(ValueError, match="issue_turns needs the out\\^T form"):
        W4a8WgmmaConfig(arch="sm_90a", weights_in_registers=False, issue_turns=True)
    # not chosen by the heuristics until measured
    for m in (32, 64, 1024):
        problem = GemmProblem(n=6144, k=4096, m=m)
        assert not FAMILY.candidates(presets.W4A8_FP8, problem, SM90)[0].issue_turns


def test_register_a_form_is_the_default_and_each_form_renders_its_tile():
    cfg = FAMILY.candidates(presets.W4A8_FP8, LARGE, SM90)[0]
    assert cfg.weights_in_registers
    source = FAMILY.render(presets.W4A8_FP8, cfg, SM90)
    assert f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}, true, 128, 1, true>" in source.code
    registers = cfg.model_copy(update={"staged_store": False})
    assert f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}, true>" in (
        FAMILY.render(presets.W4A8_FP8, registers, SM90).code
    )
    shared = registers.model_copy(update={"weights_in_registers": False})
    shared_source = FAMILY.render(presets.W4A8_FP8, shared, SM90)
    assert f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}>" in shared_source.code
    assert source.name != shared_source.name


def test_render_bakes_the_code_table_and_the_group():
    cfg = FAMILY.candidates(presets.W4A8_FP8, LARGE, SM90)[0]
    source = FAMILY.render(presets.W4A8_FP8, cfg, SM90)
    words = ", ".join(f"0x{w:08x}u" for w in table_words(nibble_table("int4", "e4m3", False)))
    assert f"humming::WgmmaW4a8Format<128, {words}>" in source.code
    assert f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}, true, 128, 1, true>" in source.code
    assert re.search(
        rf"HUMMING_W4A8_WGMMA_ENTRY\({source.name}, Fmt, Tile, nv_bfloat16, false\)", source.code
    )


def test_packed_slabs_map_as_unswizzled_64_byte_boxes():
    p = packed_map_params(rows=300, row_bytes=3 * 64, row_stride=3 * 64, what="qweight")
    assert p.global_dim == (192, 300) and p.box_dim == (64, 128) and not p.swizzle_128b
    with pytest.raises(ValueError, match="whole 64-byte slabs"):
        packed_map_params(rows=300, row_bytes=100, row_stride=112, what="qweight")


def test_before_w8a8_and_sharing_its_packed_weights(monkeypatch):
    names = [f.name for f in FAMILIES]
    assert names.index("w4a8_wgmma") < names.index("w8a8")
    assert FAMILY.hardware_verified is True
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)  # offered by default
    mine = device.candidates(presets.W4A8_FP8, LARGE)[0]
    decode = device.candidates(presets.W4A8_FP8, GemmProblem(n=4096, k=4096, m=8))[0]
    # decode sizes run the out^T decode kernel (session 24) on the same packed weights
    assert (mine.family, decode.family) == ("w4a8_wgmma", "w4a8_decode")
    # every M above decode size, small grids included (family_compare, session 23: 1.5x the
    # mma.sync kernels on 6144x4096 at M = 32)
    for n, k, m in ((6144, 4096, 17), (6144, 4096, 64), (8192, 28672, 32), (4096, 4096, 65)):
        routed = device.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m))[0]
        assert routed.family == "w4a8_wgmma", (n, k, m)
    layouts = [device.weight_layout(presets.W4A8_FP8, c) for c in (mine, decode)]
    assert layouts[0].identity == layouts[1].identity


def test_the_call_is_w8a8_wgmmas_with_the_packed_map_and_w4a8_shapes():
    """W4a8WgmmaKernel reuses W8a8WgmmaKernel's call; only the weight map and K dims differ."""
    from humming_cuda.kernels.w4a8_wgmma import W4a8WgmmaKernel
    from humming_cuda.kernels.w8a8.config import W8a8Format
    from humming_cuda.kernels.w8a8_wgmma import W8a8WgmmaKernel

    w4, w8 = object.__new__(W4a8WgmmaKernel), object.__new__(W8a8WgmmaKernel)
    w4.fmt, w8.fmt = (W8a8Format.from_spec(s) for s in (presets.W4A8_FP8, presets.FP8_BLOCK128))
    assert (W4a8WgmmaKernel.PACKED, W8a8WgmmaKernel.PACKED) == (True, False)
    assert w4.k_dims(1000) == {"KW": 8 * 16, "WG": 8}  # 8 slabs of 128 K, 8 groups of 128
    assert w8.k_dims(1000) == {"KB": 8}


@pytest.mark.parametrize(
    ("n", "k", "m", "tokens", "ctas", "split"),
    [
        (4096, 14336, 32, 32, 2, 8),  # 32 tiles for 264 CTA slots: 256 CTAs of 14 K blocks
        (4096, 14336, 64, 64, 1, 4),
        (4096, 14336, 256, 128, 1, 2),
        (8192, 28672, 128, 128, 1, 2),  # 64 tiles
        (6144, 4096, 20, 32, 2, 5),  # 48 tiles of 32 blocks
        (57344, 8192, 32, 32, 2, 1),  # 448 tiles: more than the CTA slots
        (57344, 8192, 64, 64, 1, 1),
        (4096, 14336, 1024, 128, 1, 1),
    ],
)
def test_token_tile_and_split_k_follow_m_and_the_grid(n, k, m, tokens, ctas, split):
    """The first config holds M in the fewest tokens (32 on two CTAs per SM, 64, 128) and splits K
    as w8a8_wgmma's pick_split_k does for its CTA slots; the 128-token tile's configs follow the
    narrow ones, and a split config's unsplit twin follows its group (the split is a launch
    parameter: both render one source)."""
    from humming_cuda.kernels.w8a8_wgmma.heuristics import pick_split_k

    problem = GemmProblem(n=n, k=k, m=m)
    configs = FAMILY.candidates(presets.W4A8_FP8, problem, SM90)
    first = configs[0]
    assert (first.rs_block_m, first.rs_ctas_per_sm, first.split_k) == (tokens, ctas, split)
    assert split == pick_split_k(problem, SM90, ctas)
    assert all(c.rs_block_m == 128 for c in configs[-2:])
    assert all(c.fits_smem(SM90) for c in configs)
    if split > 1:
        unsplit = first.model_copy(update={"split_k": 1})
        assert unsplit in configs[configs.index(first) + 1 :]
        assert (
            FAMILY.render(presets.W4A8_FP8, first, SM90).code
            == FAMILY.render(presets.W4A8_FP8, unsplit, SM90).code
        )


def test_narrow_token_tiles_render_their_tile_and_launch_bound():
    """The 128-token tile keeps its text (and its kernels their names); narrow tiles add their
    tokens and CTAs per SM, which the entry's launch bound and the register split take."""
    cfg = FAMILY.candidates(presets.W4A8_FP8, GemmProblem(n=4096, k=4096, m=32), SM90)[0]
    source = FAMILY.render(presets.W4A8_FP8, cfg, SM90)
    assert f"humming::WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}, true, 32, 2>" in source.code
    assert cfg.block_m == 32 and cfg.ctas_per_sm == 2 and cfg.threads == 384
    assert cfg.smem_bytes == 1024 + cfg.stages * (32 * 128 + 128 * 64 + 512) + 16 * cfg.stages + 4
    assert "__launch_bounds__(TILE::THREADS, TILE::CTAS)" in HEADER
    assert "CONSUMER_REGS = CTAS == 2 ? 96 : 232" in HEADER
    wide = cfg.model_copy(update={"rs_block_m": 128, "rs_ctas_per_sm": 1})
    assert (
        f"WgmmaW4a8Tile<{cfg.stages}, {cfg.group_m}, true>"
        in FAMILY.render(presets.W4A8_FP8, wide, SM90).code
    )


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"rs_block_m": 64, "weights_in_registers": False}, "out^T form"),
        ({"rs_block_m": 176, "weights_in_registers": False}, "out^T form"),
        ({"rs_block_m": 160, "rs_ctas_per_sm": 2}, "rs_block_m=32"),
        ({"rs_block_m": 192}, "rs_block_m"),
        ({"rs_block_m": 64, "rs_ctas_per_sm": 2}, "rs_block_m=32"),
        ({"rs_ctas_per_sm": 2}, "rs_block_m=32"),
    ],
)
def test_tiles_the_kernel_cannot_build_are_refused(fields, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        W4a8WgmmaConfig(arch="sm_90a", stages=4, **fields)


def test_the_activation_box_is_the_token_tile():
    """The kernel expects BM x 128 bytes of activations per stage: the box the map is encoded
    with, whatever M is."""
    from humming_cuda.kernels.w4a8_wgmma import W4a8WgmmaKernel

    kernel = object.__new__(W4a8WgmmaKernel)
    for tokens in (32, 64, 128, 160, 176):
        kernel.config = W4a8WgmmaConfig(arch="sm_90a", stages=4, rs_block_m=tokens)
        assert kernel.a_box_rows(20) == kernel.a_box_rows(1000) == tokens


def test_the_kernel_takes_the_split_k_arguments_in_the_signature_order():
    """The entry's trailing parameters are the signature's split-K arguments, in order (a
    mismatch would launch with the workspace pointer read as a count)."""
    from humming_cuda.kernels.w4a8_wgmma.bind import signature
    from humming_cuda.kernels.w8a8.config import W8a8Format

    names = signature(W8a8Format.from_spec(presets.W4A8_FP8), "k").names
    assert names[-5:] == ("ldc", "workspace", "counters", "iters_per_split", "resident")
    assert re.search(
        r"int ldc,\s*\\\s*float\* workspace, int\* counters, int iters_per_split, "
        r"int resident\)",
        HEADER,
    )


def test_wide_token_tiles_render_their_tile_and_fit_with_staged_rows():
    """160 / 176 tokens: the tile's text names them; their 4-stage ring with staged rows fits
    227 KB (the A tile and the staged rows grow with the tokens, the slab and scales do not), a
    6-stage one only at 160 tokens; the header takes them in the out^T form and copies staged
    rows past a warpgroup's 128 threads."""
    for tokens in (160, 176):
        cfg = W4a8WgmmaConfig(arch="sm_90a", stages=4, rs_block_m=tokens, staged_store=True)
        assert cfg.block_m == tokens and cfg.ctas_per_sm == 1
        stage = tokens * 128 + 128 * 64 + 512
        assert cfg.smem_bytes == 1024 + 4 * stage + 2 * tokens * 144 + 64 + 4
        assert cfg.fits_smem(SM90)
        assert cfg.model_copy(update={"stages": 6}).fits_smem(SM90) == (tokens == 160)
        code = FAMILY.render(presets.W4A8_FP8, cfg, SM90).code
        assert f"humming::WgmmaW4a8Tile<4, 8, true, {tokens}, 1, true>" in code
    assert "BM == 160 || BM == 176" in HEADER
    assert "release_staged_rows<BM>(" in HEADER


@pytest.mark.parametrize(
    ("n", "k", "m", "tokens"),
    [  # the sweep's fastest tile at each point (H200, session 32; heuristics.py quotes it)
        (8192, 28672, 4096, 176),
        (57344, 8192, 1024, 176),
        (8192, 28672, 1024, 176),
        (6144, 4096, 4096, 176),
        (4096, 14336, 4096, 176),
        (4096, 14336, 1024, 128),  # two waves of 128-token tiles: no fewer with wider ones
        (57344, 8192, 256, 128),  # below WIDE_MIN_M
    ],
)
def test_wide_token_tiles_lead_where_they_take_fewer_waves(n, k, m, tokens):
    """At large M an unsplit grid of 160 / 176-token tiles leads when its waves, times the tile's
    measured cost, undercut the 128-token grid's; the 128-token configs follow it unchanged."""
    configs = FAMILY.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)
    first = configs[0]
    assert first.rs_block_m == tokens and first.split_k == 1
    if tokens != 128:
        assert (first.stages, first.staged_store) == (4, True)
        assert first.fits_smem(SM90)
        assert first.model_copy(update={"rs_block_m": 128}) in configs[1:]
        assert all(c.rs_block_m == 128 for c in configs[1:])


def test_wide_token_tiles_count_waves_on_the_devices_sms():
    """Waves are counted on the device's SMs (132, the H200's, when the caps do not say): where a
    wave is 8 tiles, 4096x14336 M=1024 takes 32 / 28 / 24 waves of 128 / 160 / 176-token tiles,
    and the 176-token grid is cheapest (29.4 against 32 and 33.3); on 132 SMs, 2 waves each way."""
    from humming_cuda.kernels.w4a8_wgmma.heuristics import wide_token_tile

    problem = GemmProblem(n=4096, k=14336, m=1024)
    assert wide_token_tile(problem, SM90) == 128
    assert wide_token_tile(problem, SM90.model_copy(update={"sm_count": 8})) == 176


def test_cluster_split_configs_render_the_cluster_tile():
    """cluster_split: the out^T form's split plans (2-8 splits, register stores) whose ring holds
    the fp32 partial tile; the tile's last template argument says so and the header stores each
    CTA's share of the tokens (reduce_wgmma_cluster's range)."""
    base = {"arch": "sm_90a", "stages": 6, "split_k": 5, "rs_block_m": 32, "rs_ctas_per_sm": 2}
    cfg = W4a8WgmmaConfig(**base, cluster_split=True)
    code = FAMILY.render(presets.W4A8_FP8, cfg, SM90).code
    assert f"WgmmaW4a8Tile<6, {cfg.group_m}, true, 32, 2, false, false, true>" in code
    for bad in ({"split_k": 1}, {"split_k": 9}, {"staged_store": True}):
        with pytest.raises(ValueError, match="cluster_split needs"):
            W4a8WgmmaConfig(**{**base, **bad}, cluster_split=True)
    with pytest.raises(ValueError, match="too few"):
        W4a8WgmmaConfig(
            **{**base, "rs_block_m": 176, "rs_ctas_per_sm": 1, "stages": 2}, cluster_split=True
        )
    assert "store_t(a, total, m0, n0, wg - 1, tokens.x, tokens.y);" in HEADER


def test_split_scatter_configs_render_the_scatter_tile():
    """split_scatter: the out^T form's workspace split plans stored from registers; the tile's
    last template argument says so (after the cluster flag, off), each split storing the share of
    the tokens reduce_wgmma_scatter returns; refused by name in any other form."""
    base = {"arch": "sm_90a", "stages": 6, "split_k": 5, "rs_block_m": 32, "rs_ctas_per_sm": 2}
    cfg = W4a8WgmmaConfig(**base, split_scatter=True)
    code = FAMILY.render(presets.W4A8_FP8, cfg, SM90).code
    assert f"WgmmaW4a8Tile<6, {cfg.group_m}, true, 32, 2, false, false, false, true>" in code
    for bad in (
        {"split_k": 1},
        {"staged_store": True},
        {"cluster_split": True},
        {"weights_in_registers": False, "rs_block_m": 128, "rs_ctas_per_sm": 1},
    ):
        with pytest.raises(ValueError, match="split_scatter needs"):
            W4a8WgmmaConfig(**{**base, **bad}, split_scatter=True)
    assert "reduce_wgmma_scatter<ACC, Tile::CONSUMERS>(a.workspace, a.counters," in HEADER


# Session 45's same-run H100 sweep (notes/session45/h100/sweep_act8*.json): the routed plan's
# workspace form and its split_scatter form, us; (n, k, m, workspace, scatter). 4096x14336 M=128's
# workspace time is the routed plan's (staged rows), which scatter would give up.
SCATTER_SWEEP = [
    (8192, 28672, 17, 70.0, 63.9),
    (8192, 28672, 32, 71.2, 65.0),
    (8192, 28672, 48, 80.2, 71.2),
    (4096, 14336, 32, 25.8, 26.9),
    (4096, 14336, 64, 29.0, 28.9),
    (4096, 14336, 128, 35.0, 35.3),
    (6144, 4096, 32, 16.1, 16.8),
    (6144, 4096, 64, 17.2, 17.7),
]


@pytest.mark.parametrize(("n", "k", "m", "workspace_us", "scatter_us"), SCATTER_SWEEP)
def test_scatter_is_routed_where_it_measured_faster(n, k, m, workspace_us, scatter_us):
    """The route takes split_scatter first exactly where the sweep measured it more than 2%
    faster than the plan's workspace form, and then as that plan's form (same split and tile,
    register stores); elsewhere the plan stays as it was."""
    configs = FAMILY.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)
    first = configs[0]
    assert first.split_scatter == (scatter_us < 0.98 * workspace_us)
    if first.split_scatter:
        assert configs[1] == first.model_copy(update={"split_scatter": False})


def test_scatter_needs_long_splits_and_a_resident_grid():
    """Over the four layers and M = 17-512 scatter goes only to plans whose splits run at least
    SCATTER_MIN_SPLIT_BLOCKS K blocks from register stores, on grids the device holds at once
    (a CTA waiting for one that cannot start would never finish; the device's SMs, 132 when the
    caps do not say): on 64 SMs the same M=32 plan (256 CTAs at two per SM) keeps the workspace."""
    from humming_cuda.kernels.w4a8_wgmma.heuristics import (
        SCATTER_MIN_SPLIT_BLOCKS,
        scatter_where_measured,
    )

    routed = []
    for n, k in ((57344, 8192), (8192, 28672), (6144, 4096), (4096, 14336)):
        for m in (17, 24, 32, 48, 64, 96, 128, 192, 256, 512):
            cfg = FAMILY.candidates(presets.W4A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)[0]
            if not cfg.split_scatter:
                continue
            routed.append((n, k, m))
            assert not cfg.staged_store and not cfg.cluster_split
            assert -(-k // 128) // cfg.split_k >= SCATTER_MIN_SPLIT_BLOCKS
            grid = -(-n // 128) * -(-m // cfg.rs_block_m) * cfg.split_k
            assert grid <= cfg.rs_ctas_per_sm * 132
    assert routed == [(8192, 28672, m) for m in (17, 24, 32, 48, 64)]
    problem = GemmProblem(n=8192, k=28672, m=32)
    plans = FAMILY.candidates(presets.W4A8_FP8, problem, SM90)[1:]
    assert plans[0].split_k == 4 and not plans[0].split_scatter
    assert scatter_where_measured(plans, problem, SM90)[0].split_scatter
    half = SM90.model_copy(update={"sm_count": 64})
    assert scatter_where_measured(plans, problem, half) == plans
