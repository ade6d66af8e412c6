"""W4A8-wgmma test cases: the 4-bit x e4m3 formats of w8a8_cases whose weight groups are whole
128-deep K blocks, at M > 16 (the family's range), on the wgmma shapes (M, N, K tails against the
128x128x128 tile, a K that wraps the 6-stage ring). The bound is w8a8_cases.error_bound: the
kernel promotes each 128-deep K block times its group's scale in fp32, as that bound assumes."""

from __future__ import annotations

from w8a8_cases import Case, make_w4_spec
from w8a8_wgmma_cases import SHAPES, SPLIT_K, SPLIT_SHAPES, STAGED_TAIL_SHAPES

# (weight dtype, activation code, act mode, weight group, scale dtype)
W4_WGMMA_FORMATS = (
    ("int4", "e4m3", "token", 128, "fp16"),  # W4A8_FP8
    ("int4", "e4m3", "static", 256, "fp32"),
    ("e2m1", "e4m3", "token", 128, "bf16"),
)


def _rotated_cases(shapes, first_seed: int) -> list[Case]:
    """Every format on every shape; output dtype, bias and input dtype rotate deterministically."""
    outs = ("bf16", "fp16", "fp32")
    cases = []
    for i, fmt in enumerate(W4_WGMMA_FORMATS):
        for j, (m, n, k) in enumerate(shapes):
            seed = first_seed + i * len(shapes) + j
            spec = make_w4_spec(*fmt, bias=seed % 2 == 1, out=outs[seed % 3])
            cases.append(Case(spec, ("bf16", "fp16")[seed % 2], m, n, k, seed))
    return cases


# M <= 32: the 32-token tile on two CTAs per SM (M = 40 and 64 of SHAPES take the 64-token one);
# N and K tails against it.
NARROW_SHAPES = ((20, 264, 384), (32, 200, 2000))


def wgmma_cases() -> list[Case]:
    return _rotated_cases((*SHAPES, *NARROW_SHAPES), 3000)


def split_cases() -> list[Case]:
    """Every format on w8a8_wgmma's split-K shapes and M = 24 (a 32-token tile; 17 K blocks less a
    tail: 2, 3 and 5 splits
    run uneven ranges; 2 splits, 9 + 8 blocks, cut a 256-deep group in two, so each split must
    scale its blocks by their own group's scale)."""
    return _rotated_cases((*SPLIT_SHAPES, (24, 264, SPLIT_K)), 3500)


def staged_tail_cases() -> list[Case]:
    """Every format on w8a8_wgmma's staged tail shapes (N tails of 6 columns: a warpgroup's 64
    weight rows leave by bulk copies or, for the last few, by register stores)."""
    return _rotated_cases(STAGED_TAIL_SHAPES, 3800)
