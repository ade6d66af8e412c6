"""Which specs and problems the WnA16-wgmma family runs (sm_90a), and its configs.

From M = 17 on (9 for 8-bit codes) every M is this family's: a cost model in K steps (below)
picks the register-A form's token tile (16 / 32 / 64 / 96 / 128 / 160 / 176 rows; 48 in place of
64 at M = 33-48), its K split and, for tiles of up to 32 rows, one or two CTAs per SM, or at
M = 33-256 the 128-column tile at two CTAs per SM or a stream-K form (persistent CTAs sharing the
iterations evenly), or the shared-memory form where its waves of 128 x 128 tiles finish first. A
split plan's tile may sum its splits within thread-block clusters instead, where the model prices
that cheaper, else (from 64-row tiles, 32 at two CTAs per SM) with all its splits at once through
the workspace (rs_split_scatter). Smaller M goes to the mma.sync families (wna16_decode, wna16).
An unknown M is refused with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wgmma_tile import (
    BLOCK_M,
    BLOCK_N,
    CLUSTER_SLOTS,
    arch_reason,
    fitting_configs,
    output_tiles,
    problem_reason,
    waves,
)
from ..wna16.heuristics import DEFAULT_SMS
from ..wna16.heuristics import _spec_reason as wna16_spec_reason
from .config import (
    BLOCK_K,
    MAX_SPLIT,
    RS_BLOCK_MS,
    RS_BLOCK_N,
    RS_MAX_BLOCK_M_2CTAS,
    RS_MID_BLOCK_M,
    RS_NARROW_BLOCK_N,
    RS_WIDE_BLOCK_MS,
    WgmmaWna16Config,
)

WGMMA_FORM = "wgmma.m64nNk16"
STAGE_CHOICES = (4, 6)  # 4 x tiles cover the dequantization's lag; 6 as the deeper alternative
# Grouped tile order (humming/memory/tile_order.cuh) pays off only when the weights overflow L2:
# H200, W4A16 g128 at M=4096, launch order vs groups of 8: 57344x8192 (235 MB) 10161 vs 9439 us,
# 8192x28672 (117 MB, M=1024) 1186 vs 1183, 6144x4096 (13 MB) 483 vs 538.
_DEFAULT_L2 = 50 * 2**20  # H100 / H200 L2, for caps rows without a measured size
# The smallest M taken: below it the mma.sync kernels are faster. H200, same runs (2026-11-30,
# benchmarks/notes/session10_wna16_small_m.md): W8A16 57344x8192 M=16 152 us here vs 206 in
# wna16, 8192x28672 M=16 65-72 vs 99; W4A16 g128 57344x8192 M=64 228 vs 243, 4096x14336 M=32
# 31 vs 34; but at M=16 4-bit codes stay faster in wna16 (57344x8192 159 vs 114 us, MXFP4 184
# vs 123): twice the weights per byte streamed make the dequantization the bottleneck there.
MIN_M = 17
MIN_M_WIDE_CODES = 9  # for 8-bit codes
SMALL_M_STAGE_CHOICES = (8, 6, 4)  # deep rings for the narrow tiles: at small M they stream weights

# The cost model, in the time of one 64-deep K step of a register-form CTA with a tile of at most
# 64 token rows (the narrow tiles are bound by dequantizing their 256 weight rows, so their width
# barely matters). A CTA costs its K steps at its tile's STEP_COST, plus FIXED_STEPS (filling the
# ring, the epilogue), plus, when K is split, SPLIT_ROW_STEPS per token row of each split that the
# last CTA of a tile reads back and sums (fp32 rows of 256). A grid costs its waves of CTAs (one
# CTA per SM). Least-squares fit (relative error) to 130 H200 timings of one session
# (2026-11-30, benchmarks/notes/session11_mid_m.md: wgmma_config_sweep over rs_block_m 64 / 128 x
# split_k 1-8 at 11 points of M = 96-512, and the narrow tiles' splits 1-16 at 4 points of
# M = 16-64): per step 0.54 us at <= 64 rows, 0.86 at 128; fixed 6.2 us; 0.0066 us per split row.
# It picks the fastest measured variant at all 15 points, and split 5 (unswept there) measured
# faster than 4 at both points where it picks it (6144x4096 M=64 / 128: 20.2 vs 21.7, 26.9 vs
# 30.9 us).
# The shared-memory form's 128 x 128 tile-step costs RS_STEP_COST[128] / 1.4: a 256 x 128
# register tile took 1.2-1.5x a 128 x 128 shared-memory tile of the same K (same-run sweeps,
# 2026-11-30: W4A16 g128 4096x14336 M=512 199 vs 150 us, 8192x28672 M=256 404 vs 297; W8A16
# 4096x14336 M=512 182 vs 154), and won where its waves did (57344x8192 M=256 474 vs 611 us,
# M=2048 3621 vs 4781; 8192x28672 M=512 400 vs 591; W8A16 8192x28672 M=1024 723 vs 1194).
# Two CTAs per SM (the 16- and 32-row tiles, rs_ctas_per_sm = 2): a wave holds twice the CTAs and
# each runs PAIR_COST times as long as alone. H200, same run (2026-11-30, W4A16 g128 M=32,
# benchmarks/notes/session15.md): 57344x8192 unsplit (224 CTAs) 111.6 us against 153.9 at one CTA
# per SM (1.45 = 111.6 / (153.9 / 2)); 8192x28672 split 8 56.4 against split 4's 72.7 (1.37).
PAIR_COST = 1.45
# The 160- and 176-row tiles (m64n160k16 / m64n176k16, register A): fitted to one same-run sweep
# over rs_block_m 128 / 160 / 176 at four W4A16 g128 points (H200, 2026-12-05,
# benchmarks/notes/session30.md): 57344x8192 M=1024 1435 / 1353 / 1302 us, 8192x28672 M=4096
# 2899 / 2688 / 2523, 4096x14336 M=4096 700 / 768 / 609, 6144x4096 M=4096 319 / 295 / 312.
# In units of each point's 128-row cost, a step costs 1.70-1.79 at 160 rows and 1.86-1.91 at 176:
# fewer rows dequantize each weight tile, so the wider tile wins where its waves are not worse.
# Offered from WIDE_MIN_M rows, unsplit below WIDE_SPLIT_MIN_M (the sweep's smallest M): a
# same-run H100 route A/B (session 41, benchmarks/notes/session41.md, run127) measured the
# unsplit wide tiles at M = 640-768 against the previous routes: W4A16 g128 6144x4096 M=768 86.9
# -> 57.4 us (one wave of 120 160-row tiles against two of 96-row ones; the peer 61.5), MXFP4
# 94.0 -> 62.7, W8A16 83.4 -> 55.7, 8192x28672 M=640 490.6 -> 382.6, 57344x8192 M=768 1122.3 ->
# 1010.3; split through the workspace they lost (4096x14336 M=896 split 4 1.15x, 8192x28672
# M=512 / 768 split 4 1.05x / 1.01x): the read-back of 160-176 rows per split costs more than
# SPLIT_ROW_STEPS prices. Below WIDE_MIN_M (a few M tiles) they are untested.
# The 96-row tile (m64n96k16): 1.30, the least-squares value over the register-form sweeps on
# record (session 11's, session 30's and session 33's, `benchmarks/fit_rs_cost.py`; flat from 1.22
# to 1.34). Same-run H100 sweep (session 33, notes/session33/sweep_split.json): W4A16 g128
# 6144x4096 M=1024 96.3 us in 96-row tiles (264 CTAs: two whole waves) against 111.4 routed before
# (128 rows split 2) and 106.2 unsplit, M=768 94.7 against 109.9; MXFP4 M=1024 114.6 against
# 125.0. Offered from MID_MIN_M rows: the same A/B (run127) measured the model's 96-row picks at
# M = 192 / 384 against the previous routes (128-row tiles, 128-column tiles, stream-K): W4A16
# g128 6144x4096 30.7 -> 28.3 / 49.2 -> 46.2 us, 4096x14336 53.7 -> 49.3 / 98.0 -> 83.1,
# 8192x28672 M=192 177.1 -> 158.7, 57344x8192 M=192 358.3 -> 352.3; below 192 rows untested.
RS_STEP_COST = {16: 1.0, 32: 1.0, 64: 1.0, 96: 1.3, 128: 1.6, 160: 1.75, 176: 1.87}
MID_MIN_M = 192
# M = 33 to TILE48_MAX_M runs the 64-row tile's plan (its split, clusters, scatter, priced as
# above) on 48-row tiles (m64n48k16): a quarter less MMA work and accumulator for the same
# dequantization. Same-run H100 sweep of W4A16 g128 at M = 40 / 48 on the four layers
# (benchmarks/notes/session48.md, session48/h100/dense48.json), each point's routed plan on 48-
# against 64-row tiles: 0.91-0.96x the time at all 8 points (57344x8192 M=40 165.6 -> 157.9 us,
# 8192x28672 78.3 -> 74.6, 4096x14336 26.5 -> 25.4, 6144x4096 16.1 -> 14.7). The 128-column
# plans (split, stream-K, clusters, scatter) too since session 50: same-run H100 sweep
# (benchmarks/notes/session50/h100/sweep48*.json), W4A16 g128 M = 40 / 48 and MXFP4 M = 40 / 48,
# 0.87-0.94x the time at all 8 points (57344x8192 stream-K M=40 138.7 -> 128.6 us, the peer 124.3;
# 8192x28672 split-4 scatter 73.3 -> 68.2, peer 63.1; 6144x4096 clusters 14.9 -> 13.4, peer 13.0;
# 4096x14336 split-8 scatter 24.9 -> 23.2).
TILE48_MAX_M = 48
WIDE_MIN_M = 512
WIDE_SPLIT_MIN_M = 1024
SMEM_STEP_COST = RS_STEP_COST[128] / 1.4
FIXED_STEPS = 12
SPLIT_ROW_STEPS = 0.012  # small since the read-back batches its loads (epilogue/split_tile.cuh)
# 8-bit codes below MID_MIN_M rows: the read-back at twice SPLIT_ROW_STEPS, and every split plan
# priced with its cluster forms (with_clusters) before the tile is chosen, not after. H100, same
# run (session 42's run130, notes/session42.md section 2), us, routed -> this pricing: W8A16
# 6144x4096 M=17 / 32 15.5 -> 14.1 and 15.8 -> 14.1 (split 5 through the workspace -> split 4 in
# clusters), 4096x14336 M=48 / 64 37.3 -> 32.6 and 37.7 -> 32.6 (split 8 -> split 6 in
# clusters); 4096x14336 M = 96 / 128 now take 128 rows split 6 in clusters (session 41's sweep:
# 0.78x the split 8 at M=128). The doubled price alone moved 6144x4096 M = 96 / 128 to 64-row
# tiles (20.1 -> 23.5 us) and 8192x28672 M=384 to unsplit 96-row ones (274.4 -> 282.2): priced
# with their cluster forms the first keep their 128-row split 4 in clusters, and from MID_MIN_M
# rows nothing changes. 4-bit codes keep SPLIT_ROW_STEPS: doubled, they lost at every moved point
# (W4A16 g128 6144x4096 M = 17-64 0.95-0.83x, 4096x14336 M=48 0.96x).
BYTE_CODES_MAX_M = MID_MIN_M - 1
BYTE_CODES_SPLIT_ROW_STEPS = 2 * SPLIT_ROW_STEPS
MIN_STEPS_PER_SPLIT = 8
# The 128-column tile (rs_block_n = 128: one consumer warpgroup, two CTAs per SM at 64 or 128 token
# rows), in the same units: a CTA's K step at its token rows while another CTA shares the SM
# (N128_STEP_COST), its fixed part, and a CTA alone on its SM in a grid's last round taking
# N128_ALONE of a paired CTA's time. Fitted to one same-run H100 sweep (benchmarks/notes/
# session35.md, session35/h100/*.json: W4A16 g128 at 12 points and MXFP4 at 2, M = 64-256, splits
# 1 / 2 / 4 of both token tiles against the routed plan) so that no pick there loses to the
# routed plan: taken where the model's best 128-column plan costs under N128_MARGIN of the best
# other plan, for 4-bit codes (the ones measured) and M in [N128_MIN_M, N128_MAX_M] (the sweep's
# range), with the measured splits only. At the sweep's 14 points it then takes 8 (0.88-0.98x
# the routed time) and keeps the rest (57344x8192 M=128 measured 1.01x in the tile). Split 8:
# a second same-run H100 sweep over splits 1-8 at the same points (session 37, notes/session37.md)
# with the same constants: adding it takes three more points (4096x14336 M=64 0.90x the 256-column
# plan, M=128 0.98x, MXFP4 M=128 0.93x) and loses at none; splits 3 / 5 / 6 change no pick, and
# a refit of the constants to that sweep chose better splits within the tile but routed worse
# against the 256-column plans (mean 0.988x instead of 0.962x, one point 1.05x).
N128_STEP_COST = {64: 1.0, 128: 1.6}
N128_FIXED_STEPS = 10
N128_ALONE = 0.8
N128_MARGIN = 0.975
# From 33 rows since session 48's same-run H100 route A/B with the peer (notes/session48.md,
# session48/h100/ab_n128_min_m.json; before: from 64, the sweep's range): at M = 40 / 56 on the
# four layers the model moves every point here, 0.82-0.98x the time at 9 of 10 (W4A16 g128
# 57344x8192 M=40 158.6 -> 137.7 us, M=56 167.2 -> 137.8, 8192x28672 M=56 80.7 -> 74.4,
# 6144x4096 M=56 16.2 -> 14.8; MXFP4 57344x8192 M=40 179.2 -> 156.1; W3A16 g128 6144x4096 M=40
# 16.0 -> 15.7), 1.015x at 6144x4096 M=40 (14.6 -> 14.8).
N128_MIN_M, N128_MAX_M = 33, 256
N128_SPLITS = (1, 2, 4, 8)
N128_STAGES = (4,)  # the sweep's ring (two CTAs' shared memory fits it at both token tiles)
# Code widths that take the 128-column and stream-K plans above: from N128_MIN_BITS to 4 bits.
# Fitted on 4-bit codes; 3-bit ones (W3A16 g128) route through the same model since session 47's
# same-run H100 route A/B with the peer (notes/session47.md): faster at 11 of 12 points of the
# four layers at M = 64 / 128 / 256 (57344x8192 M=64 182.5 -> 149.3 us, 6144x4096 M=64 17.7 ->
# 15.6, 4096x14336 M=128 35.9 -> 33.4; 0.91-0.99x elsewhere), the same plan at 8192x28672 M=256.
N128_MIN_BITS = 3
# The 128-column tile's stream-K form (rs_stream_k: 2 x sms persistent CTAs sharing the (tile, K
# step) iterations evenly) on one 64-row token tile: a CTA runs its ceil(iterations / (2 sms))
# steps at N128_STEP_COST[64] plus STREAM_FIXED_STEPS (ring fill, partial tiles written and read
# back, the epilogue). Same-run H100 sweep after the producer's walk stopped dividing per step
# (benchmarks/notes/session38.md, session38/h100/sk64.json, 4 stages): 0.605 us per step and
# 10.3 us fixed from 57344x8192 (141.7 us) and 8192x28672 (76.1 us) at M = 64, i.e. 17 steps;
# 6144x4096 17.5 us (model 17.3), 4096x14336 28.8 (26.7). Only at M <= STREAM_MAX_M: with two or
# more token tiles the tiles sharing a weight panel run far apart in the walk, and the panel is
# read from DRAM again (measured 1.33-1.44x the routed plan at M = 128 / 256 on the two layers
# larger than L2). Taken under N128_MARGIN of the best other plan: at the sweep's M = 64 points
# that is 57344x8192 (model 0.84x, measured 141.7 vs 164.5 us; MXFP4 159.4 vs 187.1).
STREAM_FIXED_STEPS = 17
STREAM_MAX_M = 64
STREAM_STAGES = (4,)  # two 64-row CTAs of 107.6 KB each (the sweep's ring)
# The 256-column stream-K form (two consumer warpgroups, one CTA per SM) on 128-row token tiles,
# for M in (STREAM_MAX_M, STREAM_WIDE_MAX_M]: a CTA runs its ceil(iterations / sms) steps at
# RS_STEP_COST[128] plus STREAM_WIDE_FIXED_STEPS. Same-run H100 sweep (benchmarks/notes/
# session39.md, session39/h100/run115_sk256.json, 4 stages): 0.83 us per step and ~17 us fixed
# (33 steps of the register model's ~0.52 us) at 57344x8192 M = 128 / 256 / 512 and 8192x28672
# M = 128 / 256. Taken under N128_MARGIN of the best other plan, for 4-bit codes (the ones
# measured): at the sweep's points that is 57344x8192 at M = 128 and 256 (model 0.88x / 0.91x;
# measured W4A16 g128 196.0 vs 204.6 us and 375.2 vs 399.3, MXFP4 205.7 vs 226.4 and 386.9 vs
# 421.1), where the one-CTA-per-tile plans leave part of a last wave empty. The smaller layers
# measured 1.04-1.20x and stay. Not beyond two token tiles: at M = 512 the model's 0.94x
# measured 1.03x (the four token tiles of a weight panel run far apart in the walk, as for the
# 64-row form above).
STREAM_WIDE_BLOCK_M = 128
STREAM_WIDE_FIXED_STEPS = 33
STREAM_WIDE_MAX_M = 256
# Cluster split-K (rs_cluster_split: a tile's splits sum over distributed shared memory, no
# workspace): a split-K plan's tile may instead run CLUSTER_SPLITS splits in clusters, priced as
# the register form's CTA without the split read-back (SPLIT_ROW_STEPS: the rows of all splits
# travel between the cluster's shared memories instead) over waves of the clusters the GPU holds
# at once (wgmma_tile.CLUSTER_SLOTS: a GPC holds whole clusters only). The cheaper of the
# plan and its tile's cluster forms is taken; the model's other choices (tile, CTAs per SM) see
# the workspace form only. Same-run H100 sweep of split_k x rs_cluster_split at 19 split-routed
# points of the three smaller layers (benchmarks/notes/session41.md): it takes the cluster form
# at 5 of them (W8A16 6144x4096 M = 64 / 128 20.8 -> 16.2 and 28.7 -> 20.0 us at split 4
# instead of 5; W4A16 g128 6144x4096 M = 48 16.8 -> 15.4, M = 384 55.6 -> 49.1 (216 CTAs: two
# waves either way), 8192x28672 M = 256 184.2 -> 182.6), keeps the workspace at the other 14 and
# loses at none; it misses two (W8A16 4096x14336 M = 64 / 128: split 6 in clusters 0.84x / 0.78x
# the routed split 8). Every other point it moved to clusters, measured in a second run against
# the plan's workspace form: 0.88-0.99x at split 2 over several waves (e.g. W8A16 57344x8192
# M = 256 401.0 -> 374.6 us, W4A16 g128 4096x14336 M = 2048 348.9 -> 328.8) and 0.70-0.94x at
# 6144x4096 M = 48-128 with split 4 in clusters for split 5. Session 40's routed points (grids of
# 192 of 264 slots at 6144x4096 M = 64-256) keep their clusters (W4A16 g128 18.0 -> 14.6,
# 26.1 -> 19.1, 35.2 -> 30.5 us), where the grids past the cluster capacity lost 1.20-1.52x.
CLUSTER_SPLITS = (2, 3, 4, 5, 6, 8)
# A split-K plan through the workspace sums its splits all at once (rs_split_scatter: each split
# sums and stores a share of the rows once every split has stored its partial, where the grid is
# resident at once) on token tiles of SCATTER_MIN_BLOCK_M rows or more, or of
# SCATTER_MIN_BLOCK_M_2CTAS at two CTAs per SM; one-cluster plans stay (with_clusters prices
# them; they measured faster than scatter at every point it routes them). Same-run H100 sweep
# (benchmarks/notes/session44.md, session44/h100/wide.json, scatter.json), the plan's split
# through the workspace (or the 128-column split 8 in clusters of 2, session 43's route) ->
# scatter, us: W4A16 g128 4096x14336 M = 64 / 96 / 128 26.7 -> 25.3, 35.8 -> 31.1, 36.3 -> 32.9
# (clusters of 2), M=256 55.0 -> 52.3; 8192x28672 M = 64 / 128 76.1 -> 72.3, 102.6 -> 99.0,
# M=32 (32 rows, two CTAs per SM) 62.5 -> 57.0; MXFP4 4096x14336 M=128 38.1 -> 34.9; W8A16
# 4096x14336 M=256 58.9 -> 51.7, 8192x28672 M=32 104.5 -> 89.8. The 32-row tiles at one CTA per
# SM lost or tied with 4-bit codes: W4A16 g128 6144x4096 M=32 12.8 -> 14.1, 4096x14336 M=32
# 23.2 -> 23.3 (W8A16 4096x14336 M=32 gained, 32.2 -> 29.9: not taken, one rule for the tile).
SCATTER_MIN_BLOCK_M = 64
SCATTER_MIN_BLOCK_M_2CTAS = 32


def _spec_reason(spec: QuantSpec) -> str:
    """The wna16 family's own checks: its layout and dequantizer are ours."""
    return wna16_spec_reason(spec).replace("the wna16 family", "the wna16_wgmma family")


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or arch_reason(caps, "wna16_wgmma", WGMMA_FORM, spec.act.dtype.name, fallback="wna16")
        or problem_reason(
            problem, "wna16_wgmma", "wna16", act_bytes=2, rows="activation row", min_m=1
        )
    )
    return Support.no(reason) if reason else Support.yes()


def min_m(spec: QuantSpec) -> int:
    return MIN_M_WIDE_CODES if spec.weight.dtype.bits >= 8 else MIN_M


def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
    """From min_m(spec) on: the cost model's plans (register form with split-K, or shared-memory
    form) fill any grid, so the mma.sync kernels keep only smaller M."""
    return (problem.m or 0) >= min_m(spec)


@dataclass(frozen=True)
class Plan:
    """One way to run the problem and its cost under the model above."""

    cost: float
    registers: bool
    block_m: int = BLOCK_M
    split_k: int = 1
    ctas_per_sm: int = 1
    block_n: int = RS_BLOCK_N
    stream_k: bool = False
    cluster: bool = False
    cluster_ctas: int = 0  # with `cluster`: CTAs per cluster, 0 for all the tile's splits
    scatter: bool = False  # split-K summed by all of a tile's splits at once (rs_split_scatter)


def cta_cost(
    steps: int,
    block_m: int,
    split: int,
    step_cost: dict[int, float] | None = None,
    fixed: float | None = None,
    split_row: float | None = None,
) -> float:
    """One register-form CTA under the model above: its share of `steps` K steps at its tile's
    step cost, the fixed cost and, when K is split, the read-back of every split's rows. The
    constants are parameters so that benchmarks/fit_rs_cost.py refits this formula, not a copy;
    left out, the module's values at the call (benchmarks/route_ab.py sets them for a run)."""
    step_cost = RS_STEP_COST if step_cost is None else step_cost
    fixed = FIXED_STEPS if fixed is None else fixed
    split_row = SPLIT_ROW_STEPS if split_row is None else split_row
    cta = -(-steps // split) * step_cost[block_m] + fixed
    return cta + split * block_m * split_row if split > 1 else cta


def register_plans(problem: GemmProblem, sms: int, split_row: float | None = None) -> list[Plan]:
    """The register form's (token tile, K split, CTAs per SM) choices: the narrowest tile that
    holds M up to 64 rows, else 64- or 128-row tiles, from MID_MIN_M 96 rows, and from WIDE_MIN_M
    160 or 176 rows (split only from WIDE_SPLIT_MIN_M); every split leaving MIN_STEPS_PER_SPLIT
    steps or more; two CTAs per SM for tiles of up to RS_MAX_BLOCK_M_2CTAS rows."""
    m = problem.m or 1
    steps = -(-problem.k // BLOCK_K)
    n_tiles = -(-problem.n // RS_BLOCK_N)
    if m <= 64:
        widths = [next(b for b in RS_BLOCK_MS if b >= m)]
    else:
        widths = [64, *((RS_MID_BLOCK_M,) if m >= MID_MIN_M else ()), 128]
        widths += RS_WIDE_BLOCK_MS if m >= WIDE_MIN_M else ()
    plans = []
    for block_m in widths:
        tiles = -(-m // block_m) * n_tiles
        for split in range(1, MAX_SPLIT + 1):
            if split > 1 and steps // split < MIN_STEPS_PER_SPLIT:
                break
            if split > 1 and block_m in RS_WIDE_BLOCK_MS and m < WIDE_SPLIT_MIN_M:
                break
            cta = cta_cost(steps, block_m, split, split_row=split_row)
            plans.append(Plan(waves(tiles * split, sms) * cta, True, block_m, split))
            if block_m <= RS_MAX_BLOCK_M_2CTAS:
                cost = waves(tiles * split, 2 * sms) * cta * PAIR_COST
                plans.append(Plan(cost, True, block_m, split, 2))
    return plans


def narrow_n_plans(problem: GemmProblem, sms: int) -> list[Plan]:
    """The 128-column tile's (token tile, K split) choices at two CTAs per SM, priced as above:
    whole rounds of 2 x sms CTAs, then a last round of paired CTAs, or of lone ones where it holds
    at most one per SM."""
    steps = -(-problem.k // BLOCK_K)
    split_row = SPLIT_ROW_STEPS / 2  # half the columns read back per split row
    plans = []
    for block_m in N128_STEP_COST:
        tiles = output_tiles(problem, block_m, RS_NARROW_BLOCK_N)
        for split in N128_SPLITS:
            if split > 1 and steps // split < MIN_STEPS_PER_SPLIT:
                break
            cta = cta_cost(steps, block_m, split, N128_STEP_COST, N128_FIXED_STEPS, split_row)
            full, rest = divmod(tiles * split, 2 * sms)
            rounds = full + (0 if rest == 0 else N128_ALONE if rest <= sms else 1)
            plans.append(Plan(rounds * cta, True, block_m, split, 2, RS_NARROW_BLOCK_N))
    return plans


def _stream_k_plan(
    problem: GemmProblem, sms: int, block_m: int, block_n: int, step: float, fixed: float
) -> Plan:
    """A stream-K form: every resident CTA (two per SM of the 128-column tile, else one) takes an
    even share of the (tile, K step) iterations, at `step` per K step plus `fixed`."""
    ctas_per_sm = 2 if block_n == RS_NARROW_BLOCK_N else 1
    steps = -(-problem.k // BLOCK_K)
    tiles = output_tiles(problem, block_m, block_n)
    cta = -(-(tiles * steps) // (ctas_per_sm * sms)) * step + fixed
    return Plan(cta, True, block_m, 1, ctas_per_sm, block_n, stream_k=True)


def stream_plan(problem: GemmProblem, sms: int) -> Plan:
    """The 128-column tile's stream-K form on 64-row token tiles, priced as above."""
    return _stream_k_plan(
        problem, sms, 64, RS_NARROW_BLOCK_N, N128_STEP_COST[64], STREAM_FIXED_STEPS
    )


def stream_wide_plan(problem: GemmProblem, sms: int) -> Plan:
    """The 256-column tile's stream-K form on 128-row token tiles, priced as above."""
    block_m = STREAM_WIDE_BLOCK_M
    return _stream_k_plan(
        problem, sms, block_m, RS_BLOCK_N, RS_STEP_COST[block_m], STREAM_WIDE_FIXED_STEPS
    )


def shared_plan(problem: GemmProblem, sms: int) -> Plan:
    tiles = output_tiles(problem, BLOCK_M, BLOCK_N)
    steps = -(-problem.k // BLOCK_K)
    return Plan(waves(tiles, sms) * (steps * SMEM_STEP_COST + FIXED_STEPS), False)


def best_plan(
    problem: GemmProblem, caps: DeviceCaps, narrow_n: bool = False, byte_codes: bool = False
) -> Plan:
    """The cheapest plan (ties: the earlier one: narrower tiles, fewer splits); the shared-memory
    form only from M = 128, a whole tile of its rows; with `narrow_n` (codes of N128_MIN_BITS to
    4 bits) the 128-column tile (split-K, or stream-K up to STREAM_MAX_M rows) or, above that up to
    STREAM_WIDE_MAX_M rows, the 256-column stream-K form where it clears N128_MARGIN. With
    `byte_codes` (8-bit codes) up to BYTE_CODES_MAX_M rows: priced as the constants there say."""
    sms = caps.sm_count or DEFAULT_SMS
    m = problem.m or 0
    if byte_codes and m <= BYTE_CODES_MAX_M:
        plans = register_plans(problem, sms, BYTE_CODES_SPLIT_ROW_STEPS)
        plans = [with_clusters(p, problem, caps) for p in plans]
    else:
        plans = register_plans(problem, sms)
    if m >= BLOCK_M:
        plans.append(shared_plan(problem, sms))
    best = min(plans, key=lambda p: p.cost)
    if narrow_n and N128_MIN_M <= m <= N128_MAX_M:
        others = narrow_n_plans(problem, sms)
        if m <= STREAM_MAX_M:
            others.append(stream_plan(problem, sms))
        elif m <= STREAM_WIDE_MAX_M:
            others.append(stream_wide_plan(problem, sms))
        pick = min(others, key=lambda p: p.cost)
        if pick.cost < N128_MARGIN * best.cost:
            return pick
    return best


def with_clusters(plan: Plan, problem: GemmProblem, caps: DeviceCaps) -> Plan:
    """The cheapest of `plan` and, for a split-K plan, its tile's cluster forms (CLUSTER_SPLITS
    splits; see CLUSTER_SLOTS): same token tile, columns and CTAs per SM, any cluster split."""
    if plan.stream_k or not plan.registers or plan.split_k < 2:
        return plan
    sms = caps.sm_count or DEFAULT_SMS
    steps = -(-problem.k // BLOCK_K)
    tiles = output_tiles(problem, plan.block_m, plan.block_n)
    best = plan
    for split in CLUSTER_SPLITS:
        if steps // split < MIN_STEPS_PER_SPLIT:
            break
        if plan.block_n == RS_NARROW_BLOCK_N:
            cta = cta_cost(steps, plan.block_m, split, N128_STEP_COST, N128_FIXED_STEPS, 0.0)
        else:
            pair = PAIR_COST if plan.ctas_per_sm == 2 else 1.0
            cta = cta_cost(steps, plan.block_m, split, split_row=0.0) * pair
        slots = int(CLUSTER_SLOTS[plan.ctas_per_sm][split] * plan.ctas_per_sm * sms)
        cost = waves(tiles * split, slots) * cta
        if cost < best.cost:
            best = replace(plan, cost=cost, split_k=split, cluster=True)
    return best


def with_scatter(plan: Plan, problem: GemmProblem, sms: int) -> Plan:
    """A split-K plan through the workspace summed by all its splits at once, on tiles of
    SCATTER_MIN_BLOCK_M rows and more (SCATTER_MIN_BLOCK_M_2CTAS at two CTAs per SM) whose grid
    the GPU holds at once (a larger one would sum the workspace form's way anyway); any other
    plan as it is. Not priced: it replaces the reduction only."""
    if plan.stream_k or not plan.registers or plan.split_k < 2 or plan.cluster:
        return plan
    least = SCATTER_MIN_BLOCK_M_2CTAS if plan.ctas_per_sm == 2 else SCATTER_MIN_BLOCK_M
    grid = output_tiles(problem, plan.block_m, plan.block_n) * plan.split_k
    if plan.block_m < least or grid > plan.ctas_per_sm * sms:
        return plan
    return replace(plan, scatter=True)


def narrow_n(bits: int) -> bool:
    """Whether codes of `bits` bits may take the 128-column and stream-K plans (best_plan's
    `narrow_n`)."""
    return N128_MIN_BITS <= bits <= 4


def token_tile(plan: Plan, m: int) -> int:
    """The token rows of `plan`'s tiles for M rows: 48 for a 64-row plan of at most TILE48_MAX_M
    rows (see there), else the plan's."""
    narrower = plan.block_m == 64 and 32 < m <= TILE48_MAX_M
    return 48 if narrower else plan.block_m


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[WgmmaWna16Config]:
    """Configs for best_plan, best first (ring depths that fit the arch's shared memory)."""
    bits = spec.weight.dtype.bits
    plan = with_clusters(best_plan(problem, caps, narrow_n(bits), bits == 8), problem, caps)
    plan = with_scatter(plan, problem, caps.sm_count or DEFAULT_SMS)
    group_m = 8 if spec.weight_bytes(problem.n, problem.k) > (caps.l2_bytes or _DEFAULT_L2) else 1
    if not plan.registers:
        shared = partial(WgmmaWna16Config, pdl=True)
        return fitting_configs(supports, shared, STAGE_CHOICES, spec, problem, caps, group_m)

    def form(**fields) -> WgmmaWna16Config:
        return WgmmaWna16Config(
            weights_in_registers=True,
            rs_block_m=token_tile(plan, problem.m or 1),
            rs_block_n=plan.block_n,
            split_k=plan.split_k,
            rs_ctas_per_sm=plan.ctas_per_sm,
            rs_stream_k=plan.stream_k,
            rs_cluster_split=plan.cluster,
            rs_cluster_ctas=plan.cluster_ctas,
            rs_split_scatter=plan.scatter,
            pdl=True,
            **fields,
        )

    if plan.stream_k:
        stages = STREAM_STAGES
    elif plan.block_n == RS_NARROW_BLOCK_N:
        stages = N128_STAGES
    elif plan.block_m < BLOCK_M:
        stages = SMALL_M_STAGE_CHOICES
    else:
        stages = STAGE_CHOICES
    return fitting_configs(supports, form, stages, spec, problem, caps, group_m)
