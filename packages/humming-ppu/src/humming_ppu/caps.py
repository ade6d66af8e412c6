"""Capability rows for the T-Head Zhenwu PPUs, one per model (DESIGN.md: capabilities are data).

No PPU has been available to this project, so every row is from public material and carries
`verified=False`; its `notes` say which numbers are assumed. The rows are sm80-class: cp.async,
mbarrier, ldmatrix and a 16x16 tensor-core MMA, without wgmma, TMA, tcgen05 or block-scaled MMA.
"""

from __future__ import annotations

from dataclasses import dataclass

from humming_core.device import DeviceCaps

# What every PPU row has and has not (the dialect module explains each difference).
# "mma.sync" and "bf16" are humming-cuda's feature names for a warp-synchronous fp16 / bf16 MMA,
# the role `ppu.mma.sync` fills (its families check them in `supports`).
PPU_FEATURES = (
    "cp.async",
    "mbarrier",
    "ldmatrix",
    "mma.sync",
    "bf16",
    "aiu_bulk_copy",
    "int8_mma",
    "bf16_f16_accum",
)
ABSENT_FEATURES = ("wgmma", "tma", "tcgen05", "block_scaled_mma", "fp8_mma", "int4_mma")

# Instruction shapes per operand type, in the dialect's spelling (N is 16, never 8).
PPU_MMA = {
    "fp16": ["ppu.mma.m16n16k16"],
    "bf16": ["ppu.mma.m16n16k16"],
    "int8": ["ppu.mma.m16n16k32"],
}

# Shared memory a block may use. Not published; sm80 (A100) allows 163 KB per block, and public
# PPU kernel notes speak of 256 KB per compute unit, so the sm80 figure is the safe assumption.
_SM80_SMEM_PER_BLOCK = 163 * 1024


@dataclass(frozen=True)
class PpuModel:
    """One PPU model: how its driver name is recognised, and its capability row."""

    key: str  # short model id used in docs and errors: "810E", "M890"
    name_markers: tuple[str, ...]  # substrings of the driver's device name (upper case)
    caps: DeviceCaps
    fp16_ops_per_sm_clk: int | None  # tensor-core FP16 ops per SM per clock; None = unknown


MODELS: tuple[PpuModel, ...] = (
    PpuModel(
        key="810E",
        name_markers=("810E",),
        fp16_ops_per_sm_clk=4096,
        caps=DeviceCaps(
            device="ppu",
            arch="ppu_10",
            name="T-Head Zhenwu 810E",
            sm_count=20,
            smem_per_block=_SM80_SMEM_PER_BLOCK,
            mma=PPU_MMA,
            features=list(PPU_FEATURES),
            verified=False,
            notes=(
                "from public material, not run on hardware. Driver name contains 'ZW810E' (seen: "
                "'PPU-ZW810E'). 20 usable SMs as PPU.md states (one public benchmark table lists 64 "
                "CUs: unresolved). Tensor cores 4096 FP16 ops/SM/clk. Arch ppu_10 assumed: public "
                "build scripts pass ppu_15 only for 'PPU 1.5' devices. smem_per_block, L2 and "
                "bandwidth not published: sm80 shared-memory limit assumed, L2/bandwidth unknown (0)."
            ),
        ),
    ),
    PpuModel(
        key="M890",
        name_markers=("M890",),
        fp16_ops_per_sm_clk=None,
        caps=DeviceCaps(
            device="ppu",
            arch="ppu_15",
            name="T-Head Zhenwu M890",
            sm_count=0,
            smem_per_block=_SM80_SMEM_PER_BLOCK,
            mma=PPU_MMA,
            features=list(PPU_FEATURES),
            verified=False,
            notes=(
                "from public material, not run on hardware. Driver name assumed to contain 'M890' "
                "(seen in public text: 'ZW-M890P'). Arch ppu_15 assumed (which arch is 810E and "
                "which M890 is not confirmed). SM count, tensor throughput, L2 and bandwidth "
                "unknown (0); sm80 shared-memory limit assumed."
            ),
        ),
    ),
)


class UnknownPpuModel(LookupError):
    pass


def model_for_name(device_name: str) -> PpuModel:
    """The model row whose marker occurs in the driver's device name."""
    upper = device_name.upper()
    for model in MODELS:
        if any(marker in upper for marker in model.name_markers):
            return model
    known = "; ".join(f"{m.key}: name contains {' or '.join(m.name_markers)}" for m in MODELS)
    raise UnknownPpuModel(
        f"PPU device name {device_name!r} matches no capability row ({known}). Add a PpuModel row "
        "for it to humming_ppu/caps.py (arch, SM count, features, verified=False until measured)"
    )


def caps_for_name(device_name: str) -> DeviceCaps:
    """Capability row for a PPU named by its driver (e.g. 'PPU-ZW810E')."""
    return model_for_name(device_name).caps


def caps_for_arch(arch: str) -> DeviceCaps:
    """Capability row for a compiler arch ('ppu_10', 'ppu_15'), to compile without the chip."""
    for model in MODELS:
        if model.caps.arch == arch:
            return model.caps
    known = ", ".join(m.caps.arch for m in MODELS)
    raise UnknownPpuModel(f"PPU arch {arch!r} is not in the capability table: use one of {known}")
