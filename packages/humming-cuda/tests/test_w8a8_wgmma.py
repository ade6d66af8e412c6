"""CPU tests of the W8A8-wgmma family: which specs it takes and refuses (with reasons), its configs'
shared-memory budget, the rendered source, the shared w8a8 weight layout, the TMA tensor-map
parameters. The arch / problem refusals and the registry order shared with wna16_wgmma are tested
in test_wgmma_tile.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from w8a8_cases import make_spec
from w8a8_wgmma_cases import FP8_FORMATS

from humming_core.device import GemmProblem
from humming_core.spec import ActSpec, QuantSpec, ScaleSpec, WeightSpec, presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels.w8a8 import FAMILY as W8A8
from humming_cuda.kernels.w8a8_wgmma import FAMILY, W8a8WgmmaConfig
from humming_cuda.kernels.w8a8_wgmma.tma import TileMapParams, tile_map_params

SM90 = caps_for_arch("sm_90a")
LARGE = GemmProblem(n=4096, k=4096, m=1024)
KERNEL_DIR = Path(__file__).parents[1] / "src/humming_cuda/include/humming/kernel"
HEADER = (KERNEL_DIR / "w8a8_wgmma.cuh").read_text()
CTA_HEADER = (KERNEL_DIR / "wgmma_cta.cuh").read_text()


@pytest.mark.parametrize("name", ["W8A8_FP8", "FP8_BLOCK128"])
def test_presets_are_supported_at_large_m_on_sm90a(name):
    support = FAMILY.supports(presets.preset(name), LARGE, SM90)
    assert support, support.reason
    assert FAMILY.candidates(presets.preset(name), LARGE, SM90)


@pytest.mark.parametrize("fmt", FP8_FORMATS)
def test_fp8_scale_combinations_are_supported(fmt):
    assert FAMILY.supports(make_spec(*fmt, bias=True, out="bf16"), LARGE, SM90)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (presets.W8A8_INT8, "e4m3 weights by e4m3 activations"),
        (presets.W4A8_FP8, "e4m3 weights by e4m3 activations"),
        (presets.FP8_CHANNEL, "e4m3 weights by e4m3 activations"),  # 16-bit activations
        (
            QuantSpec(
                weight=WeightSpec(
                    dtype="e4m3", scale=ScaleSpec(granularity="block", block=(64, 64))
                ),
                act=ActSpec(dtype="e4m3", quant="dynamic", granularity="group", group_size=128),
            ),
            "only 128x128 blocks",
        ),
        (
            QuantSpec(
                weight=WeightSpec(
                    dtype="e4m3", scale=ScaleSpec(granularity="group", group_size=128)
                ),
                act=ActSpec(dtype="e4m3", quant="dynamic", granularity="token"),
            ),
            "granularity 'group'",
        ),
    ],
)
def test_other_specs_are_refused_with_the_reason(spec, words):
    support = FAMILY.supports(spec, LARGE, SM90)
    assert not support and words in support.reason


def test_configs_mirror_the_header():
    configs = FAMILY.candidates(presets.FP8_BLOCK128, LARGE, SM90)
    # persistent first (unsplit), then one CTA per tile, each at both ring depths; the bf16
    # output leaves through staged rows where they fit (4 stages, not 6)
    assert [(c.persistent, c.stages, c.staged_store) for c in configs] == [
        (1, 4, 1),
        (1, 6, 0),
        (0, 4, 1),
        (0, 6, 0),
    ]
    assert (
        "template <int STAGES_, int GROUP_M_, int CONSUMERS_ = 2, bool PERSISTENT_ = false,\n"
        "          bool STAGED_ = false, int BN_ = 128, bool CLUSTER_ = false, bool SCATTER_ = false>"
        in HEADER
    )
    # the kernel's tile constants that the Python side computes with
    assert "BM = 64 * CONSUMERS, BN = BN_, BK = 128" in HEADER
    assert "CTAS = CONSUMERS == 1 ? 2 : 1" in HEADER
    assert "THREADS = 128 * (1 + CONSUMERS)" in HEADER
    assert "FACTOR_BYTES = 4 * BM;" in HEADER
    assert "STAGED_BYTES = STAGED ? CONSUMERS * StagedRows<64, BN>::BYTES : 0;" in HEADER
    assert (
        "1024 + STAGES * (STAGE_BYTES + FACTOR_BYTES) + STAGED_BYTES + 16 * STAGES + 4;" in HEADER
    )
    assert "ROW_BYTES = 2 * COLS + 16, BYTES = ROWS * ROW_BYTES;" in CTA_HEADER
    # per stage: the A and W tiles, then the tile rows' block factors (4 bytes each)
    wide = W8a8WgmmaConfig(arch="sm_90a", stages=6)
    assert wide.smem_bytes == 1024 + 6 * (32768 + 512) + 96 + 4
    narrow = W8a8WgmmaConfig(arch="sm_90a", stages=4, tile_rows=64)
    assert narrow.smem_bytes == 1024 + 4 * ((64 + 128) * 128 + 256) + 64 + 4
    assert (narrow.block_m, narrow.threads, narrow.ctas_per_sm) == (64, 256, 2)
    assert narrow.fits_smem(SM90)  # two CTAs' rings in one SM
    assert not W8a8WgmmaConfig(arch="sm_90a", stages=5, tile_rows=64).fits_smem(SM90)
    # staged output rows: 64 rows of 128 2-byte values, 16 bytes longer, per consumer warpgroup
    rows = W8a8WgmmaConfig(arch="sm_90a", stages=4, staged_store=True)
    assert rows.smem_bytes == 1024 + 4 * (32768 + 512) + 2 * 64 * (256 + 16) + 64 + 4
    assert rows.fits_smem(SM90)
    assert not rows.model_copy(update={"stages": 6}).fits_smem(SM90)


def test_staged_rows_are_rendered_for_2_byte_outputs_of_128_row_tiles():
    with pytest.raises(ValueError, match="staged_store needs the 128-row tile"):
        W8a8WgmmaConfig(arch="sm_90a", stages=4, staged_store=True, tile_rows=64)
    first = FAMILY.candidates(presets.W8A8_FP8, LARGE, SM90)[0]
    assert first.staged_store
    assert "humming::WgmmaFp8Tile<4, 8, 2, true, true>" in (
        FAMILY.render(presets.W8A8_FP8, first, SM90).code
    )
    split = first.model_copy(update={"persistent": False})
    assert "humming::WgmmaFp8Tile<4, 8, 2, false, true>" in (
        FAMILY.render(presets.W8A8_FP8, split, SM90).code
    )
    fp32 = presets.W8A8_FP8.model_copy(
        update={"epilogue": presets.W8A8_FP8.epilogue.model_copy(update={"out_dtype": "fp32"})}
    )
    assert not any(c.staged_store for c in FAMILY.candidates(fp32, LARGE, SM90))
    # M <= 64 (split grids, measured slower with them) keeps register stores, as do the cluster
    # forms routed before the workspace plan from M = 65
    for m in (64, 65):
        problem = GemmProblem(n=4096, k=14336, m=m)
        configs = FAMILY.candidates(presets.W8A8_FP8, problem, SM90)
        workspace = [c for c in configs if not c.cluster_split]
        assert workspace[0].staged_store == (m > 64)


@pytest.mark.parametrize("name", ["W8A8_FP8", "FP8_BLOCK128"])
def test_small_m_takes_the_64_row_tile_where_the_grid_fills_the_sms(name):
    """M <= 64 on 448 tiles: one consumer warpgroup per 64-row tile, two CTAs per SM, unsplit;
    on 48 tiles the split 128-row tile stays first (the 64-row tile measured no better there)."""
    spec = presets.preset(name)
    for m in (17, 64):
        configs = FAMILY.candidates(spec, GemmProblem(n=57344, k=8192, m=m), SM90)
        first = configs[0]
        assert (first.tile_rows, first.ctas_per_sm, first.stages, first.split_k) == (64, 2, 4, 1)
        assert "humming::WgmmaFp8Tile<4, 8, 1>" in FAMILY.render(spec, first, SM90).code
        small = FAMILY.candidates(spec, GemmProblem(n=6144, k=4096, m=m), SM90)
        assert (small[0].tile_rows, small[0].split_k) == (128, 2)
        assert [c.tile_rows for c in small][-2:] == [64, 64]
    wide = FAMILY.candidates(spec, GemmProblem(n=57344, k=8192, m=65), SM90)
    assert {c.tile_rows for c in wide} == {128}


def test_persistent_configs_are_unsplit_128_row_tiles():
    with pytest.raises(ValueError, match="split_k=2 needs persistent=False"):
        W8a8WgmmaConfig(arch="sm_90a", stages=4, persistent=True, split_k=2)
    with pytest.raises(ValueError, match="128-row tile"):
        W8a8WgmmaConfig(arch="sm_90a", stages=4, persistent=True, tile_rows=64)


def test_cluster_split_configs_render_the_cluster_tile_and_launch_without_a_workspace():
    """cluster_split: 2-8 splits of a one-CTA-per-tile, register-stored config whose ring holds
    the fp32 partial tile; the render's tile says so, and the bound kernel asks for no split-K
    buffers and launches its grid's z as the cluster (the header traps on any other)."""
    from humming_cuda.kernels.w8a8_wgmma.bind import W8a8WgmmaKernel

    base = {"arch": "sm_90a", "stages": 4, "split_k": 4, "cluster_split": True}
    cfg = W8a8WgmmaConfig(**base)
    code = FAMILY.render(presets.W8A8_FP8, cfg, SM90).code
    assert f"humming::WgmmaFp8Tile<4, {cfg.group_m}, 2, false, false, 128, true>" in code
    narrow = W8a8WgmmaConfig(**{**base, "tile_rows": 64})
    assert "WgmmaFp8Tile<4, 1, 1, false, false, 128, true>" in (
        FAMILY.render(presets.W8A8_FP8, narrow.model_copy(update={"group_m": 1}), SM90).code
    )
    for bad in ({"split_k": 1}, {"split_k": 9}, {"staged_store": True}):
        with pytest.raises(ValueError, match="cluster_split needs"):
            W8a8WgmmaConfig(**{**base, **bad})
    with pytest.raises(ValueError, match="needs persistent=False"):
        W8a8WgmmaConfig(**{**base, "persistent": True})
    with pytest.raises(ValueError, match="too few"):
        W8a8WgmmaConfig(**{**base, "stages": 2, "tile_cols": 192})
    kernel = W8a8WgmmaKernel.__new__(W8a8WgmmaKernel)
    kernel.config = cfg
    splits, buffers, dims = kernel.split_k(4096, 32, None)
    assert (splits, buffers, dims) == (4, {}, {"IPS": 8})
    header = (KERNEL_DIR / "wgmma_cta.cuh").read_text()
    assert "if (splits != gridDim.z) __trap();" in header


def test_split_scatter_configs_render_the_scatter_tile_and_pass_the_resident_ctas(monkeypatch):
    """split_scatter: a one-CTA-per-tile workspace split stored from registers; the tile's last
    template argument says so, and the bound kernel passes the CTAs the device holds at once
    (which the kernel compares with its grid) only for it and only with HUMMING_SPLIT_SCATTER on:
    W8A8's and W4A8's binds alike. Any other form is refused by name."""
    from fake_launch import FakeFunction  # 132 resident CTAs

    from humming_cuda.kernels.w4a8_wgmma import W4a8WgmmaConfig, W4a8WgmmaKernel
    from humming_cuda.kernels.w8a8_wgmma import bind
    from humming_cuda.kernels.w8a8_wgmma.bind import W8a8WgmmaKernel

    base = {"arch": "sm_90a", "stages": 4, "split_k": 4}
    cfg = W8a8WgmmaConfig(**base, split_scatter=True)
    code = FAMILY.render(presets.W8A8_FP8, cfg, SM90).code
    assert f"WgmmaFp8Tile<4, {cfg.group_m}, 2, false, false, 128, false, true>" in code
    for bad in ({"split_k": 1}, {"staged_store": True}, {"cluster_split": True}):
        with pytest.raises(ValueError, match="split_scatter needs"):
            W8a8WgmmaConfig(**{**base, **bad}, split_scatter=True)
    with pytest.raises(ValueError, match="needs persistent=False"):
        W8a8WgmmaConfig(**{**base, "persistent": True}, split_scatter=True)

    w4 = W4a8WgmmaConfig(**base, split_scatter=True)
    # the activation quantizer's entries load from the module: none on the fake
    monkeypatch.setattr(bind.ActQuantizer, "from_module", staticmethod(lambda *a: None))
    for kind, scattered in ((W8a8WgmmaKernel, cfg), (W4a8WgmmaKernel, w4)):
        spec = presets.W8A8_FP8 if kind is W8a8WgmmaKernel else presets.W4A8_FP8
        for env, config, expected in (
            ("1", scattered, 132),
            ("1", scattered.model_copy(update={"split_scatter": False}), 0),
            ("0", scattered, 0),
        ):
            monkeypatch.setenv("HUMMING_SPLIT_SCATTER", env)
            assert kind(FakeFunction(), spec, config).scatter_ctas == expected, (kind, env)
    assert "static_cast<u32>(a.resident) >= gridDim.x * gridDim.y * gridDim.z" in HEADER


def test_persistent_launch_walks_the_tiles_on_the_resident_ctas():
    """The grid of a persistent config: the resident CTAs, at most one per tile (the header's
    loop over blockIdx.x, + gridDim.x, ...)."""
    from humming_cuda.kernels.w8a8_wgmma.bind import W8a8WgmmaKernel

    kernel = W8a8WgmmaKernel.__new__(W8a8WgmmaKernel)
    kernel.resident = 132
    assert kernel.grid(48, 32, 1) == (132, 1, 1)
    assert kernel.grid(3, 9, 1) == (27, 1, 1)
    kernel.resident = 0  # one CTA per tile (and split)
    assert kernel.grid(48, 32, 2) == (48, 32, 2)
    assert "for (int id = first, q0 = 0; id < tiles_n * tiles_m; id += step, q0 += iters)" in (
        HEADER
    )


def test_render_instantiates_one_entry_with_the_spec_arguments():
    spec = presets.FP8_BLOCK128
    cfg = FAMILY.candidates(spec, LARGE, SM90)[0]
    source = FAMILY.render(spec, cfg, SM90)
    assert source.arch == "sm_90a"
    assert '#include "humming/kernel/w8a8_wgmma.cuh"' in source.code
    assert "humming::WgmmaFp8Format<2, true>" in source.code  # block weights, grouped acts
    assert f"humming::WgmmaFp8Tile<{cfg.stages}, {cfg.group_m}, 2, true, true>" in source.code
    registers = cfg.model_copy(update={"staged_store": False})
    assert f"humming::WgmmaFp8Tile<{cfg.stages}, {cfg.group_m}, 2, true>" in (
        FAMILY.render(spec, registers, SM90).code
    )
    one_per_tile = registers.model_copy(update={"persistent": False})
    assert f"humming::WgmmaFp8Tile<{cfg.stages}, {cfg.group_m}>" in (
        FAMILY.render(spec, one_per_tile, SM90).code
    )
    assert re.search(
        rf"HUMMING_W8A8_WGMMA_ENTRY\({source.name}, Fmt, Tile, \w+, false\)", source.code
    )
    channel = FAMILY.render(presets.W8A8_FP8, cfg, SM90)
    assert "humming::WgmmaFp8Format<1, false>" in channel.code
    assert channel.name != source.name


def test_weights_share_the_w8a8_layout():
    spec = presets.W8A8_FP8
    cfg = FAMILY.candidates(spec, LARGE, SM90)[0]
    small = W8A8.candidates(spec, GemmProblem(n=4096, k=4096, m=16), SM90)[0]
    ours = FAMILY.weight_layout(spec, cfg, SM90)
    assert ours.identity == W8A8.weight_layout(spec, small, SM90).identity


def test_tile_map_params_describe_k_major_128_boxes():
    p = tile_map_params(rows=300, k=1040, row_stride=1040, what="a")
    assert p == TileMapParams(global_dim=(1040, 300), global_strides=(1040,), box_dim=(128, 128))
    assert p.box_bytes == 128 * 128  # the expect_tx count of one operand per stage
    wide = tile_map_params(rows=8, k=64, row_stride=4096, what="a")
    assert wide.global_strides == (4096,)
    half = tile_map_params(rows=40, k=1040, row_stride=1040, what="a", box_rows=64)
    assert half.box_dim == (128, 64) and half.box_bytes == 64 * 128


@pytest.mark.parametrize(
    ("rows", "k", "stride", "words"),
    [(4, 40, 40, "multiple of 16"), (4, 64, 48, "at least K"), (0, 64, 64, "positive")],
)
def test_tile_map_params_refuse_what_tma_cannot_load(rows, k, stride, words):
    with pytest.raises(ValueError, match=words):
        tile_map_params(rows=rows, k=k, row_stride=stride, what="qweight")


def test_block_scales_are_routed_here():
    """The rest of the routing is in test_wgmma_tile.py."""
    device = CudaDevice.for_arch("sm_90a")
    assert device.candidates(presets.FP8_BLOCK128, LARGE)[0].family == "w8a8_wgmma"


def test_encode_arguments_are_accepted_by_the_driver_binding():
    """The binding rejects plain ints in the size arrays with a TypeError before it ever reaches
    the driver; without a driver library the call then fails for that reason instead."""
    driver = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")
    from humming_cuda.kernels.w8a8_wgmma.tma import encode_arguments

    args = encode_arguments(0x7F0000000000, tile_map_params(300, 1040, 1040, "a"))
    assert [int(v) for v in args[3]] == [1040, 300] and [int(v) for v in args[5]] == [128, 128]
    assert args[8] == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    try:
        driver.cuTensorMapEncodeTiled(*args)
    except (TypeError, ValueError) as e:  # an argument the binding cannot convert
        pytest.fail(f"cuTensorMapEncodeTiled rejected the arguments: {e}")
    except Exception:  # no driver library here: the arguments were converted, then it failed
        pass
    with pytest.raises(ValueError, match="16-byte aligned"):
        encode_arguments(0x7F0000000008, tile_map_params(300, 1040, 1040, "a"))


def test_tensor_maps_travel_as_128_byte_launch_parameters():
    import ctypes

    from humming_cuda.kernels.w8a8.config import W8a8Format
    from humming_cuda.kernels.w8a8_wgmma.bind import signature
    from humming_cuda.kernels.w8a8_wgmma.tma import TensorMapParam
    from humming_cuda.launch import ParamBlock

    sig = signature(W8a8Format.from_spec(presets.FP8_BLOCK128), "k")
    # HUMMING_W8A8_WGMMA_ENTRY's parameters; a and qweight are replaced by their tensor maps
    entry = ("a", "qweight", "a_scales", "weight_scale", "bias", "out", "M", "N", "K", "ldc")
    split = ("workspace", "counters", "iters_per_split", "a_rows", "resident")
    assert sig.names == (*entry, "ws_ld", *split)
    assert ctypes.sizeof(TensorMapParam) == 128
    block = ParamBlock((TensorMapParam, TensorMapParam, *sig.ctypes[2:]))
    maps = TensorMapParam(*range(16)), TensorMapParam(*range(100, 116))
    values = [*maps, 0x1000, 0x2000, 0, 0x3000, 300, 136, 1040, 136, 9, 0x4000, 0x5000, 3, 64, 264]
    address = block.fill(values)
    pointers = (ctypes.c_void_p * 16).from_address(address)
    assert ctypes.string_at(pointers[0], 128) == bytes(maps[0])
    assert ctypes.string_at(pointers[1], 128) == bytes(maps[1])
    assert ctypes.c_int32.from_address(pointers[10]).value == 9
    assert ctypes.c_uint64.from_address(pointers[12]).value == 0x5000
    assert ctypes.c_int32.from_address(pointers[13]).value == 3
    assert ctypes.c_int32.from_address(pointers[14]).value == 64
    assert ctypes.c_int32.from_address(pointers[15]).value == 264


@pytest.mark.parametrize(
    ("n", "k", "m", "split"),
    [
        (4096, 14336, 128, 4),  # 32 tiles: 128 CTAs of 28 K blocks
        (4096, 14336, 256, 2),  # 64 tiles
        (6144, 4096, 128, 2),  # 48 tiles: 96 CTAs (two waves of 5 splits model a tie)
        (8960, 4096, 128, 3),  # 70 tiles: two full waves of 11 blocks beat one of 32
        (4096, 1024, 128, 2),  # 8 K blocks: at least 4 per split
        (4096, 14336, 1024, 1),  # 256 tiles fill the SMs
        (57344, 8192, 4096, 1),
    ],
)
def test_split_k_fills_the_sms_only_on_small_grids(n, k, m, split):
    configs = FAMILY.candidates(presets.W8A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)
    configs = [c for c in configs if not c.cluster_split]  # the workspace plans (next test)
    assert configs[0].split_k == split
    # the split configs first, then the unsplit ones, each at both ring depths; unsplit, the
    # persistent ones first
    if split > 1:
        expected = [(0, 4, split), (0, 6, split), (0, 4, 1), (0, 6, 1)]
    else:
        expected = [(1, 4, 1), (1, 6, 1), (0, 4, 1), (0, 6, 1)]
    # (the 192-column persistent tile goes first where its waves cost less)
    narrow = [c for c in configs if c.tile_cols == 128]
    assert [(c.persistent, c.stages, c.split_k) for c in narrow] == expected
    assert [c.tile_cols for c in configs[: len(configs) - len(narrow)]] == [192] * (
        len(configs) - len(narrow)
    )


@pytest.mark.parametrize(
    ("n", "k", "m", "wide"),
    [
        (4096, 14336, 32, 4),  # 32 tiles
        (8192, 28672, 64, 2),
        (4096, 512, 64, 1),  # 4 K blocks: nothing to split
        (57344, 8192, 32, 1),  # 448 tiles
    ],
)
def test_small_m_orders_the_64_row_tile_by_the_128_row_split(n, k, m, wide):
    """M <= 64: the 128-row configs (split first, then unsplit) and the 64-row ones (unsplit),
    the 64-row ones first only where the 128-row tile is not split."""
    if wide > 1:
        split = [(128, 0, d, wide) for d in (4, 6)] + [(128, 0, d, 1) for d in (4, 6)]
    else:
        split = [(128, p, d, 1) for p in (1, 0) for d in (4, 6)]
    narrow = [(64, 0, d, 1) for d in (4, 3)]
    configs = FAMILY.candidates(presets.W8A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)
    expected = split + narrow if wide > 1 else narrow + split
    assert [(c.tile_rows, c.persistent, c.stages, c.split_k) for c in configs] == expected


def test_split_k_counts_the_devices_sms():
    """SM90's row has no measured SM count (132 assumed); half the SMs halve the split."""
    problem = GemmProblem(n=4096, k=14336, m=128)
    half = SM90.model_copy(update={"sm_count": 66})
    for caps, split in ((half, 2), (SM90, 4)):
        configs = FAMILY.candidates(presets.FP8_BLOCK128, problem, caps)
        assert next(c for c in configs if not c.cluster_split).split_k == split


@pytest.mark.parametrize(
    ("n", "k", "m", "clusters"),
    [
        (6144, 4096, 128, 2),  # split 2, 96 CTAs
        (8192, 28672, 96, 2),  # split 2, 128 CTAs
        (4096, 14336, 128, 3),  # split 4: 128 CTAs past the 120 that clusters of 4 hold
        (4096, 14336, 65, 3),  # both consumer warpgroups hold rows from M = 65
        (4096, 14336, 64, 0),  # one does: the workspace form
        (6144, 4096, 32, 0),
        (8960, 4096, 128, 0),  # split 3: 210 CTAs past the 117 that clusters of 3 hold
        (4096, 14336, 1024, 0),  # unsplit
        (4096, 14336, 129, 0),  # two rows of tiles (split 2): measured slower in clusters
        (4096, 14336, 256, 0),
    ],
)
def test_split_k_runs_in_clusters_where_measured(n, k, m, clusters):
    """At M = 65-128 a 128-row split plan of 2 or 3 runs in clusters where the GPU holds all of
    them at once, and a split of 4 whose clusters of 4 it cannot hold runs in clusters of 3, with
    register stores, before the workspace plans; elsewhere no cluster form is offered."""
    for spec in (presets.W8A8_FP8, presets.FP8_BLOCK128):
        configs = FAMILY.candidates(spec, GemmProblem(n=n, k=k, m=m), SM90)
        clustered = [c for c in configs if c.cluster_split]
        if not clusters:
            assert not clustered
            continue
        assert configs[: len(clustered)] == clustered
        assert {(c.split_k, c.staged_store, c.persistent) for c in clustered} == {
            (clusters, False, False)
        }
        workspace = configs[len(clustered)]
        assert workspace.split_k >= clusters and not workspace.cluster_split
        assert [c.stages for c in clustered] == [
            c.stages for c in configs if c.split_k == workspace.split_k and not c.cluster_split
        ]


def test_cluster_split_follows_the_devices_sms():
    """4096x14336 M=128 on half the SMs: split 2 (64 CTAs), whose clusters of 2 fit one wave of
    66 SMs; on 132 SMs split 4 in clusters of 3 (previous test)."""
    problem = GemmProblem(n=4096, k=14336, m=128)
    half = SM90.model_copy(update={"sm_count": 66})
    first = FAMILY.candidates(presets.W8A8_FP8, problem, half)[0]
    assert (first.split_k, first.cluster_split) == (2, True)


def test_split_k_launch_sizes_the_workspace_as_w4a8_does(monkeypatch):
    """17 K blocks asked for 5 splits: 5 splits of 4 (the last of 1), a workspace of one 128x128
    fp32 tile per split and output tile, a counter per tile; the W4A8 subclass launches alike."""
    import torch

    from humming_cuda.kernels import split_k
    from humming_cuda.kernels.w4a8_wgmma import W4a8WgmmaConfig, W4a8WgmmaKernel
    from humming_cuda.kernels.w8a8_wgmma import bind

    asked = []

    def buffers(device, floats, tiles):
        asked.append((floats, tiles))
        return "ws", "ct"

    monkeypatch.setattr(split_k.SPLIT_K_BUFFERS, "get", buffers)
    kernel = object.__new__(bind.W8a8WgmmaKernel)
    kernel.config = W8a8WgmmaConfig(arch="sm_90a", stages=4, split_k=5)
    cpu = torch.device("cpu")
    k = 17 * 128 - 48
    assert kernel.split_k(k, 6, cpu) == (5, {"workspace": "ws", "counters": "ct"}, {"IPS": 4})
    assert asked == [(6 * 5 * 128 * 128, 6)]
    kernel.config = W8a8WgmmaConfig(arch="sm_90a", stages=4)
    assert kernel.split_k(k, 6, cpu) == (1, {}, {"IPS": 17})
    assert len(asked) == 1  # unsplit: no workspace
    w4 = object.__new__(W4a8WgmmaKernel)
    w4.config = W4a8WgmmaConfig(arch="sm_90a", stages=4, split_k=3)
    assert w4.split_k(k, 6, cpu) == (3, {"workspace": "ws", "counters": "ct"}, {"IPS": 6})
    assert asked[-1] == (6 * 3 * 128 * 128, 6)


def test_activation_boxes_are_64_rows_in_the_64_row_tile_or_when_m_fits_its_first_half():
    """The kernel expects a_rows * 128 + 128 * 128 bytes per stage: the box the map is encoded
    with (W4A8's box is its token tile: tests/test_w4a8_wgmma.py)."""
    from humming_cuda.kernels.w8a8_wgmma import W8a8WgmmaKernel

    w8 = object.__new__(W8a8WgmmaKernel)
    w8.config = W8a8WgmmaConfig(arch="sm_90a", stages=4)
    assert [w8.a_box_rows(m) for m in (17, 40, 64, 65, 128, 4096)] == [64, 64, 64, 128, 128, 128]
    w8.config = W8a8WgmmaConfig(arch="sm_90a", stages=4, tile_rows=64)  # its tile's rows
    assert [w8.a_box_rows(m) for m in (17, 64, 65, 4096)] == [64, 64, 64, 64]
    assert "const u32 stage_bytes = a.a_rows * BK + Tile::B_BYTES;" in HEADER


def test_192_column_tiles_go_first_where_their_waves_cost_less():
    """W8A8-fp8 persistent grids: 192 columns where ceil(tiles / SMs) x 1.35 beats 128 columns'
    waves (measured 1.08-1.11x there), 128 where a partial wave would cost more (4096x14336
    M=1024: 176 tiles against 256, measured 0.80x); never for block weight scales."""
    picks = {
        (n, k, m): FAMILY.candidates(presets.W8A8_FP8, GemmProblem(n=n, k=k, m=m), SM90)[0]
        for n, k, m in ((6144, 4096, 4096), (57344, 8192, 1024), (4096, 14336, 1024))
    }
    assert [c.tile_cols for c in picks.values()] == [192, 192, 128]
    first = picks[(6144, 4096, 4096)]
    assert first.persistent and first.staged_store and first.stages == 4 and first.block_n == 192
    assert first.smem_bytes == 1024 + 4 * ((128 + 192) * 128 + 512) + 2 * 64 * (384 + 16) + 68
    assert first.fits_smem(SM90)
    assert "humming::WgmmaFp8Tile<4, 8, 2, true, true, 192>" in (
        FAMILY.render(presets.W8A8_FP8, first, SM90).code
    )
    block = FAMILY.candidates(presets.FP8_BLOCK128, GemmProblem(n=6144, k=4096, m=4096), SM90)
    assert {c.tile_cols for c in block} == {128}
    with pytest.raises(ValueError, match="tile_cols=192 needs the 128-row tile"):
        W8a8WgmmaConfig(arch="sm_90a", tile_rows=64, tile_cols=192)
