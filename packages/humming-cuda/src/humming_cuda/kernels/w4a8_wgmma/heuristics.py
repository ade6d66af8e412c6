"""Which specs and problems the W4A8-wgmma family runs (4-bit weights x e4m3 activations on sm_90a,
M > 16), and its configs.

Decode-size M (<= 16) stays with the mma.sync W8A8 family (its W4A8 kernels read the same packed
weights), so `supports` refuses it with a reason and CudaDevice moves on; every larger M runs here.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..act_quant import unsupported_reason
from ..w8a8.config import W8a8Format
from ..w8a8_wgmma.heuristics import MIN_M, WGMMA_FORM, split_first, staged_where_measured
from ..wgmma_tile import arch_reason, fitting_configs, output_tiles, problem_reason, waves
from ..wna16.heuristics import DEFAULT_SMS
from .config import BLOCK_K, BLOCK_M, BLOCK_N, TWO_CTA_BLOCK_M, W4a8WgmmaConfig

WEIGHTS = ("int4", "e2m1")  # 4-bit codes whose every value is exact in e4m3
STAGE_CHOICES = (4, 6)
# Tiles of fewer tokens for M <= 64 (wgmma N 32 / 64 in the out^T form; 32-token tiles on two CTAs
# per SM), with deeper rings: a stage carries 8 KB of weights and only 4-8 KB of activations.
# H200, benchmarks/wgmma_config_sweep.py (one run, session 23), us at M = 32: 57344x8192 126.4
# (32-token tile, two CTAs) vs 144.9 (one CTA) vs 222.3 (128-token tile); 8192x28672 70.2 (split 4)
# vs 159.8 (128 tokens, unsplit); 4096x14336 28.4 (split 8) vs 82.8. At M = 64 the 64-token tile
# beat the 128-token one at every split on all four layers (57344x8192 158.4 vs 193.7).
# With them this family beat the mma.sync W4A8 kernels at M = 32 on every layer of KERNELS.md
# (benchmarks/family_compare.py, same run: 1.5x on 6144x4096, 1.75x on 4096x14336, 2.2x on the two
# big ones), so it takes every M above decode size (no `prefers`; until session 23 it left M <= 64
# on small grids to them).
NARROW_BLOCK_MS = (32, 64)
NARROW_STAGE_CHOICES = (6, 4)
# Wide token tiles at large M (out^T form, staged rows, 4 stages): a tile of t tokens takes
# TOKEN_TILE_COST[t] times a 128-token tile's time, so a grid of fewer, wider tiles wins where it
# needs enough fewer waves. H200, benchmarks/wgmma_config_sweep.py --set rs_block_m=128,160,176
# (session 32, notes/session32.md), time per wave against the 128-token tile's at 7 points:
# 160 tokens 1.16-1.20, 176 tokens 1.18-1.25 (the slab's expansion, the same per tile, is spread
# over more tokens). The model picks the sweep's fastest tile at all 7: 176 at 8192x28672 M=4096
# (1892.6 against 2051.3 us), 57344x8192 M=1024 (957.4 / 1044.3), 8192x28672 M=1024 (474.5 /
# 520.6), 6144x4096 and 4096x14336 at M=4096; 128 at 4096x14336 M=1024 (2 waves either way).
TOKEN_TILE_COST = {BLOCK_M: 1.0, 160: 1.19, 176: 1.225}
WIDE_MIN_M = 1024
WIDE_STAGES = 4
# Split plans through the workspace summed by all of a tile's splits at once (split_scatter: each
# split stores its partial, waits for the others on the tile's counter, then sums and stores its
# share of the tokens; kernel/wgmma_cta.cuh reduce_wgmma_scatter) instead of the last split
# reading them all back alone: where the grid is resident at once and each split runs at least
# SCATTER_MIN_SPLIT_BLOCKS K blocks, from register stores (a plan with staged rows keeps them).
# H100, same run (session 45, notes/session45/h100/sweep_act8*.json), us, workspace -> scatter:
# 8192x28672 M = 17 / 32 (32 tokens, split 4: 56 blocks) 70.0 -> 63.9, 71.2 -> 65.0, M=48
# (64 tokens, split 2: 112 blocks) 80.2 -> 71.2; shorter splits did not gain: 4096x14336 M=64
# (28 blocks) 29.0 / 28.9, M=32 (14 blocks) 25.8 -> 26.9, 6144x4096 M = 32 / 64 (7 / 16 blocks)
# 16.1 -> 16.8, 17.2 -> 17.7 (the splits that finish first wait for the last instead of leaving
# the SM). W8A8-wgmma's plans (split 2-4 of 128-row tiles) gained nowhere in the same runs
# (0.97-1.00x at 6 points) and stay unrouted.
SCATTER_MIN_SPLIT_BLOCKS = 56


def _spec_reason(spec: QuantSpec) -> str:
    w, act = spec.weight, spec.act
    if not act.is_quantized or act.dtype.name != "e4m3" or w.dtype.name not in WEIGHTS:
        return (
            f"weights {w.dtype.name!r} x activations {act.dtype.name!r}: the w4a8_wgmma family "
            f"multiplies {' / '.join(WEIGHTS)} weights by e4m3 activations (W4A8_FP8)"
        )
    reason = unsupported_reason(act)
    if reason:
        return reason
    if act.granularity == "group":
        return "the w4a8_wgmma family takes per-token or static activation scales"
    if w.zero_point != "none" or w.global_scale:
        return "the w4a8_wgmma family takes 4-bit weights without zero points or global scales"
    fmt = W8a8Format.from_spec(spec)
    if fmt.weight_scale != "group":
        return (
            f"weight scale granularity {fmt.weight_scale!r}: the w4a8_wgmma family takes group "
            "scales (W4A8 checkpoints' form); other 4-bit scalings use the w8a8 family"
        )
    if fmt.group % BLOCK_K:
        return (
            f"weight group {fmt.group}: the w4a8_wgmma family applies group scales once per "
            f"{BLOCK_K}-deep K block, so groups must be multiples of {BLOCK_K} (smaller groups, "
            "e.g. MXFP4's 32, use the w8a8 family)"
        )
    e = spec.epilogue
    if e.activation != "none" or e.glu != "none" or e.topk_weight or spec.layout != "dense":
        return "the w4a8_wgmma family computes dense GEMMs with scales and bias only"
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or arch_reason(caps, "w4a8_wgmma", WGMMA_FORM, "e4m3", fallback="w8a8")
        or problem_reason(problem, "w4a8_wgmma", fallback="w8a8", act_bytes=1, min_m=MIN_M)
    )
    return Support.no(reason) if reason else Support.yes()


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W4a8WgmmaConfig]:
    """Configs for this problem, best first: at M <= 64 the narrow token tile's ring depths, then
    the 128-token tile's that fit the arch's shared memory; each group split along K as
    w8a8_wgmma splits its grids of fewer tiles than CTA slots, then unsplit."""
    wide = fitting_configs(supports, W4a8WgmmaConfig, STAGE_CHOICES, spec, problem, caps)
    wide = staged_where_measured(wide, spec, problem, caps)
    tokens = token_tile(problem.m or BLOCK_M)
    if not wide or tokens == BLOCK_M:
        wide = wide_tokens_first(split_first(wide, problem, caps), problem, caps)
        return scatter_where_measured(wide, problem, caps)
    ctas = 2 if tokens == TWO_CTA_BLOCK_M else 1
    narrow = [
        W4a8WgmmaConfig(arch=caps.arch, stages=s, rs_block_m=tokens, rs_ctas_per_sm=ctas)
        for s in NARROW_STAGE_CHOICES
    ]
    narrow = [c for c in narrow if c.fits_smem(caps)]
    configs = split_first(narrow, problem, caps) + split_first(wide, problem, caps)
    return scatter_where_measured(configs, problem, caps)


def scatter_where_measured(
    configs: list[W4a8WgmmaConfig], problem: GemmProblem, caps: DeviceCaps
) -> list[W4a8WgmmaConfig]:
    """`configs` with the first config's split_scatter form first where that config splits
    through the workspace from register stores, each split runs at least
    SCATTER_MIN_SPLIT_BLOCKS K blocks and its grid is resident at once (rs_ctas_per_sm CTAs per
    SM); else `configs` unchanged."""
    first = configs[0] if configs else None
    if first is None or first.split_k < 2 or first.cluster_split or first.staged_store:
        return configs
    if -(-problem.k // BLOCK_K) // first.split_k < SCATTER_MIN_SPLIT_BLOCKS:
        return configs
    grid = output_tiles(problem, first.block_m, first.block_n) * first.split_k
    if grid > first.ctas_per_sm * (caps.sm_count or DEFAULT_SMS):
        return configs
    return [first.with_fields(split_scatter=True), *configs]


def token_tile(m: int) -> int:
    """The fewest tokens per tile (32, 64 or 128) that hold all M rows, 128 beyond."""
    return next((t for t in NARROW_BLOCK_MS if m <= t), BLOCK_M)


def wide_token_tile(problem: GemmProblem, caps: DeviceCaps) -> int:
    """The token tile (128, 160 or 176) of the fewest modelled whole waves x TOKEN_TILE_COST, ties
    to the narrower; 128 below WIDE_MIN_M."""
    m = problem.m or BLOCK_M
    if m < WIDE_MIN_M:
        return BLOCK_M
    sms = caps.sm_count or DEFAULT_SMS
    columns = -(-problem.n // BLOCK_N)

    def cost(tokens: int) -> float:
        return waves(-(-m // tokens) * columns, sms) * TOKEN_TILE_COST[tokens]

    return min(TOKEN_TILE_COST, key=cost)


def wide_tokens_first(
    configs: list[W4a8WgmmaConfig], problem: GemmProblem, caps: DeviceCaps
) -> list[W4a8WgmmaConfig]:
    """`configs` (128-token tiles) with the wide token tile's config first where the model picks
    one: unsplit, WIDE_STAGES deep, with the first config's staged rows."""
    tokens = wide_token_tile(problem, caps)
    if tokens == BLOCK_M or not configs or configs[0].split_k > 1:
        return configs
    update = {"rs_block_m": tokens, "stages": WIDE_STAGES}
    first = configs[0].with_fields(**update)
    return [first, *configs] if first.fits_smem(caps) else configs
