"""Which specs and problems the W8A8-wgmma family runs (fp8 on sm_90a, M > 16), and its configs.

Decode-size M (<= 16) stays with the mma.sync W8A8 family, whose 16-row tiles waste nothing there,
so `supports` refuses it (and an unknown M) with a reason, and CudaDevice moves on. Grids of fewer
128x128 tiles than SMs are split along K (`pick_split_k`).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..act_quant import unsupported_reason
from ..split_k import clamp_split
from ..wgmma_tile import (
    BLOCK_M,
    BLOCK_N,
    CLUSTER_SLOTS,
    C,
    arch_reason,
    fitting_configs,
    problem_reason,
    waves,
)
from ..wna16.heuristics import DEFAULT_SMS
from .config import BLOCK_K, NARROW_BLOCK_M, W8a8WgmmaConfig

WGMMA_FORM = "wgmma.m64nNk32"
WEIGHT_SCALES = ("tensor", "channel", "block")
# Above 16 rows a half-empty 128-row wgmma tile still beats the mma.sync w8a8 kernels: H200, same
# run (act8.json, 2026-11-29), W8A8 fp8 57344x8192 took 314 us at M=32 there and 167 us at M=128
# here; 8192x28672 220 vs 103 us. At M=16 they are even (160 vs 167 us).
MIN_M = 17
STAGE_CHOICES = (4, 6)  # H200 W8A8 8192x28672 M=4096, same run: 1757 us at 4 stages, 1982 at 6
# The 64-row tile for M <= 64: two CTAs per SM, so at most 4 stages of 24 KB each. At M <= 64 the
# 128-row tile's second consumer warpgroup only turns the ring, and one CTA per SM drains and
# refills its ring at every tile. H200, same run (benchmarks/wgmma_config_sweep.py, session 23),
# us: on a grid that fills the SMs unsplit it wins, W8A8 fp8 57344x8192 M = 32 135.0 against 153.1
# (FP8 block-128 130.9 against 142.5); where the 128-row grid is split it does not: at the 128-row
# tile's split count 0.98-1.05x its time (8192x28672, 6144x4096, 4096x14336 at M = 32 / 64), and
# at the count its own 264 CTA slots would pick worse (6144x4096 M = 64 26.7 against 21.5 in that
# run's act8). So it goes first, unsplit, only where the 128-row tile would not split.
NARROW_STAGE_CHOICES = (4, 3)
# Split-K. One CTA per tile over all of K leaves SMs idle when the grid is small: N=4096 at M <= 128
# is 32 tiles for 132 SMs (H200, unsplit: 4096x14336 M=128 took 56.9 us where cuBLASLt took 38.1;
# M=32 55.1 vs 38.3). One CTA fits per SM (384 threads at ~150 registers, ~130 KB of ring), so
# `tiles * s` CTAs of ceil(K blocks / s) blocks each take about
#     ceil(tiles * s / SMs) waves x (ceil(K blocks / s) + SPLIT_OVERHEAD_BLOCKS)
# K-block times, the overhead being what a split adds whatever its length: filling the ring before
# the first block, writing its 64 KB fp32 partial and, in the last split, reading all of them back.
# The pick minimises that (ties to fewer splits: less workspace traffic) over at most two waves.
# SPLIT_OVERHEAD_BLOCKS = 2 is an estimate (no split sweep has run yet): about one block's time to fill the
# ring, and the partial's 64 KB written and read back (four blocks' operand bytes, mostly through
# L2 rather than DRAM). It gives 4 splits at 4096x14336 M<=128 (128 CTAs), 2 at 6144x4096 M=128
# and at 8192x28672 M=64 (96 / 128 CTAs), and 3 for 70 tiles at K=4096 (two full waves of 11-block
# splits are expected to beat one wave of 32 blocks on 53% of the SMs). Measured with these picks
# (H200, act8.json of 2026-11-30 against the unsplit kernel's run of 2026-11-29, cross-run):
# W8A8 fp8 4096x14336 M=128 40.8 us (was 56.9), M=32 36.6 (55.1); 8192x28672 M=64 81.8 (114.0);
# FP8 block-128 4096x14336 M=64 27.8 (63.0).
SPLIT_OVERHEAD_BLOCKS = 2
SPLIT_MAX_WAVES = 2
# Unsplit grids run persistent CTAs (config.persistent) first. H200, same run (session 25,
# benchmarks/notes/session25/sweep_persistent.json), us, one CTA per tile -> persistent, 4 stages:
# W8A8 fp8 6144x4096 M=4096 273.1 -> 264.9, 57344x8192 M=1024 943.8 -> 910.7, M=256 263.0 ->
# 251.2; 8192x28672 and 4096x14336 within 1%; FP8 block-128 8192x28672 M=1024 561.5 -> 582.0, the
# one loss (before the epilogue and issue-turn changes, which apply to both forms).


# 2-byte outputs leave through staged rows and bulk copies (config.staged_store) wherever the ring
# leaves room for them (4 stages; 6 do not). H200, same run (session 27,
# benchmarks/notes/session27/sweep_staged.json), us, registers -> staged: W8A8-fp8 6144x4096
# M=4096 206.7 -> 193.9, M=1024 56.6 -> 52.3, M=256 21.1 -> 19.7, 57344x8192 M=1024 813.9 ->
# 783.7, 8192x28672 M=4096 1636.4 -> 1601.1, 4096x14336 M=128 (split) 33.1 -> 32.0; FP8 block-128
# 6144x4096 M=4096 221.3 -> 208.6, 57344x8192 M=1024 888.3 -> 859.0. From M = 65 only: at M <= 64
# (split grids, one consumer warpgroup with rows) W8A8-fp8 lost 0.3-0.5 us with them (same run,
# session27/sweep_staged_mid.json: 6144x4096 M=64 15.8 -> 16.3, 4096x14336 M=32 28.2 -> 28.7)
# while M = 128 gained (6144x4096 19.8 -> 18.5, 57344x8192 153.1 -> 146.5). W4A8-fp8 (out^T form,
# session27/sweep_w4_staged.json, same run): 6144x4096 M=4096 304.4 -> 293.4, M=1024 80.9 ->
# 77.4, 57344x8192 M=1024 1212.3 -> 1176.1, M=128 22.8 -> 22.4; M <= 64 again slower (6144x4096
# M=32 15.8 -> 16.5, 57344x8192 M=64 143.0 -> 144.1).
STAGED_OUTPUTS = ("bf16", "fp16")
STAGED_MIN_M = 65


def staged_where_measured(
    configs: list[C], spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps
) -> list[C]:
    """`configs` with staged output rows (a `staged_store` field) for 2-byte outputs from M =
    STAGED_MIN_M, on the 128-row tiles whose shared memory has room for them. Shared with
    w4a8_wgmma (its out^T form's 128-token tiles; measured there too)."""
    if spec.output_dtype not in STAGED_OUTPUTS or (problem.m or BLOCK_M) < STAGED_MIN_M:
        return configs

    def staged(config: C) -> C:
        with_rows = config.with_fields(staged_store=True)
        return with_rows if config.block_m == BLOCK_M and with_rows.fits_smem(caps) else config

    return [staged(c) for c in configs]


# 192-column tiles (config.tile_cols): m64n192 wgmmas load 1.5x the flops per byte of A. H200, same
# run (session 27, benchmarks/notes/session27/sweep_192_columns.json), us, 128 -> 192 columns,
# persistent with staged rows: W8A8-fp8 6144x4096 M=4096 197.0 -> 177.1, M=1024 53.0 -> 48.7,
# 57344x8192 M=1024 788.8 -> 720.8, M=256 215.0 -> 199.1, 8192x28672 M=4096 1601.7 -> 1480.4; but
# 4096x14336 M=1024 111.0 -> 138.5: 176 tiles are 1.33 waves of 132 CTAs where 256 were 1.94. So a
# tile of 192 columns counts as WIDE_TILE_COST tiles of 128 (1.5x the work at ~0.9x the time per
# flop) and the wider tile goes first where its whole waves cost less.
WIDE_COLUMNS = 192
WIDE_TILE_COST = 1.35


def wide_columns_first(
    configs: list[W8a8WgmmaConfig], spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps
) -> list[W8a8WgmmaConfig]:
    """`configs` with their persistent 128-row configs on 192-column tiles first (those that fit
    shared memory) where the wave count says so; formats with 128x128 block weight scales keep 128
    columns (a 192-column tile straddles their blocks)."""
    if spec.weight.scale.granularity == "block" or not configs or not configs[0].persistent:
        return configs
    sms = caps.sm_count or DEFAULT_SMS
    rows = -(-(problem.m or BLOCK_M) // BLOCK_M)
    narrow_waves = waves(rows * -(-problem.n // BLOCK_N), sms)
    wide_waves = waves(rows * -(-problem.n // WIDE_COLUMNS), sms)
    if wide_waves * WIDE_TILE_COST >= narrow_waves:
        return configs
    wide = [
        c.with_fields(tile_cols=WIDE_COLUMNS)
        for c in configs
        if c.persistent and c.tile_rows == BLOCK_M
    ]
    return [c for c in wide if c.fits_smem(caps)] + configs


# Split-K in clusters (config.cluster_split: a tile's splits sum their partials over distributed
# shared memory, no workspace read-back by the last split), for grids of one row of 128-row tiles
# whose two consumer warpgroups both hold rows (M = 65-128). Session 42 (notes/session42.md):
# H100 sweep of split_k x cluster_split (run129), us, the routed plan (staged rows) -> clusters:
# W8A8-fp8 6144x4096 M=128 (split 2) 21.4 -> 20.1, 8192x28672 M=128 (split 2) 102.3 -> 99.7,
# 4096x14336 M=128 (split 4: 128 CTAs, more than the 120 that clusters of 4 hold at once) 39.5 ->
# 37.2 at split 3 in clusters. H200 route A/B of this rule (run134): 0.93-1.00x at 6144x4096,
# 4096x14336 and 8192x28672 M = 96 / 128, both fp8 formats (e.g. 6144x4096 M=96 18.3 -> 17.1,
# FP8 block-128 6144x4096 M=128 18.6 -> 17.6, 8192x28672 M=96 80.2 -> 77.8), 4096x14336 M=80
# 1.02x. Not past one row of tiles: on the H200 4096x14336 M = 160 / 192 / 224 / 256 took 1.19 /
# 1.17-1.19 / 1.03 / 1.01x in clusters of 2 (FP8 block-128 M=192 1.11x), though the H100 sweep
# had M=256 at 0.95x. Not at M <= 64, where one consumer warpgroup holds rows and the workspace
# form reads back half a tile (H100, split 2: 6144x4096 M=32 18.4 -> 18.8, FP8 block-128 M=64
# 18.3 -> 18.8; 4096x14336 even), nor in grids past the clusters the GPU holds at once
# (CLUSTER_SLOTS: split 4 at 4096x14336 M=128 40.4 -> 51.0, split 3 at 6144x4096 M=128 27.7 ->
# 29.0), nor for w4a8_wgmma (its sweep: 0.96-1.02x at split 2-3, slower beyond).
CLUSTER_MIN_M = 65
CLUSTER_MAX_M = BLOCK_M


def cluster_split_for(split: int, tiles: int, sms: int) -> int:
    """The measured cluster form of a `split`-way plan over `tiles` 128-row tiles: the same split
    (2 or 3) where the GPU holds all its clusters at once, 3 for a split of 4 whose clusters of 4
    it does not; 0 where none is measured to pay."""

    def fits(s: int) -> bool:
        return tiles * s <= CLUSTER_SLOTS[1][s] * sms

    if split in (2, 3):
        return split if fits(split) else 0
    return 3 if split == 4 and not fits(4) and fits(3) else 0


def clusters_where_measured(
    configs: list[W8a8WgmmaConfig], problem: GemmProblem, caps: DeviceCaps
) -> list[W8a8WgmmaConfig]:
    """`configs` with the split plan's cluster form (`cluster_split_for`) first, 128-row tiles
    at M = CLUSTER_MIN_M to CLUSTER_MAX_M; else `configs` unchanged."""
    split = configs[0].split_k if configs else 1
    m = problem.m or 0
    if split < 2 or configs[0].tile_rows != BLOCK_M or not CLUSTER_MIN_M <= m <= CLUSTER_MAX_M:
        return configs
    tiles = -(-problem.n // configs[0].tile_cols) * -(-m // BLOCK_M)
    clusters = cluster_split_for(split, tiles, caps.sm_count or DEFAULT_SMS)
    if not clusters:
        return configs
    update = {"split_k": clusters, "cluster_split": True, "staged_store": False}
    clustered = [c.with_fields(**update) for c in configs if c.split_k == split]
    return [c for c in clustered if c.fits_smem(caps)] + configs


def _spec_reason(spec: QuantSpec) -> str:
    w, act = spec.weight, spec.act
    if not act.is_quantized or act.dtype.name != "e4m3" or w.dtype.name != "e4m3":
        return (
            f"weights {w.dtype.name!r} x activations {act.dtype.name!r}: the w8a8_wgmma family "
            "multiplies e4m3 weights by e4m3 activations only (W8A8_FP8, FP8_BLOCK128)"
        )
    reason = unsupported_reason(act)
    if reason:
        return reason
    if w.zero_point != "none" or w.global_scale:
        return "the w8a8_wgmma family takes e4m3 weights without zero points or global scales"
    s = w.scale
    if s.granularity not in WEIGHT_SCALES:
        return (
            f"weight scale granularity {s.granularity!r}: the w8a8_wgmma family takes per-tensor, "
            "per-channel or 128x128 block scales"
        )
    if s.granularity == "block" and tuple(s.block) != (BLOCK_K, BLOCK_K):
        return f"weight block {tuple(s.block)}: only 128x128 blocks (DeepSeek FP8) are supported"
    if s.dtype.name not in ("fp32", "fp16", "bf16"):
        return f"weight scale dtype {s.dtype.name!r}: use fp32, fp16 or bf16"
    e = spec.epilogue
    if e.activation != "none" or e.glu != "none" or e.topk_weight or spec.layout != "dense":
        return "the w8a8_wgmma family computes dense GEMMs with scales and bias only"
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or arch_reason(caps, "w8a8_wgmma", WGMMA_FORM, "e4m3", fallback="w8a8")
        or problem_reason(problem, "w8a8_wgmma", fallback="w8a8", act_bytes=1, min_m=MIN_M)
    )
    return Support.no(reason) if reason else Support.yes()


def pick_split_k(problem: GemmProblem, caps: DeviceCaps, ctas_per_sm: int = 1) -> int:
    """The split count of the modelled time above: 1 unless the grid has fewer tiles than CTA
    slots (SMs x `ctas_per_sm`, the CTAs the kernel keeps resident per SM); at least 4 K blocks
    per split and at most 16 splits (split_k.clamp_split)."""
    sms = (caps.sm_count or DEFAULT_SMS) * ctas_per_sm
    tiles = -(-problem.n // BLOCK_N) * -(-(problem.m or 1) // BLOCK_M)
    if tiles >= sms:
        return 1
    blocks = -(-problem.k // BLOCK_K)
    limit = min(clamp_split(16, blocks), SPLIT_MAX_WAVES * sms // tiles)

    def cost(s: int) -> int:
        return -(-tiles * s // sms) * (-(-blocks // s) + SPLIT_OVERHEAD_BLOCKS)

    return min(range(1, limit + 1), key=cost)  # min keeps the first (fewest splits) of ties


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W8a8WgmmaConfig]:
    """Configs for this problem, best first: ring depths that fit the arch's shared memory, split
    along K by `pick_split_k` when that pays, then unsplit (a tuner's alternatives); unsplit, the
    persistent form of each depth first. At M <= 64
    the 64-row tile (two CTAs per SM, unsplit) comes first where the 128-row grid needs no split,
    and after the 128-row configs where it does (see NARROW_STAGE_CHOICES)."""
    wide = split_first(
        fitting_configs(supports, W8a8WgmmaConfig, STAGE_CHOICES, spec, problem, caps),
        problem,
        caps,
    )
    if wide and wide[0].split_k == 1:  # unsplit: persistent CTAs first (measured above)
        wide = [c.with_fields(persistent=True) for c in wide] + wide
    wide = staged_where_measured(wide, spec, problem, caps)
    wide = wide_columns_first(wide, spec, problem, caps)
    wide = clusters_where_measured(wide, problem, caps)
    if not wide or (problem.m or BLOCK_M) > NARROW_BLOCK_M:
        return wide
    narrow = [
        W8a8WgmmaConfig(arch=caps.arch, stages=s, tile_rows=NARROW_BLOCK_M)
        for s in NARROW_STAGE_CHOICES
    ]
    narrow = [c for c in narrow if c.fits_smem(caps)]
    return wide + narrow if wide[0].split_k > 1 else narrow + wide


def split_first(configs: list[C], problem: GemmProblem, caps: DeviceCaps) -> list[C]:
    """`configs` split along K by `pick_split_k` (a `split_k` field), then unsplit, when the split
    pays; else `configs` unchanged. Shared with w4a8_wgmma (the same tiles and K blocks; its
    32-token tiles keep two CTAs per SM, the first config's ctas_per_sm)."""
    split = pick_split_k(problem, caps, configs[0].ctas_per_sm) if configs else 1
    if split == 1:
        return configs
    return [c.with_fields(split_k=split) for c in configs] + configs
