"""Which problems the W4A8 decode kernel takes (w8a8's W4A8 specs at M <= 16 on sm_90) and its
config: w8a8's decode tile for 4-bit weights, one n8 block of tokens up to M = 8
and two above, split along K as w8a8 splits it."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..w8a8 import heuristics as w8a8
from ..w8a8.config import W8a8Format
from ..warp_tile import staged_candidates
from .config import W4a8DecodeConfig

MAX_M = 16  # two n8 blocks of tokens (include/humming/kernel/w4a8_decode.cuh)
ONE_BLOCK_M = 8  # up to here one block: half the MMAs and accumulators
# 32 weight rows per warp (two 16-row MMA blocks), four warps: w8a8's W4A8 decode tile
TILE = {"m_frags": 1, "n_frags": 4, "warps_m": 1, "warps_n": 4}


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


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W4a8DecodeConfig]:
    """The decode tile with as many stages as fit (then a 3-stage variant), split along K by
    w8a8's rule when its tiles alone would not fill the GPU; the unsplit forms follow. Empty when
    `supports` says no."""
    if not supports(spec, problem, caps):
        return []
    tokens = 8 if (problem.m or 1) <= ONE_BLOCK_M else 16
    first = W4a8DecodeConfig(arch=caps.arch, pdl=caps.has("pdl"), tokens=tokens, **TILE)
    configs = staged_candidates(first, caps)
    split = w8a8.pick_split_k(problem, configs[0], caps) if configs else 1
    if split > 1:
        configs.insert(0, configs[0].model_copy(update={"split_k": split}))
    return configs
