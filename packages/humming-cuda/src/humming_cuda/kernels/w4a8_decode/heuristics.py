"""Which problems the W4A8 decode kernel takes (w8a8's W4A8 specs at M <= 16 on sm_90) and its
config: one n8 block of tokens up to M = 8 on a 64-row tile, two above on a 128-row tile, split
along K to about eight CTAs per SM."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..split_k import clamp_split, pow2_fill
from ..w8a8 import heuristics as w8a8
from ..w8a8.config import W8a8Format
from ..warp_tile import staged_candidates
from ..wna16.heuristics import DEFAULT_SMS
from .config import W4a8DecodeConfig

MAX_M = 16  # two n8 blocks of tokens (include/humming/kernel/w4a8_decode.cuh)
ONE_BLOCK_M = 8  # up to here one block: half the MMAs and accumulators
# One token block (M <= 8): 16 weight rows per warp (one 16-row MMA block), four warps, three
# stages of two slabs: the H200 sweep's choice (benchmarks/notes/session24.md, W4A8_FP8, us):
# 57344x8192 M=1 80.3 (32 rows per warp: 91.7 unsplit, 81.8 split 4), 8192x28672 M=1 53.9 at
# split 8, 6144x4096 M=1 11.5 at split 4 (the best of 64 variants each: 78.4, 49.9, 10.0).
# Two token blocks (M = 9-16): 32 rows per warp, whose weight conversions both token blocks share,
# and two stages: 57344x8192 M=16 91.2 us at split 2 (16 rows per warp: 112.4 at best),
# 8192x28672 M=16 66.1 at split 8 (69.1), 6144x4096 M=16 12.8 at split 8 (13.7).
TILES = {
    8: {"m_frags": 1, "n_frags": 2, "warps_m": 1, "warps_n": 4, "stages": 3, "slabs": 2},
    16: {"m_frags": 1, "n_frags": 4, "warps_m": 1, "warps_n": 4, "stages": 2, "slabs": 2},
}
# The one-block tile of integer nibbles on a grid left unsplit (layers of many tiles: 57344x8192's
# 896) takes two stages: more CTAs per SM (25 KB each). Same-run H100 sweeps
# (benchmarks/notes/session48.md, session48/h100/decode_stages.json; session 47's run161 agrees):
# W4A8_FP8 57344x8192 M = 1 / 4 / 8 91.5 / 92.5 / 93.3 us against 108.9 / 111.0 / 108.8 at three
# (the peer 89.8-90.9); route A/B (ab_decode.json) W4A8_FP8 M=1 / 8 0.85x / 0.83x, W4A8_INT8 M=1
# 0.86x, but MXFP4_A8 M=1 1.09x (e2m1 nibbles keep three). On the split layers two stages tied or
# lost (8192x28672 M=1 62.7 vs 58.3), so they keep three. The H200 sweep that chose three
# (session24/decode_sweep5.json) had W4A8_FP8 57344x8192 M=1 unsplit at 80.5 us with two, 80.3
# with three.
UNSPLIT_ONE_BLOCK_STAGES = 2
UNSPLIT_TWO_STAGE_WEIGHTS = ("int4", "uint4")
# Split K until the CTAs reach SPLIT_CTAS_PER_SM per SM (a power of two, at most MAX_SPLIT, and at
# least 4 stages per split): the one-block tile (37.5 KB) fits five CTAs per SM, and the sweep's
# best splits put 7-8 CTAs per SM on the layers with few tiles (fewer left 8192x28672 M=1 at 57-62
# us); the two-block tile's best splits follow the same rule (2, 8 and 8 above).
SPLIT_CTAS_PER_SM = 8
MAX_SPLIT = 8


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    base = w8a8.supports(spec, problem, caps)
    if not base:
        return base
    if W8a8Format.from_spec(spec).weight_bits != 4:
        return Support.no(
            f"{spec.weight.dtype.name} weights: the w4a8_decode kernel reads the W4A8 nibble "
            "layout (4-bit weights); 8-bit weights run on w8a8"
        )
    if not caps.arch.startswith("sm_90"):
        return Support.no(
            f"{caps.arch}: the w4a8_decode kernel is built for sm_90, which has no fp8 mma.sync "
            "(ptxas lowers it to fp16 MMAs); elsewhere w8a8's 8-bit MMAs run W4A8"
        )
    if problem.m is not None and problem.m > MAX_M:
        return Support.no(
            f"M={problem.m}: the w4a8_decode kernel takes M <= {MAX_M} (two n8 blocks of tokens)"
        )
    return Support.yes()


# Two token blocks (M = 9-16) only on layers of at least this many weights: same run
# (benchmarks/notes/session24/family_compare_m16.json, us, w4a8_decode vs w8a8): 57344x8192 92.0
# vs 119.3, 8192x28672 67.2 vs 76.6, but 4096x14336 30.2 vs 26.9 and 6144x4096 13.0 vs 12.8 (M=9:
# 12.6 vs 12.5). At M <= 8 it was the faster on all four layers (run 24: 0.71-0.98x the time).
TWO_BLOCK_MIN_WEIGHTS = 1 << 27


def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Always with one block of tokens; with two only on layers of TWO_BLOCK_MIN_WEIGHTS or more
    (smaller ones are left to w8a8)."""
    if (problem.m or 1) <= ONE_BLOCK_M:
        return True
    return problem.n * problem.k >= TWO_BLOCK_MIN_WEIGHTS


def pick_split_k(problem: GemmProblem, cfg: W4a8DecodeConfig, caps: DeviceCaps) -> int:
    """See SPLIT_CTAS_PER_SM."""
    tiles = -(-problem.n // cfg.block_n)  # M <= 16: one row of tiles
    stages = -(-problem.k // cfg.stage_k)
    split = pow2_fill(SPLIT_CTAS_PER_SM * (caps.sm_count or DEFAULT_SMS), tiles)
    return clamp_split(min(split, MAX_SPLIT), stages)


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W4a8DecodeConfig]:
    """The decode tile of its token count (at most TILES' stages, as many as fit; the one-block
    tile of integer nibbles unsplit UNSPLIT_ONE_BLOCK_STAGES), split by `pick_split_k` when its
    tiles alone would not fill the GPU; the unsplit form follows. Empty when `supports` says no."""
    if not supports(spec, problem, caps):
        return []
    tokens = 8 if (problem.m or 1) <= ONE_BLOCK_M else 16
    first = W4a8DecodeConfig(arch=caps.arch, pdl=caps.has("pdl"), tokens=tokens, **TILES[tokens])
    split = pick_split_k(problem, first, caps)  # the stages do not move it
    integer = W8a8Format.from_spec(spec).weight in UNSPLIT_TWO_STAGE_WEIGHTS
    if split == 1 and tokens == ONE_BLOCK_M and integer:
        first = first.with_fields(stages=UNSPLIT_ONE_BLOCK_STAGES)
    configs = staged_candidates(first, caps)
    if split > 1 and configs:
        configs.insert(0, configs[0].with_fields(split_k=split))
    return configs
