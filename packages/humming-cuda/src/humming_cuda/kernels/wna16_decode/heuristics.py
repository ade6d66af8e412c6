"""Which problems the decode WnA16 kernel takes (M <= 16, wna16's specs but float zero points,
NVIDIA mma.sync arches) and its config: wna16's decode tile with this kernel's split-K choice, one
n8 block of tokens up to M = 8 and two above."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..split_k import clamp_split, pow2_fill
from ..wna16 import heuristics as wna16
from ..wna16.config import KernelFormat
from .config import Wna16DecodeConfig

MAX_M = 16  # two n8 blocks of tokens (include/humming/kernel/wna16_decode.cuh)
ONE_BLOCK_M = 8  # up to here one block: half the MMAs and accumulators
# Two token blocks (M = 9-16) against wna16, H200, same run (notes/wna16_decode.md, session 12):
# integer codes with groups of 64 or more were 1.04-1.13x wna16's speed at 6 of 9 points and
# 0.97-0.99x at 3; MXFP4 (32-element groups) and NVFP4 (16) were 0.91-1.00x at 4: the kernel
# rescales fp32 partial sums once per group, 4-8x as often as with 128-element groups.
MIN_GROUP_TWO_BLOCKS = 64


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    base = wna16.supports(spec, problem, caps)
    if not base:
        return base
    if spec.weight.zero_point == "float":
        return Support.no(
            "float zero points (w * s - z) are applied per weight: the wna16_decode kernel scales "
            "fp32 partial sums per group, so that form runs on the wna16 family"
        )
    if problem.m is not None and problem.m > MAX_M:
        return Support.no(
            f"M={problem.m}: the wna16_decode kernel takes M <= {MAX_M} (two n8 blocks of tokens)"
        )
    return Support.yes()


def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Always with one block of tokens; with two only for per-channel scales or groups of at least
    MIN_GROUP_TWO_BLOCKS (smaller groups are left to wna16)."""
    if (problem.m or 1) <= ONE_BLOCK_M:
        return True
    group = spec.weight.scale.group_size
    return group is None or group >= MIN_GROUP_TWO_BLOCKS


def pick_split_k(
    problem: GemmProblem, cfg: Wna16DecodeConfig, caps: DeviceCaps, deep: bool = False
) -> int:
    """Split K into the largest power of two that keeps the CTAs within one wave of two per SM,
    and in two when the tiles alone make more than that wave (shorter waves). H200, W4A16 g128, M=1
    (notes/wna16_decode_split_sweep_*.json, us at split 1/2/4): 28672x4096 (224 tiles) 25.5 / 28.5
    / 29.2, 57344x8192 (448) 91.7 / 85.7 / 91.5, 8192x28672 (64) - / 49.8 / 44.1 (8: 45.8),
    6144x4096 M=8 (48) - / 11.2 / 10.7. Keeps >= 4 K iterations per split and at most 16 splits.
    `deep`: for `cfg` run with DEEP_K_STEPS (the split measured for 4 steps per warp), which keeps
    K whole where the tiles alone exceed the wave: H100, same run (notes/session35.md,
    session35/h100/decode_split16.json), W4A16 g128 57344x8192 (896 tiles) M=16 85.9 us against
    95.8 at split 2, 112.3 at 4; M=12 90.4 against 94.5."""
    tiles = -(-problem.n // cfg.block_n)
    iters = -(-problem.k // cfg.block_k)
    wave = 2 * (caps.sm_count or wna16.DEFAULT_SMS)
    if tiles > wave:
        return clamp_split(1 if deep else 2, iters)
    return clamp_split(pow2_fill(wave, tiles), iters)


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[Wna16DecodeConfig]:
    """wna16's first tile for this decode-size problem, split by `pick_split_k`; empty when
    `supports` says no."""
    if not supports(spec, problem, caps):
        return []
    m = problem.m if problem.m is not None else 1
    # the tile wna16 picks for M <= 8 (sized for this kernel at decode) serves both token counts
    decode = GemmProblem(n=problem.n, k=problem.k, m=min(m, ONE_BLOCK_M))
    first = wna16.candidates(spec, decode, caps)
    if not first:
        return []
    # wna16's candidates fit the arch's shared memory already; the split does not change it
    fields = first[0].model_dump(exclude={"family"})
    if m > ONE_BLOCK_M:
        # Two token blocks double the accumulators (totals and per-group partials): at two CTAs
        # of 256 threads per SM (128 registers) ptxas spills them, so the tile keeps one warp
        # along N (128 threads, 255 registers at two CTAs per SM).
        fields.update(tokens=16, warps_n=1)
    config = Wna16DecodeConfig(**fields)
    deep = config.with_fields(k_steps=DEEP_K_STEPS)
    group = spec.weight.scale.group_size
    use_deep = (
        config.tokens == 16
        and (group is None or group >= MIN_GROUP_TWO_BLOCKS)  # <= 8 group rows per stage
        and 2 * KernelFormat.from_spec(spec).smem_bytes(deep) <= caps.smem_per_block
    )
    # the deep tile's split is the one chosen for 4 steps per warp (as measured)
    split = pick_split_k(problem, config, caps, deep=use_deep)
    if use_deep:
        ctas, config = 2, deep
    else:
        ctas = ctas_per_sm(spec, problem, config, split, caps)
    return [config.with_fields(split_k=split, ctas_per_sm=ctas, pdl=caps.has("pdl"))]


# The two-block tile with 8 k16 steps per warp (each warp then covers 128 of K per stage: one
# rescale of its fp32 partial sums per 128-group instead of two), where two CTAs' shared memory
# fits (2 x 98.5 KB at 4-bit: sm_90 / sm_100, not the 99-163 KB arches). H200, same run, W4A16
# g128 M=16 (benchmarks/notes/session16.md), k_steps 4 -> 8 at two CTAs per SM: 8192x28672 48.5
# -> 42.8 us, 6144x4096 9.8 -> 9.1, 4096x14336 15.5 -> 14.6, 57344x8192 M=12 107.3 -> 93.7; and
# against k_steps 4 at three CTAs per SM (the choice before): 57344x8192 M=16 95.1 -> 94.4. At
# three CTAs k_steps 8 was slower (111.7 and 48.9 us), and at one token block (M <= 8) too
# (57344x8192 M=1 71.2 -> 84.3 us).
DEEP_K_STEPS = 8


def ctas_per_sm(
    spec: QuantSpec, problem: GemmProblem, cfg: Wna16DecodeConfig, split: int, caps: DeviceCaps
) -> int:
    """3 for the two-block tile when its grid is longer than a wave of two CTAs per SM and its
    groups are the ones `prefers` gives it (smaller groups spill at 168 registers), else 2.
    H200, same run (notes/session15.md), W4A16 g128 M=16, registers capped for 3 against 2:
    57344x8192 (1792 CTAs) 94.4 vs 109.5 us, M=12 94.6 vs 109.7, AWQ 100.9 vs 105.3; the one-wave
    grids of 8192x28672 / 4096x14336 / 6144x4096 (256, 256, 192 CTAs) 0.97-0.98x."""
    group = spec.weight.scale.group_size
    if cfg.tokens != 16 or (group is not None and group < MIN_GROUP_TWO_BLOCKS):
        return 2
    ctas = -(-problem.n // cfg.block_n) * split
    return 3 if ctas > 2 * (caps.sm_count or wna16.DEFAULT_SMS) else 2
