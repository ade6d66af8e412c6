"""W8A8-wgmma test cases: the e4m3 formats of w8a8_cases at M >= 128 (the family's range), with
M, N and K tails against its 128x128x128 tile, and split-K cases. The error bound is
w8a8_cases.error_bound: the kernel promotes every 128-deep K block into fp32 exactly as that bound
assumes (split-K only changes the order in which the fp32 block totals are added)."""

from __future__ import annotations

from w8a8_cases import Case, make_spec

# (code, act mode, weight scale): W8A8_FP8, FP8_BLOCK128, and the other e4m3 scale combinations
FP8_FORMATS = (
    ("e4m3", "token", "channel"),
    ("e4m3", "group", "block"),
    ("e4m3", "static", "tensor"),
    ("e4m3", "group", "channel"),
    ("e4m3", "token", "block"),
)
# (M, N, K): exact tiles, then M / N tails (partial CTA rows and columns, N blocks of scales) and
# K tails (a partial last stage filled with zeros by TMA), and a K that wraps the 6-stage ring; its
# 9 x 3 tiles visit a full group of 8 M tiles and a short one of 1 (humming/memory/tile_order.cuh).
SHAPES = (
    (40, 264, 384),  # M > 16 but below one tile: rows past M are TMA zeros, never stored
    (128, 256, 512),
    (130, 200, 272),
    (300, 136, 1040),
    (257, 520, 144),
    (1030, 384, 2048),
)


def _rotated_cases(shapes, first_seed: int, parity: int) -> list[Case]:
    """Every format on every shape; output dtype, bias (seeds of `parity`) and input dtype rotate
    deterministically with the seed."""
    outs = ("bf16", "fp16", "fp32")
    cases = []
    for i, fmt in enumerate(FP8_FORMATS):
        for j, (m, n, k) in enumerate(shapes):
            seed = first_seed + i * len(shapes) + j
            spec = make_spec(*fmt, bias=seed % 2 == parity, out=outs[seed % 3])
            cases.append(Case(spec, ("bf16", "fp16")[(seed + 1 - parity) % 2], m, n, k, seed))
    return cases


# Staged output rows (config.staged_store) with an N tail of 6 columns: the full column tiles leave
# by bulk copies, the last (6 columns, not a whole 16 bytes) from registers, in one launch.
STAGED_TAIL_SHAPES = ((130, 262, 272), (300, 390, 400))


def staged_tail_cases() -> list[Case]:
    """Every format on the staged tail shapes."""
    return _rotated_cases(STAGED_TAIL_SHAPES, 3000, 0)


def wgmma_cases() -> list[Case]:
    """Every format on every shape."""
    return _rotated_cases(SHAPES, 1000, 1)


# Split-K (config.split_k, a launch parameter: one compiled kernel runs every split count). K = 17
# blocks of 128 less 48 (a K tail), so 2, 3 and 5 splits run uneven ranges (9 + 8, 6 + 6 + 5,
# 4 + 4 + 4 + 4 + 1). M = 40 and 64: the second consumer warpgroup has no rows (it computes
# nothing) and activations come in 64-row boxes (24 rows of TMA zeros, then none); M = 100: it has
# 36 rows; M = 130: a second M tile, whose first warpgroup has 2 rows, second none.
SPLITS = (2, 3, 5)
SPLIT_K = 17 * 128 - 48
SPLIT_SHAPES = (
    (40, 264, SPLIT_K),
    (64, 520, SPLIT_K),
    (100, 200, SPLIT_K),
    (130, 136, SPLIT_K),
)


def split_cases() -> list[Case]:
    """Every format on every split shape (each runs every count of SPLITS and unsplit)."""
    return _rotated_cases(SPLIT_SHAPES, 2000, 0)
