"""Which specs and problems the WnA16-wgmma family runs (sm_90a, M >= 128), and its configs.

Small M stays with the mma.sync WnA16 family: a 128-row wgmma tile wastes most of its work there,
so `supports` refuses M below one tile (and an unknown M) with a reason, and CudaDevice moves on.
Above that, `prefers` leaves grids too small to fill the GPU to the split-K mma.sync kernels.
"""

from __future__ import annotations

from functools import partial

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wgmma_tile import BLOCK_M, BLOCK_N, arch_reason, fitting_configs, problem_reason
from ..wna16.heuristics import DEFAULT_SMS
from ..wna16.heuristics import _spec_reason as wna16_spec_reason
from .config import RS_BLOCK_N, WgmmaWna16Config

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


def _spec_reason(spec: QuantSpec) -> str:
    """The wna16 family's own checks: its layout and dequantizer are ours."""
    return wna16_spec_reason(spec).replace("the wna16 family", "the wna16_wgmma family")


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or arch_reason(caps, "wna16_wgmma", WGMMA_FORM, spec.act.dtype.name, fallback="wna16")
        or problem_reason(problem, "wna16_wgmma", "wna16", act_bytes=2, rows="activation row")
    )
    return Support.no(reason) if reason else Support.yes()


def prefers(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Whether the grid of 128x128 tiles is large enough for this family to beat wna16's split-K."""
    tiles = -(-(problem.m or 0) // BLOCK_M) * -(-problem.n // BLOCK_N)
    return tiles >= MIN_TILES_PER_SM * (caps.sm_count or DEFAULT_SMS)


def register_form_pays(problem: GemmProblem, caps: DeviceCaps) -> bool:
    """Whether the register-A form's waves of 256 x 128 tiles, each RS_TILE_COST times a 128 x 128
    tile, finish before the shared-memory form's waves (both grids are one CTA per SM)."""
    sms = caps.sm_count or DEFAULT_SMS
    m_tiles = -(-(problem.m or 0) // BLOCK_M)
    waves_rs = -(-m_tiles * -(-problem.n // RS_BLOCK_N) // sms)
    waves_smem = -(-m_tiles * -(-problem.n // BLOCK_N) // sms)
    return RS_TILE_COST * waves_rs < waves_smem


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[WgmmaWna16Config]:
    """Configs for this problem, best first (ring depths that fit the arch's shared memory), in
    the register-A form where register_form_pays."""
    group_m = 8 if spec.weight_bytes(problem.n, problem.k) > (caps.l2_bytes or _DEFAULT_L2) else 1
    form = WgmmaWna16Config
    if register_form_pays(problem, caps):
        form = partial(WgmmaWna16Config, weights_in_registers=True)
    return fitting_configs(supports, form, STAGE_CHOICES, spec, problem, caps, group_m)
