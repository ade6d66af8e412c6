"""Which specs and problems the WnA16-wgmma family runs (sm_90a, M >= 128), and its configs.

Small M stays with the mma.sync WnA16 family: a 128-row wgmma tile wastes most of its work there,
so `supports` refuses M below one tile (and an unknown M) with a reason, and CudaDevice moves on.
Above that, `prefers` leaves grids too small to fill the GPU to the split-K mma.sync kernels.
"""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..wgmma_tile import BLOCK_M, BLOCK_N, arch_reason, fitting_configs, problem_reason
from ..wna16.heuristics import DEFAULT_SMS
from ..wna16.heuristics import _spec_reason as wna16_spec_reason
from .config import WgmmaWna16Config

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


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[WgmmaWna16Config]:
    """Configs for this problem, best first (ring depths that fit the arch's shared memory)."""
    group_m = 8 if spec.weight_bytes(problem.n, problem.k) > (caps.l2_bytes or _DEFAULT_L2) else 1
    return fitting_configs(supports, WgmmaWna16Config, STAGE_CHOICES, spec, problem, caps, group_m)
