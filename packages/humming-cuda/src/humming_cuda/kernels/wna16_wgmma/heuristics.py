"""Which specs and problems the WnA16-wgmma family runs (sm_90a), and its configs.

From M = 128 on, `prefers` leaves grids too small to fill the GPU to the split-K mma.sync
kernels. Below, only the register-A form's narrow tiles (16 / 32 / 64 token rows, K split across
CTAs) serve, for M in SMALL_M_RANGE; other small M goes to the mma.sync families. An unknown M
is refused with a reason.
"""

from __future__ import annotations

from functools import partial

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wgmma_tile import BLOCK_M, BLOCK_N, arch_reason, fitting_configs, problem_reason
from ..wna16.heuristics import DEFAULT_SMS
from ..wna16.heuristics import _spec_reason as wna16_spec_reason
from .config import BLOCK_K, RS_BLOCK_MS, RS_BLOCK_N, WgmmaWna16Config

WGMMA_FORM = "wgmma.m64nNk16"
STAGE_CHOICES = (4, 6)  # 4 x tiles cover the dequantization's lag; 6 as the deeper alternative
# The kernel has no split-K, so below ~0.7 tiles per SM it leaves SMs idle and the split-K wna16
# kernels win. H200, W4A16 g128, same run (2026-11-29): 64 tiles (4096x14336, M=256) 179 us
# here vs 156 us wna16, 64 tiles (8192x28672, M=128) 361 vs 224; 96 tiles (6144x4096, M=256)
# 55 vs 81; 448 tiles (57344x8192, M=128) 427 vs 430.
MIN_TILES_PER_SM = 0.7
# Grouped tile order (humming/memory/tile_order.cuh) pays off only when the weights overflow L2:
# H200, W4A16 g128 at M=4096, launch order vs groups of 8: 57344x8192 (235 MB) 10161 vs 9439 us,
# 8192x28672 (117 MB, M=1024) 1186 vs 1183, 6144x4096 (13 MB) 483 vs 538.
_DEFAULT_L2 = 50 * 2**20  # H100 / H200 L2, for caps rows without a measured size
# A 256 x 128 register-A tile (weights_in_registers, producer, 4 fragment buffers) takes this many
# times as long as a 128 x 128 shared-memory tile of the same K: 1.2-1.5 on the H200 (same run,
# 2026-11-30, wgmma_config_sweep --family wna16_wgmma, one wave each: W4A16 g128 4096x14336 M=512
# 199 vs 150 us, 8192x28672 M=256 404 vs 297; W8A16 4096x14336 M=512 182 vs 154). The register
# form is chosen when its waves at this cost beat the shared-memory form's: W4A16 g128 57344x8192
# M=256 474 vs 611 us, M=2048 3621 vs 4781; 8192x28672 M=512 400 vs 591; 6144x4096 M=512 61 vs 81;
# W8A16 8192x28672 M=1024 723 vs 1194.
RS_TILE_COST = 1.4
# M the narrow register-form tiles take from the mma.sync kernels (wna16_decode below, wna16
# above): 17-64, and 9-16 for 8-bit codes. H200, same runs (2026-11-30,
# benchmarks/notes/session10_wna16_small_m.md): W8A16 57344x8192 M=16 152 us here vs 206 in
# wna16, 8192x28672 M=16 65-72 vs 99; W4A16 g128 57344x8192 M=64 228 vs 243, 4096x14336 M=32
# 31 vs 34; but at M=16 4-bit codes stay faster in wna16 (57344x8192 159 vs 114 us, MXFP4 184
# vs 123): twice the weights per byte streamed make the dequantization the bottleneck there.
SMALL_M_RANGE = (17, 64)
SMALL_M_MIN_WIDE_CODES = 9  # the range's start for 8-bit codes
SMALL_M_STAGE_CHOICES = (8, 6, 4)  # deep rings: at small M the kernel streams weights
# Split-K's cost model (register form, one CTA per SM): a CTA takes its K steps plus this many
# steps' worth of fixed cost (filling the ring, the workspace round trip); the split count that
# finishes its waves first wins, with at least MIN_STEPS_PER_SPLIT 64-deep steps per split.
SPLIT_OVERHEAD_STEPS = 6
MIN_STEPS_PER_SPLIT = 8
MAX_SPLIT = 16


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


def small_m(problem: GemmProblem) -> bool:
    """Whether M is below one 128-row tile: the register form's narrow tiles compute it."""
    return (problem.m or 0) < BLOCK_M


def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Small M: whether M is in SMALL_M_RANGE (from SMALL_M_MIN_WIDE_CODES for 8-bit codes). Else
    whether the grid of 128x128 tiles is large enough for this family to beat wna16's split-K."""
    m = problem.m or 0
    if small_m(problem):
        low = SMALL_M_MIN_WIDE_CODES if spec.weight.dtype.bits >= 8 else SMALL_M_RANGE[0]
        return low <= m <= SMALL_M_RANGE[1]
    tiles = -(-m // BLOCK_M) * -(-problem.n // BLOCK_N)
    return tiles >= MIN_TILES_PER_SM * (caps.sm_count or DEFAULT_SMS)


def split_k_for(tiles: int, steps: int, sms: int) -> int:
    """The K split of `tiles` register-form CTAs over `steps` 64-deep K steps whose waves finish
    first under the cost model above (ties: fewer splits)."""

    def cost(split: int) -> tuple[int, int]:
        waves = -(-tiles * split // sms)
        return waves * (-(-steps // split) + SPLIT_OVERHEAD_STEPS), split

    fits = [s for s in range(1, MAX_SPLIT + 1) if s == 1 or steps // s >= MIN_STEPS_PER_SPLIT]
    return min(fits, key=cost)


def register_form_pays(problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Whether the register-A form's waves of 256 x 128 tiles, each RS_TILE_COST times a 128 x 128
    tile, finish before the shared-memory form's waves (both grids are one CTA per SM)."""
    sms = caps.sm_count or DEFAULT_SMS
    m_tiles = -(-(problem.m or 0) // BLOCK_M)
    waves_rs = -(-m_tiles * -(-problem.n // RS_BLOCK_N) // sms)
    waves_smem = -(-m_tiles * -(-problem.n // BLOCK_N) // sms)
    return RS_TILE_COST * waves_rs < waves_smem


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[WgmmaWna16Config]:
    """Configs for this problem, best first (ring depths that fit the arch's shared memory): at
    small M the register-A form's narrowest tile that holds M, its K split by split_k_for; else
    the register-A form where register_form_pays."""
    if small_m(problem):
        m = problem.m or 1
        block_m = next(b for b in RS_BLOCK_MS if b >= m)
        tiles = -(-m // block_m) * -(-problem.n // RS_BLOCK_N)
        split = split_k_for(tiles, -(-problem.k // BLOCK_K), caps.sm_count or DEFAULT_SMS)
        form = partial(
            WgmmaWna16Config, weights_in_registers=True, rs_block_m=block_m, split_k=split
        )
        return fitting_configs(supports, form, SMALL_M_STAGE_CHOICES, spec, problem, caps, 1)
    group_m = 8 if spec.weight_bytes(problem.n, problem.k) > (caps.l2_bytes or _DEFAULT_L2) else 1
    form = WgmmaWna16Config
    if register_form_pays(problem, caps):
        form = partial(WgmmaWna16Config, weights_in_registers=True)
    return fitting_configs(supports, form, STAGE_CHOICES, spec, problem, caps, group_m)
