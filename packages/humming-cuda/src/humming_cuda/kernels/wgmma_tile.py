"""What the sm_90a wgmma families (w8a8_wgmma, w4a8_wgmma, wna16_wgmma) share: the
warp-specialized 128x128 CTA tile, the checks of arch and problem and the config choice.

The kernels are one TMA producer warpgroup plus two 64-row consumer warpgroups over one
wgmma m64n128kK column block (narrower token tiles are each family's own: w8a8_wgmma's 64-row
tile, w4a8_wgmma's and wna16_wgmma's out^T forms), and none serves decode-size M, where each
family's mma.sync or decode sibling (`fallback`) takes over (`problem_reason`'s min_m and the
families' heuristics say where). What differs
(the K depth of a stage, the ring's bytes, the operand type, the spec checks) stays in each family.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import Field

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from .base import KernelConfig

BLOCK_M = 128
BLOCK_N = 128
CONSUMERS = 2  # consumer warpgroups, 64 rows each
FEATURES = ("wgmma", "tma", "mbarrier")
# The 128B swizzle atom alignment the smem tiles need, slack for aligning dynamic smem to it.
ALIGN_SLACK = 1024
MAX_CLUSTER_SPLIT = 8  # CTAs of a portable thread-block cluster (cluster split-K's splits)
# A GPC holds whole clusters only, so fewer CTAs run at once in clusters than CTA slots: per CTAs
# per SM and split, the share of the slots cuOccupancyMaxActiveClusters gave (H100, 132 SMs,
# benchmarks/cluster_occupancy.py, session 41's run125; the wna16_wgmma register form's tiles,
# the same at one CTA per SM for any kernel whose CTA fills its SM).
CLUSTER_SLOTS = {
    1: {2: 132 / 132, 3: 117 / 132, 4: 120 / 132, 5: 110 / 132, 6: 102 / 132, 8: 120 / 132},
    2: {2: 264 / 264, 3: 237 / 264, 4: 248 / 264, 5: 235 / 264, 6: 234 / 264, 8: 240 / 264},
}
TMA_STRIDE_BYTES = 16  # TMA global row strides must be multiples of 16 bytes


def waves(ctas: int, sms: int) -> int:
    """Whole waves of `ctas` CTAs over `sms` CTA slots (a partial wave costs a whole one)."""
    return -(-ctas // sms)


def output_tiles(problem: GemmProblem, block_m: int, block_n: int) -> int:
    """The output tiles of `problem` (at least one row) in block_m x block_n tiles."""
    return -(-(problem.m or 1) // block_m) * -(-problem.n // block_n)


def staged_rows_bytes(rows: int, cols: int) -> int:
    """StagedRows<ROWS, COLS> (kernel/wgmma_cta.cuh): a consumer warpgroup's `rows` output rows of
    `cols` 2-byte values, each row 16 bytes longer (the staged_store configs' shared memory)."""
    return rows * (2 * cols + 16)


# Shared memory the hardware reserves per resident CTA (sm_80 on): an SM holds smem_per_block plus
# one reservation (H100 / H200: 227 + 1 KB), and every further resident CTA needs its own.
CTA_SMEM_RESERVED = 1024


class WgmmaTileConfig(KernelConfig):
    """One producer and two consumer warpgroups on a 128x128 tile over a `stages`-deep TMA ring;
    subclasses set the family and the default depth. `group_m` M tiles are walked down before the
    next N tile (humming/memory/tile_order.cuh), so a wave of CTAs shares its operands in L2."""

    arch: str
    stages: int
    # H200, same run (benchmarks/wgmma_config_sweep.py, 2026-11-29): W8A8 fp8 8192x28672 at
    # M=4096 took 2068 us in launch order (1), 1808 / 1786 / 1831 us in groups of 4 / 8 / 16
    group_m: int = Field(8, ge=1, le=64)

    @property
    def block_m(self) -> int:
        return BLOCK_M

    @property
    def block_n(self) -> int:
        return BLOCK_N

    @property
    def threads(self) -> int:
        return 128 * (1 + CONSUMERS)

    @property
    def barrier_bytes(self) -> int:
        """A full and an empty mbarrier (8 bytes each) per stage of the ring."""
        return 16 * self.stages

    @property
    def ctas_per_sm(self) -> int:
        """CTAs the kernel is built to keep resident per SM (its shared memory must fit them)."""
        return 1

    def fits_smem(self, caps: DeviceCaps) -> bool:
        """Whether ctas_per_sm CTAs of this config fit one SM's shared memory."""
        per_sm = caps.smem_per_block + CTA_SMEM_RESERVED
        return self.ctas_per_sm * (self.smem_bytes + CTA_SMEM_RESERVED) <= per_sm


def arch_reason(caps: DeviceCaps, family: str, form: str, operand: str, fallback: str) -> str:
    """Why `caps` cannot run the `family` kernel (its wgmma `form` on `operand`), or ''."""
    missing = [f for f in FEATURES if not caps.has(f)]
    if missing or form not in caps.mma.get(operand, []):
        return (
            f"{caps.arch} lacks {', '.join(missing) or form + ' for ' + operand}: the {family} "
            f"family needs sm_90a (Hopper wgmma + TMA); other arches use the {fallback} family"
        )
    return ""


def problem_reason(
    problem: GemmProblem,
    family: str,
    fallback: str,
    act_bytes: int,
    rows: str = "row",
    min_m: int = BLOCK_M,
) -> str:
    """Why the dense large-M `family` kernel cannot compute `problem`, or ''.

    `act_bytes` is the activation element size, which sets the K multiple TMA's row strides need;
    `rows` names those rows in the message; `min_m` is the smallest M the family takes (a tile of
    128 rows computes fewer valid ones correctly: TMA zero-fills the rest).
    """
    if problem.num_experts != 1 or problem.topk != 1:
        return f"num_experts/topk != 1: the {family} family computes dense GEMMs"
    if problem.m is None or problem.m < min_m:
        return (
            f"M={problem.m}: the {family} family serves M >= {min_m} (128-row tiles); "
            f"smaller or unknown M uses the mma.sync {fallback} family"
        )
    if problem.n < 1 or problem.k < 1:
        return f"shape N={problem.n} K={problem.k}: sizes must be positive"
    multiple = TMA_STRIDE_BYTES // act_bytes
    if problem.k % multiple:
        return (
            f"K={problem.k}: TMA needs {TMA_STRIDE_BYTES}-byte {rows} strides, so K must be a "
            f"multiple of {multiple}; pad K with zero weights"
        )
    return ""


C = TypeVar("C", bound=WgmmaTileConfig)


def fitting_configs(
    supports: Callable[[QuantSpec, GemmProblem, DeviceCaps], Support],
    config_type: Callable[..., C],
    stage_choices: Sequence[int],
    spec: QuantSpec,
    problem: GemmProblem,
    caps: DeviceCaps,
    group_m: int = 8,
) -> list[C]:
    """One config per ring depth in `stage_choices` (best first) that fits the arch's shared
    memory (fits_smem), visiting tiles in groups of `group_m` M tiles; none when `supports`
    refuses."""
    if not supports(spec, problem, caps):
        return []
    configs = [config_type(arch=caps.arch, stages=s, group_m=group_m) for s in stage_choices]
    return [c for c in configs if c.fits_smem(caps)]
