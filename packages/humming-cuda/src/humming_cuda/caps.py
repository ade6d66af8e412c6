"""What each NVIDIA architecture can do: one DeviceCaps row per compile target.

Kernel families read these rows (`caps.mma`, `caps.has("tma")`) instead of comparing compute
capabilities. `detect.py` takes the row of the GPU present and fills in the measured fields (name,
SM count, L2, bandwidth, opt-in shared memory).

Sources and confidence:
- Instruction availability (every `mma` entry and the instruction features: ldmatrix, cp.async,
  mbarrier, tma, clusters, pdl, wgmma, setmaxnreg, stmatrix, tcgen05, fp8 conversions, block-scaled
  mma) is checked by compiling a probe per entry and arch with NVRTC (tests/test_caps.py, marker
  `compile`), and the PTX ISA target notes agree.
- Shared memory per block (opt-in maximum) is from the CUDA programming guide's per-compute-capability
  table; sm_110a and sm_121a values are inferred from their family (marked in `notes`).
- Only sm_90a (H200) has run on hardware here: every other row has `verified=False`.

`mma` maps operand type (ScalarType names, plus `tf32` and the block-scaled kinds `mxf8f6f4`,
`mxf4`, `nvf4`) to instruction shapes: `mma.m16n8k16` (mma.sync), `wgmma.m64nNk16` (warpgroup,
N = 8..256), `tcgen05.m128nNk16` (Blackwell datacenter, accumulator in tensor memory; M 64/128 per
CTA, 256 over a CTA pair), `mma.block_scale.m16n8k64` (sm_120 family).
"""

from __future__ import annotations

from humming_core.device import DeviceCaps

# mma.sync shapes by the first arch that has them (each later row includes the earlier ones).
_MMA_SM75 = {
    "fp16": ["mma.m16n8k8"],
    "int8": ["mma.m8n8k16"],
    "uint8": ["mma.m8n8k16"],
    "int4": ["mma.m8n8k32"],
    "uint4": ["mma.m8n8k32"],
}
_MMA_SM80 = {
    "fp16": ["mma.m16n8k8", "mma.m16n8k16"],
    "bf16": ["mma.m16n8k8", "mma.m16n8k16"],
    "tf32": ["mma.m16n8k4", "mma.m16n8k8"],
    "int8": ["mma.m8n8k16", "mma.m16n8k16", "mma.m16n8k32"],
    "uint8": ["mma.m8n8k16", "mma.m16n8k16", "mma.m16n8k32"],
    "int4": ["mma.m8n8k32", "mma.m16n8k32", "mma.m16n8k64"],
    "uint4": ["mma.m8n8k32", "mma.m16n8k32", "mma.m16n8k64"],
}
_MMA_SM89 = {
    **_MMA_SM80,
    "e4m3": ["mma.m16n8k16", "mma.m16n8k32"],
    "e5m2": ["mma.m16n8k16", "mma.m16n8k32"],
}
_WGMMA_SM90 = {
    "fp16": ["wgmma.m64nNk16"],
    "bf16": ["wgmma.m64nNk16"],
    "tf32": ["wgmma.m64nNk8"],
    "e4m3": ["wgmma.m64nNk32"],
    "e5m2": ["wgmma.m64nNk32"],
    "int8": ["wgmma.m64nNk32"],
    "uint8": ["wgmma.m64nNk32"],
}
_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
_TCGEN05 = {
    "fp16": ["tcgen05.m128nNk16"],
    "bf16": ["tcgen05.m128nNk16"],
    "tf32": ["tcgen05.m128nNk8"],
    **{t: ["tcgen05.m128nNk32"] for t in _F8F6F4},
    "mxf8f6f4": ["tcgen05.block_scale.m128nNk32"],
    "mxf4": ["tcgen05.block_scale.m128nNk64"],
    "nvf4": ["tcgen05.block_scale.m128nNk64"],
}
_TCGEN05_INT8 = {"int8": ["tcgen05.m128nNk32"], "uint8": ["tcgen05.m128nNk32"]}
_MMA_SM120 = {
    **{t: ["mma.m16n8k32"] for t in ("e3m2", "e2m3", "e2m1")},
    "mxf8f6f4": ["mma.block_scale.m16n8k32"],
    "mxf4": ["mma.block_scale.m16n8k64"],
    "nvf4": ["mma.block_scale.m16n8k64"],
}


def _merge(*tables: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for table in tables:
        for dtype, shapes in table.items():
            out.setdefault(dtype, [])
            out[dtype] += [s for s in shapes if s not in out[dtype]]
    return out


_F_SM75 = ["mma.sync", "ldmatrix"]
_F_SM80 = [*_F_SM75, "cp.async", "mbarrier", "bf16", "tf32"]
_F_SM89 = [*_F_SM80, "fp8"]
_F_HOPPER_UP = ["tma", "clusters", "pdl", "stmatrix"]
_F_SM90 = [*_F_SM89, *_F_HOPPER_UP, "tma_multicast", "wgmma", "setmaxnreg"]
_F_SM100 = [
    *_F_SM89,
    *_F_HOPPER_UP,
    "tma_multicast",
    "setmaxnreg",
    "tcgen05",
    "fp6",
    "fp4",
    "block_scaled_mma",
]
# sm_120 compiles TMA multicast, but the PTX ISA warns it may be much slower off sm_90a/sm_100f.
_F_SM120 = [*_F_SM89, *_F_HOPPER_UP, "setmaxnreg", "fp6", "fp4", "block_scaled_mma"]

_KB = 1024
_UNVERIFIED = "instructions checked by NVRTC probes; not run on hardware"


def _row(
    arch: str, name: str, smem_kb: int, mma: dict, features: list[str], notes: str = ""
) -> DeviceCaps:
    return DeviceCaps(
        device="cuda",
        arch=arch,
        name=name,
        smem_per_block=smem_kb * _KB,
        mma=mma,
        features=features,
        verified=arch == "sm_90a",
        notes=notes or (_UNVERIFIED if arch != "sm_90a" else "H200 measured"),
    )


ROWS: tuple[DeviceCaps, ...] = (
    _row("sm_75", "Turing", 64, _MMA_SM75, _F_SM75),
    _row("sm_80", "Ampere (A100)", 163, _MMA_SM80, _F_SM80),
    _row("sm_86", "Ampere (GA10x)", 99, _MMA_SM80, _F_SM80),
    _row("sm_87", "Ampere (Orin)", 163, _MMA_SM80, _F_SM80),
    _row("sm_89", "Ada", 99, _MMA_SM89, _F_SM89),
    _row("sm_90a", "Hopper (H100/H200)", 227, _merge(_MMA_SM89, _WGMMA_SM90), _F_SM90),
    _row(
        "sm_100a",
        "Blackwell (B200/GB200)",
        227,
        _merge(_MMA_SM89, _TCGEN05, _TCGEN05_INT8),
        _F_SM100,
    ),
    _row(
        "sm_103a",
        "Blackwell Ultra (B300/GB300)",
        227,
        _merge(_MMA_SM89, _TCGEN05),
        _F_SM100,
        notes=f"{_UNVERIFIED}; tcgen05 kind::i8 is not listed for sm_103a in the PTX ISA, so no int8 tcgen05",
    ),
    _row(
        "sm_110a",
        "Thor",
        227,
        _merge(_MMA_SM89, _TCGEN05, _TCGEN05_INT8),
        _F_SM100,
        notes=f"{_UNVERIFIED}; was sm_101a before CUDA 13; smem per block inferred from sm_100",
    ),
    _row("sm_120a", "Blackwell (RTX 50xx / RTX PRO)", 99, _merge(_MMA_SM89, _MMA_SM120), _F_SM120),
    _row(
        "sm_121a",
        "Blackwell (GB10)",
        99,
        _merge(_MMA_SM89, _MMA_SM120),
        _F_SM120,
        notes=f"{_UNVERIFIED}; smem per block inferred from sm_120",
    ),
)

ARCHS: tuple[str, ...] = tuple(r.arch for r in ROWS)
_BY_ARCH = {r.arch: r for r in ROWS}

# compute capability -> row: the "a" targets are exact-arch, so each capability maps to one row.
CC_TO_ARCH: dict[tuple[int, int], str] = {
    (7, 5): "sm_75",
    (8, 0): "sm_80",
    (8, 6): "sm_86",
    (8, 7): "sm_87",
    (8, 9): "sm_89",
    (9, 0): "sm_90a",
    (10, 0): "sm_100a",
    (10, 3): "sm_103a",
    (11, 0): "sm_110a",
    (12, 0): "sm_120a",
    (12, 1): "sm_121a",
}


def caps_for_arch(arch: str) -> DeviceCaps:
    """The table row for a compile target such as 'sm_90a'."""
    try:
        return _BY_ARCH[arch]
    except KeyError:
        raise ValueError(
            f"unknown cuda arch {arch!r}: humming has rows for {', '.join(ARCHS)} (use the exact "
            "target string, e.g. 'sm_90a' for Hopper)"
        ) from None


def arch_for_capability(major: int, minor: int) -> str:
    """The compile target for a GPU of compute capability major.minor."""
    try:
        return CC_TO_ARCH[(major, minor)]
    except KeyError:
        known = ", ".join(f"{a}.{b}" for a, b in CC_TO_ARCH)
        raise ValueError(
            f"compute capability {major}.{minor} has no humming capability row (known: {known}); "
            "GPUs older than Turing are not supported by CUDA 13 NVRTC, newer ones need a new row "
            "in humming_cuda.caps"
        ) from None
