"""WnA16-wgmma test cases: integer formats the family takes, at M >= 128 (its range), with M, N
and K tails against its 128x128x64 tile, plus the shared WnA16 conformance matrix filtered to what
the family supports. Checked with humming_core.testing.conformance.error_bound (the kernel rounds
each dequantized weight once to the activation type and accumulates in fp32, as wna16 does)."""

from __future__ import annotations

from wna16_cases import FORMATS, Case, conformance_cases, make_spec

from humming_core.device import GemmProblem
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.wna16_wgmma import FAMILY

SM90 = caps_for_arch("sm_90a")
# (weight dtype, zero point, scale dtypes, forced group, global scale): wna16_cases.FORMATS rows;
# the 4- and 8-bit formats of issue 6 first, then other widths (bit planes), float zero points, MX
INTEGER_FORMATS = tuple(f for f in FORMATS if f[0].startswith(("int", "uint")))
WGMMA_FORMATS = (
    ("int4", "none", ("fp16", "bf16", "fp32"), None, False),
    ("uint4", "int", ("fp16", "bf16"), None, False),
    ("uint4", "none", ("fp16", "bf16"), None, False),
    ("int8", "none", ("fp16", "bf16", "fp32"), None, False),
    ("uint8", "int", ("fp16", "bf16"), None, False),
    ("int3", "none", ("fp16", "bf16", "fp32"), None, False),
    ("uint2", "int", ("fp16", "bf16"), None, False),
    ("uint6", "float", ("fp16", "bf16"), None, False),
    ("int4", "none", ("e8m0",), 32, False),  # MXINT4
)
GROUPS = (128, 32, "channel", 64, 16)
# (M, N, K): an exact tile, M / N tails (partial CTA rows and columns), K tails (a partial last
# step zero-filled by TMA, groups past K), and a K that wraps both ring depths several times; its
# 9 x 3 tiles visit a full group of 8 M tiles and a short one of 1 (humming/memory/tile_order.cuh).
SHAPES = (
    (128, 256, 512),
    (130, 200, 136),
    (300, 136, 1040),
    (257, 520, 200),
    (1030, 384, 2048),
)


# float codes through wna16's float dequantizer (verified on an H200 in session 5)
FLOAT_FORMATS = (
    ("e2m1", "none", ("e8m0",), 32, False),  # MXFP4
    ("e4m3", "none", ("fp16", "bf16", "fp32"), None, False),
    ("e2m1", "none", ("ue4m3",), 16, True),  # NVFP4
    ("e5m2", "none", ("fp16", "bf16"), None, False),
)


def wgmma_cases(formats: tuple = WGMMA_FORMATS, first_seed: int = 2000) -> list[Case]:
    """Every format on every shape; group, act / scale / output dtype and bias rotate."""
    outs = (None, "fp32", "bf16", "fp16")
    cases = []
    for i, fmt in enumerate(formats):
        for j, (m, n, k) in enumerate(SHAPES):
            seed = first_seed + i * len(SHAPES) + j
            act = ("fp16", "bf16")[seed % 2]
            group = GROUPS[(i + j) % len(GROUPS)]
            sdt = fmt[2][seed % len(fmt[2])]
            spec = make_spec(fmt, act, group, k, seed % 3 == 0, outs[seed % 4], sdt)
            cases.append(Case(spec, m, n, k, seed))
    return cases


def supported(case: Case) -> bool:
    problem = GemmProblem(n=case.n, k=case.k, m=case.m, act_dtype=case.spec.act.dtype.name)
    return bool(FAMILY.supports(case.spec, problem, SM90))


def matrix_cases() -> list[Case]:
    """The shared WnA16 conformance cases this family takes at M >= 128 with integer codes (float
    codes are float_cases')."""
    return [
        c
        for c in conformance_cases()
        if supported(c) and c.spec.weight.dtype.kind in ("int", "uint")
    ]


def float_cases() -> list[Case]:
    """FLOAT_FORMATS on every shape, as far as the wna16 kernels take them (their layout is ours)."""
    from humming_cuda.kernels.wna16 import FAMILY as WNA16

    cases = wgmma_cases(FLOAT_FORMATS, first_seed=2500)
    return [c for c in cases if WNA16.supports(c.spec, GemmProblem(n=c.n, k=c.k, m=c.m), SM90)]


# Small M, the register form's narrow tiles (16 / 32 / 64 token rows) with K split across CTAs:
# (M, N, K, split_k). M tails in each tile width, N tails against the 256-column tile, and splits
# that do not divide the 64-deep K steps evenly (33 steps over 5 splits: 7 7 7 7 5; 3 steps over
# 2: 2 1), K tails inside a split, and a last split shorter than the ring.
SMALL_M_SHAPES = (
    (1, 256, 4096, 3),
    (9, 520, 2056, 5),
    (16, 200, 1040, 2),
    (17, 64, 136, 2),
    (33, 384, 3000, 4),
    (64, 136, 520, 1),
    (47, 1000, 8192, 16),
)


# Mid M, the register form with K split at 48-, 64-, 96- and 128-row token tiles: (M, N, K, split_k,
# rs_block_m, stages), the rings as deep as the heuristic makes them for each tile. Several M
# tiles (and an M tail in the last), N tails, uneven splits.
MID_M_SHAPES = (
    (100, 520, 2056, 3, 64, 8),
    (200, 136, 520, 2, 64, 8),
    (128, 256, 4096, 4, 128, 4),
    (130, 1000, 3000, 5, 128, 4),
    (257, 264, 1040, 2, 128, 6),
    (96, 384, 8192, 16, 128, 4),
    (96, 520, 2056, 1, 96, 4),
    (300, 264, 1040, 2, 96, 4),
    (1030, 384, 4096, 1, 96, 6),
    (40, 520, 2056, 2, 48, 4),
    (100, 1000, 1040, 1, 48, 6),
)


# Wide token tiles (160 / 176 rows, wgmma m64n160 / m64n176): (M, N, K, split_k, rs_block_m,
# stages). An exact tile, M tails in a later tile, N tails, several M tiles in the grouped order, a
# long K, and splits: the 176-row tile's split-K reduction sums 4 float4s per batch (44 per thread),
# the 160-row one's 8.
WIDE_M_SHAPES = (
    (176, 256, 1024, 1, 176, 4),
    (300, 520, 2056, 1, 176, 4),
    (1030, 384, 2048, 1, 160, 4),
    (200, 136, 1040, 3, 176, 4),
    (161, 264, 3000, 2, 160, 4),
    (352, 1000, 8192, 1, 176, 4),
)


# Persistent stream-K (rs_stream_k): (M, N, K, rs_block_m, stages). On the H200's 132 SMs: one
# tile of 64 K steps over 64 CTAs (64 partial segments, each one step); 9 tiles of 33 steps
# (segments of 2-3 steps, K tails); 34 tiles of 32 steps at 64 rows; 132 tiles of 17 steps, one
# whole tile per CTA (no partials); 160-row tiles, whole and partial ones mixed; 2 tiles of 128
# steps at M = 17 (66 segments each); 96-row tiles: 9 tiles of 33 steps, partial segments.
STREAM_SHAPES = (
    (128, 256, 4096, 128, 4),
    (300, 520, 2056, 128, 4),
    (1030, 384, 2048, 64, 4),
    (4100, 1000, 1040, 128, 4),
    (2000, 4096, 512, 160, 4),
    (17, 264, 8192, 64, 4),
    (200, 520, 2056, 96, 4),
)


# Narrow tiles with the registers split for two CTAs per SM (rs_ctas_per_sm = 2): (M, N, K,
# split_k, rs_ctas_per_sm, stages), M <= 32 (the tiles whose accumulators fit 104 registers).
TWO_CTAS_SHAPES = (
    (1, 256, 4096, 3, 2, 4),
    (16, 200, 1040, 1, 2, 4),
    (17, 64, 136, 2, 2, 4),
    (32, 520, 2056, 5, 2, 4),
    (25, 1000, 8192, 1, 2, 4),
)


# The 128-column tile (rs_block_n = 128: one consumer warpgroup, WgmmaWna16RsTile's CONSUMERS = 1):
# (M, N, K, split_k, rs_block_m, rs_ctas_per_sm, stages). Two CTAs per SM at every token tile
# from 32 to 176 rows, one at 128 rows with a deeper ring; N tails inside a tile's second layout
# column (N = 200) and past its first (N = 136, 1000: the tile's second column is not copied),
# M tails, several M tiles, uneven splits.
NARROW_N_SHAPES = (
    (64, 200, 1040, 1, 64, 2, 4),
    (128, 136, 4096, 4, 128, 2, 4),
    (100, 1000, 2056, 3, 64, 2, 4),
    (300, 520, 1040, 2, 128, 2, 4),
    (200, 520, 2056, 2, 96, 2, 4),
    (32, 264, 8192, 8, 32, 2, 4),
    (352, 384, 2048, 1, 176, 2, 3),
    (1030, 384, 4096, 1, 128, 1, 6),
    (40, 1000, 2056, 2, 48, 2, 4),  # 48-row tiles in the 128-column plans (M = 33-48)
)


# Stream-K over 128-column tiles, two CTAs per SM (264 persistent CTAs on the H200): (M, N, K,
# rs_block_m, stages: two 128-row CTAs fit 3 beside their staged parts). One tile of 64 K steps over 64 CTAs; 2 x 5 tiles of 33 steps (K tails);
# 3 tiles of 128 steps at M = 17 (partials from 128 CTAs); 33 x 8 tiles of 17 steps (whole and
# partial tiles, N tails).
NARROW_N_STREAM_SHAPES = (
    (128, 128, 4096, 128, 3),
    (300, 520, 2056, 128, 3),
    (17, 264, 8192, 64, 4),
    (4100, 1000, 1040, 128, 3),
    (40, 264, 8192, 48, 4),  # 48-row tiles in the 128-column plans (M = 33-48)
    (47, 1000, 2056, 48, 4),
)


# Cluster split-K (rs_cluster_split: a tile's splits are one cluster, summed over distributed shared
# memory): (M, N, K, split_k, rs_block_m, rs_block_n, rs_ctas_per_sm, stages). Even splits; 5
# uneven splits whose row shares (25-26 rows of 128) cut the staged rows' 8-row swizzle groups,
# several M tiles, N tails; a 32-row tile's 3 K steps over 2 splits; 8 splits (a portable
# cluster's most) of 64 rows; the 128-column tile at two CTAs per SM, N tails past its first
# layout column; 16 rows over 3 splits (5-6 rows each); 7 splits of 33 steps; a split of 4 that
# K cuts to 2 (the launch's clusters follow its grid); the 176- and 96-row tiles (88 / 48 rows a
# rank) with M and N tails; 384 CTAs in clusters of 3, several waves of clusters (routed from
# session 41 where a grid of split 2 or 3 runs several waves).
CLUSTER_SPLIT_SHAPES = (
    (128, 256, 4096, 4, 128, 256, 1, 4),
    (130, 1000, 3000, 5, 128, 256, 1, 4),
    (17, 64, 136, 2, 32, 256, 1, 4),
    (33, 384, 3000, 8, 64, 256, 1, 8),
    (300, 520, 1040, 2, 128, 128, 2, 4),
    (128, 136, 4096, 4, 128, 128, 2, 4),
    (16, 200, 1040, 3, 16, 256, 2, 4),
    (100, 1000, 2056, 7, 64, 128, 2, 4),
    (64, 256, 128, 4, 64, 256, 1, 4),
    (350, 520, 2056, 2, 176, 256, 1, 4),
    (200, 300, 1496, 2, 96, 256, 1, 6),
    (400, 8192, 1024, 3, 128, 256, 1, 4),
    (40, 384, 3000, 4, 48, 256, 1, 8),  # the 48-row tiles of M = 33-48 (TILE48_MAX_M)
    (40, 384, 3000, 4, 64, 128, 2, 4),  # the 128-column tile's M tail (routed from M = 33)
    (40, 384, 3000, 4, 48, 128, 2, 4),  # ... on 48-row tiles
)


# Clusters of fewer than a tile's splits (rs_cluster_ctas: each cluster sums its splits over
# distributed shared memory, each rank's rows then summed over the tile's clusters through the
# workspace): (M, N, K, split_k, rs_cluster_ctas, rs_block_m, rs_block_n, rs_ctas_per_sm, stages).
# Split 8 as four clusters of 2 on the 128-column tile at two CTAs per SM (4096x14336's M=128
# plan); two clusters of 4 with M and N tails and uneven K steps; 16 splits in clusters of 4 (past
# a portable cluster); three clusters of 2; a 32-row tile's 16-row shares; clusters of 3 whose
# 16-row tile gives ranks 5 / 5 / 6 rows; a split of 4 that K cuts to 3 (no common divisor with
# 2: every split its own cluster, summed through the workspace whole); the 176-row tile.
CLUSTER_GROUP_SHAPES = (
    (128, 256, 4096, 8, 2, 128, 128, 2, 4),
    (130, 1000, 3000, 8, 4, 128, 256, 1, 4),
    (64, 520, 4096, 16, 4, 64, 128, 2, 4),
    (100, 1000, 2056, 6, 2, 64, 128, 2, 4),
    (17, 300, 1040, 4, 2, 32, 256, 1, 4),
    (16, 200, 1040, 6, 3, 16, 256, 2, 4),
    (64, 256, 192, 4, 2, 64, 256, 1, 4),
    (350, 520, 2056, 4, 2, 176, 256, 1, 4),
)


# Split-K summed by all of a tile's splits at once (rs_split_scatter: each sums and stores a share
# of the rows inside M once every split has stored its partial tile): (M, N, K, split_k,
# rs_block_m, rs_block_n, rs_ctas_per_sm, stages). Split 8 of the 128-column tile at two CTAs per
# SM (4096x14336's M=128 plan); 100 rows of a 128-row tile over 5 splits (20 rows each, cutting
# the 8-row swizzle groups) with an N tail; 17 rows over 4 (4-5 rows); 16 splits (the sum's parts
# in four batches); 3 rows over 7 splits (four with no rows, which still store, count and wait);
# a split of 4 that K cuts to 3; the 176-row tile with M and N tails; the 32-row tile at two
# CTAs per SM (8192x28672's M=32 plan, 28 rows); and 1024 CTAs, more than an H100 or H200 holds
# at once, which sum the workspace form's way (the last split alone).
SCATTER_SHAPES = (
    (128, 256, 4096, 8, 128, 128, 2, 4),
    (28, 512, 4096, 8, 32, 256, 2, 4),
    (100, 1000, 3000, 5, 128, 256, 1, 4),
    (17, 300, 1040, 4, 32, 256, 1, 4),
    (64, 520, 4096, 16, 64, 128, 2, 4),
    (3, 256, 2056, 7, 16, 256, 1, 4),
    (64, 256, 192, 4, 64, 256, 1, 4),
    (350, 520, 2056, 4, 176, 256, 1, 4),
    (4096, 4096, 1024, 2, 128, 256, 1, 4),
    (44, 520, 4096, 8, 48, 256, 1, 8),  # the 48-row tiles of M = 33-48 (TILE48_MAX_M)
    (44, 520, 4096, 8, 64, 128, 2, 4),  # the 128-column tile's M tail (routed from M = 33)
    (44, 520, 4096, 8, 48, 128, 2, 4),  # ... on 48-row tiles
)


def small_m_cases(first_seed: int = 3000, shapes=SMALL_M_SHAPES) -> list[tuple[Case, tuple]]:
    """(case, launch fields) of `shapes` (M, N, K, fields...) over the own formats and the float
    ones, rotating groups and dtypes as wgmma_cases does."""
    outs = (None, "fp32", "bf16", "fp16")
    formats = WGMMA_FORMATS + FLOAT_FORMATS
    cases = []
    for j, (m, n, k, *fields) in enumerate(shapes * 2):
        seed = first_seed + j
        fmt = formats[(3 * j) % len(formats)]
        act = ("fp16", "bf16")[seed % 2]
        group = fmt[3] if fmt[3] is not None else GROUPS[j % len(GROUPS)]
        spec = make_spec(
            fmt, act, group, k, seed % 3 == 0, outs[seed % 4], fmt[2][seed % len(fmt[2])]
        )
        cases.append((Case(spec, m, n, k, seed), tuple(fields)))
    return cases
