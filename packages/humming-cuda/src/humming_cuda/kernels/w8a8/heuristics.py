"""Which specs the W8A8 / W4A8 family runs, and its tile choice per M (largest tiles where M allows)."""

from __future__ import annotations

from humming_core.device import DeviceCaps, GemmProblem, Support
from humming_core.spec import QuantSpec

from ..act_quant import unsupported_reason
from ..split_k import clamp_split, pow2_fill
from ..warp_tile import DECODE_TILE, staged_candidates, tile_for_m
from ..wna16.heuristics import DEFAULT_SMS
from .config import BLOCK_K, NIBBLE_TYPES, W8a8Config, W8a8Format

CODES = ("int8", "e4m3")
# 4-bit weights each MMA code represents exactly (uint4 only as u - z with integer zero points).
W4_TYPES = {"int8": ("int4", "uint4"), "e4m3": ("int4", "e2m1")}
# s32 accumulation over the whole K stays exact while K * 128 * 127 < 2^31.
INT8_EXACT_K = (1 << 31) // (128 * 127)


def _weight_type_reason(spec: QuantSpec) -> str:
    w, code = spec.weight, spec.act.dtype.name
    name = w.dtype.name
    if name in CODES:
        if name != code:
            return (
                f"weight dtype {name!r} with {code!r} activations: the w8a8 family multiplies "
                "equal 8-bit codes (int8 x int8 or e4m3 x e4m3) or 4-bit weights"
            )
        if w.zero_point != "none":
            return "8-bit weights with zero points are not supported by the w8a8 family"
        return ""
    allowed = W4_TYPES[code]
    if name not in allowed:
        return (
            f"weight dtype {name!r} with {code!r} activations: 4-bit weights must be one of "
            f"{', '.join(allowed)} for {code} activations"
        )
    if w.zero_point == "float" or (w.zero_point == "int") != (name == "uint4"):
        return (
            f"{name} weights with zero_point={w.zero_point!r}: use int4 / e2m1 without zero points "
            "or uint4 with integer zero points (int8 activations)"
        )
    return ""


def _scale_reason(spec: QuantSpec) -> str:
    s, w4 = spec.weight.scale, spec.weight.dtype.name in NIBBLE_TYPES
    if w4 and (
        s.granularity != "group"
        or s.group_size % 32
        or (BLOCK_K % s.group_size and s.group_size % BLOCK_K)
    ):
        shown = s.group_size if s.granularity == "group" else s.granularity
        return (
            f"4-bit weight scales {shown!r}: W4A8 takes group scales of 32, 64 or a multiple of "
            "128 along K"
        )
    if not w4 and s.granularity not in ("tensor", "channel", "block"):
        return (
            f"weight scale granularity {s.granularity!r}: 8-bit weights take per-tensor, "
            "per-channel or 128x128 block scales"
        )
    if s.granularity == "block" and tuple(s.block) != (BLOCK_K, BLOCK_K):
        return f"weight block {tuple(s.block)}: only 128x128 blocks (DeepSeek FP8) are supported"
    allowed = ("fp32", "fp16", "bf16", "e8m0") if w4 else ("fp32", "fp16", "bf16")
    if s.dtype.name not in allowed:
        return f"weight scale dtype {s.dtype.name!r}: use one of {', '.join(allowed)}"
    return ""


def _spec_reason(spec: QuantSpec) -> str:
    w, act = spec.weight, spec.act
    if not act.is_quantized or act.dtype.name not in CODES:
        return f"the w8a8 family needs int8 or e4m3 activations, the spec has {act.dtype.name!r}"
    reason = unsupported_reason(act) or _weight_type_reason(spec)
    if reason:
        return reason
    if w.global_scale:
        return "weight global scales are not supported by the w8a8 family"
    reason = _scale_reason(spec)
    if reason:
        return reason
    e = spec.epilogue
    if e.activation != "none" or e.glu != "none" or e.topk_weight or spec.layout != "dense":
        return "the w8a8 family computes dense GEMMs with scales and bias only (no activation/GLU)"
    return ""


# The 8-bit MMA each code needs: sm80's m16n8k32, or for int8 the PPU's m16n16k32, which the
# family's PPU dialects issue for each pair of n8 blocks (humming_ppu renders them).
MMA_FORMS = {"int8": ("mma.m16n8k32", "ppu.mma.m16n16k32"), "e4m3": ("mma.m16n8k32",)}


def _arch_reason(code: str, caps: DeviceCaps) -> str:
    has_mma = any(form in caps.mma.get(code, []) for form in MMA_FORMS[code])
    if has_mma and caps.has("cp.async"):
        return ""
    first = "sm_89 (Ada) or newer" if code == "e4m3" else "sm_80 (Ampere) or newer"
    return f"{caps.arch} has no {code} mma.sync m16n8k32: {code} x {code} needs {first}"


def _problem_reason(spec: QuantSpec, problem: GemmProblem) -> str:
    if problem.num_experts != 1 or problem.topk != 1:
        return "num_experts/topk != 1: the w8a8 family computes dense GEMMs"
    if problem.n < 1 or problem.k < 1:
        return f"shape N={problem.n} K={problem.k}: sizes must be positive"
    if problem.k % 16:
        return (
            f"K={problem.k}: 8-bit rows are loaded in 16-byte chunks, so K must be a multiple of "
            "16; pad K with zero weights"
        )
    fmt = W8a8Format.from_spec(spec)
    if not fmt.promotes and problem.k > INT8_EXACT_K:
        return f"K={problem.k}: int8 s32 accumulation is exact only up to K={INT8_EXACT_K}"
    return ""


def supports(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> Support:
    reason = (
        _spec_reason(spec)
        or _arch_reason(spec.act.dtype.name, caps)
        or _problem_reason(spec, problem)
    )
    return Support.no(reason) if reason else Support.yes()


def _large_tile(fmt: W8a8Format) -> dict[str, int]:
    # 128x128 tiles; promoting kernels keep fp32 totals next to the MMA accumulators, so their
    # warps take half the rows to stay within the register budget. W4A8 lanes also hold a slab of
    # packed weights per column (4 registers each): 64x128 tiles, half the columns per warp.
    if fmt.weight_bits == 4:
        return {"m_frags": 2, "n_frags": 4, "warps_m": 2, "warps_n": 4}
    if fmt.promotes:
        return {"m_frags": 2, "n_frags": 8, "warps_m": 4, "warps_n": 2}
    return {"m_frags": 4, "n_frags": 8, "warps_m": 2, "warps_n": 2}


# W4A8's decode tile takes 32 columns per warp instead of 16: a 4-bit weight row is half the
# bytes, so twice the columns keep each warp's loads as wide as the 8-bit tile's. H200, same run
# (benchmarks/notes/session12_w4a8_decode_sweep.txt, W4A8_FP8 at 4 stages): 57344x8192 M=1
# 207.8 -> 194.1 us, 8192x28672 M=16 132.8 -> 108.0 us, 4096x14336 M=1 38.6 -> 32.4 us.
DECODE_4BIT_COLUMNS = {**DECODE_TILE, "n_frags": 4}

# CTAs per SM the split aims for: the decode tile (4 warps, 40 KB of smem at 4 stages) fits
# several per SM, and more CTAs keep more weight bytes in flight.
SPLIT_CTAS_PER_SM = 4
SPLIT_MAX_M = 64  # the decode and mid tiles (warp_tile.tile_for_m); larger M is never split


def pick_split_k(problem: GemmProblem, cfg: W8a8Config, caps: DeviceCaps) -> int:
    """Split K until the CTAs fill about SPLIT_CTAS_PER_SM per SM (a power of two), keeping at
    least 4 K iterations per split and at most 16 splits: a layer with few output tiles (N=4096
    at decode is 64 tiles of 64 columns) otherwise leaves most SMs idle."""
    m = max(1, problem.m or 1)
    tiles = -(-problem.n // cfg.block_n) * -(-m // cfg.block_m)
    iters = -(-problem.k // BLOCK_K)
    split = pow2_fill(SPLIT_CTAS_PER_SM * (caps.sm_count or DEFAULT_SMS), tiles)
    return clamp_split(split, iters)


def candidates(spec: QuantSpec, problem: GemmProblem, caps: DeviceCaps) -> list[W8a8Config]:
    """Configs for this (spec, N, K, M), best first; empty when `supports` says no. Up to M =
    SPLIT_MAX_M the first is split along K when its tiles alone would not fill the GPU; the
    unsplit form follows."""
    if not supports(spec, problem, caps):
        return []
    fmt = W8a8Format.from_spec(spec)
    tile = tile_for_m(problem.m, _large_tile(fmt))
    if fmt.weight_bits == 4 and tile == DECODE_TILE:
        tile = dict(DECODE_4BIT_COLUMNS)
    configs = staged_candidates(
        W8a8Config(arch=caps.arch, weight_bits=fmt.weight_bits, pdl=caps.has("pdl"), **tile), caps
    )
    # the large tiles have no registers to spare for the split path (and large M fills the GPU)
    small = problem.m is None or problem.m <= SPLIT_MAX_M
    split = pick_split_k(problem, configs[0], caps) if configs and small else 1
    if split > 1:
        configs.insert(0, configs[0].with_fields(split_k=split))
    return configs
