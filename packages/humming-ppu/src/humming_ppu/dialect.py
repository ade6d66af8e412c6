"""How PPU code differs from sm80 CUDA code: one frozen data object for code generation, the
B-row permutation of the PPU weight layout, and which specs the PPU cannot run (`check`).

The kernels are humming-cuda's; a PPU kernel is the same source rendered with these options (not a
fork). Each field below is a fact from public material (../shared/PPU.md), unverified on hardware.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from humming_core.device import GemmProblem, Support
from humming_core.packing import CanonicalWeight
from humming_core.spec import QuantSpec

# The PPU MMA's B operand enumerates output channels even-then-odd within every 8: stored row j of
# each group of 8 holds canonical row B_ROW_PERM[j].
B_ROW_PERM = (0, 2, 4, 6, 1, 3, 5, 7)
B_ROW_UNPERM = tuple(B_ROW_PERM.index(i) for i in range(8))  # (0, 4, 1, 5, 2, 6, 3, 7)


@dataclass(frozen=True)
class PpuDialect:
    """Code-generation options for the PPU (or for emulating its data paths on an NVIDIA GPU)."""

    name: str
    # MMA: `ppu.`-prefixed, N = 16; the m8 "half-M" trick does not exist.
    mma_prefix: str = "ppu."
    mma_n: int = 16
    mma_k: tuple[tuple[str, int], ...] = (("f16", 16), ("bf16", 16), ("s8", 32))  # operand, K
    int8_satfinite: bool = True  # int8 forms carry .satfinite
    half_m_mma: bool = False
    # Emulation on NVIDIA: each N=16 MMA is issued as two sm80 N=8 MMAs (B columns 0-7, 8-15).
    emulate_n16_with_two_n8: bool = False
    # Shared-memory matrix loads: the swizzled variant with its extra operand tuple; B takes 16
    # rows per load. It reads the cube layout AIU copies write; the WnA16 kernels keep cp.async
    # and so use the plain `ppu.ldmatrix` form instead (README, "The dialect in ...").
    ldmatrix: str = "ppu.ldmatrix.sync.aligned.m8n8.x{count}.swzl.shared.b16"
    ldmatrix_operands: tuple[str, ...] = ("0", "off1", "1", "dim", "1", "off2")
    ldmatrix_b_rows: int = 16
    # Plain (non-indexed) A/B global->shared copies use the AIU bulk tensor copy; indexed (MoE
    # gather) copies keep cp.async.
    plain_copy: str = "aiu_bulk"
    indexed_copy: str = "cp.async"
    evict_first_hint: bool = False
    # Accumulator fragment: entry idx is (m = idx // (N/8), n = idx % (N/8)), N before M, so the
    # epilogue swaps row and column when writing C (plus a byte-permute fix-up for f16 accumulators).
    acc_n_before_m: bool = True
    b_row_perm: tuple[int, ...] = B_ROW_PERM
    f16_accum_with_bf16: bool = True
    defines: tuple[str, ...] = ("USE_PPU=1",)

    def mma_instruction(self, operand: str, accum: str = "f32") -> str:
        """The MMA mnemonic for operand type 'f16' | 'bf16' | 's8' and accumulator type.

        When emulating, this is the N=8 instruction that is issued twice per N=16 MMA.
        """
        ks = dict(self.mma_k)
        if operand not in ks:
            raise ValueError(
                f"no PPU MMA for operand type {operand!r}: the PPU has {', '.join(ks)} "
                "(no fp8, int4 or block-scaled MMA)"
            )
        n = 8 if self.emulate_n16_with_two_n8 else self.mma_n
        shape = f"m16n{n}k{ks[operand]}"
        if operand == "s8":
            sat = ".satfinite" if self.int8_satfinite else ""
            return f"{self.mma_prefix}mma.sync.aligned.{shape}.row.col{sat}.s32.s8.s8.s32"
        allowed = ("f32", "f16") if self.f16_accum_with_bf16 or operand == "f16" else ("f32",)
        if accum not in allowed:
            raise ValueError(f"accumulator {accum!r} with {operand}: use one of {allowed}")
        return (
            f"{self.mma_prefix}mma.sync.aligned.{shape}.row.col.{accum}.{operand}.{operand}.{accum}"
        )

    def acc_position(self, idx: int) -> tuple[int, int]:
        """(m block, n block) of accumulator register pair `idx` in an m16nN fragment (8x8 blocks)."""
        per_row = self.mma_n // 8
        if self.acc_n_before_m:
            return idx // per_row, idx % per_row
        return idx % 2, idx // 2  # sm80 order: M halves first


PPU = PpuDialect(name="ppu")
# The same layout and fragment order on an NVIDIA GPU (sm80+ instructions), so the PPU-specific
# data paths can be checked numerically where no PPU exists.
PPU_EMULATION = replace(
    PPU,
    name="ppu-emulation",
    mma_prefix="",
    emulate_n16_with_two_n8=True,
    ldmatrix="ldmatrix.sync.aligned.m8n8.x{count}.shared.b16",
    ldmatrix_operands=(),
    plain_copy="cp.async",
    f16_accum_with_bf16=False,  # sm80 has no bf16 MMA with an f16 accumulator
    defines=("HUMMING_PPU_EMULATION=1",),
)


# ---- specs the PPU cannot run -------------------------------------------------------------------
_ACT_REJECT = {
    "int4": "the PPU has no int4 MMA, so int4 activations (W4A4-int) cannot run",
    "e4m3": "the PPU has no fp8 MMA: 8-bit activations must be int8",
    "e5m2": "the PPU has no fp8 MMA: 8-bit activations must be int8",
    "e2m1": "the PPU has no fp4 or block-scaled MMA, so fp4 activations (NVFP4/MXFP4 W4A4) cannot run",
}
_FIX = (
    "use 16-bit activations (fp16/bf16: WnA16, MXFP4/FP8 weights with bf16 act) or int8 activations "
    "(W8A8-int8, W4A8-int8)"
)


def check(spec: QuantSpec, problem: GemmProblem) -> Support:
    """Whether the PPU's instruction set can run `spec` on `problem`, and if not, why."""
    act = spec.act.dtype.name
    if act in _ACT_REJECT:
        return Support.no(f"act.dtype={act!r}: {_ACT_REJECT[act]}; {_FIX}")
    # Callers name the 16-bit input, or (ops.PreparedGemm) the spec's own quantized act dtype.
    allowed = ("fp16", "bf16", act) if spec.act.is_quantized else ("fp16", "bf16")
    if problem.act_dtype not in allowed:
        return Support.no(
            f"problem.act_dtype={problem.act_dtype!r}: the caller's activations must be one of "
            f"{', '.join(dict.fromkeys(allowed))}"
        )
    if problem.n % 8:
        return Support.no(
            f"n={problem.n}: the PPU weight layout permutes output rows in groups of 8, so N must "
            "be a multiple of 8; pad the layer's output dimension"
        )
    return Support.yes()


# ---- the B-row permutation ----------------------------------------------------------------------
def _row_index(n: int, perm: tuple[int, ...], device: torch.device) -> torch.Tensor:
    if n % 8:
        raise ValueError(
            f"{n} rows cannot be permuted in groups of 8: the PPU layout needs N % 8 == 0"
        )
    base = torch.arange(n, device=device).view(-1, 8)
    return base[:, list(perm)].reshape(-1)


def permute_rows(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    """Canonical row order -> PPU order along `dim` (stored row 8g+j = canonical 8g+B_ROW_PERM[j])."""
    return tensor.index_select(dim, _row_index(tensor.shape[dim], B_ROW_PERM, tensor.device))


def unpermute_rows(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    """PPU order -> canonical row order along `dim` (inverse of `permute_rows`)."""
    return tensor.index_select(dim, _row_index(tensor.shape[dim], B_ROW_UNPERM, tensor.device))


def _words_to_bytes(words: torch.Tensor) -> torch.Tensor:
    shifts = torch.arange(0, 32, 8, dtype=torch.int64, device=words.device)
    w = words.to(torch.int64) & 0xFFFFFFFF
    return ((w.unsqueeze(-1) >> shifts) & 0xFF).flatten(-2)


def _bytes_to_words(data: torch.Tensor) -> torch.Tensor:
    shifts = torch.arange(0, 32, 8, dtype=torch.int64, device=data.device)
    words = (data.unflatten(-1, (-1, 4)) << shifts).sum(-1)
    return torch.where(words >= 1 << 31, words - (1 << 32), words).to(torch.int32)


def _permute_packed(words: torch.Tensor, bits: int, n: int, perm: tuple[int, ...]) -> torch.Tensor:
    """Reorder N codes of `bits` bits packed along the last dim, in groups of 8 codes.

    Eight b-bit codes fill exactly b bytes of the little-endian bitstream, so each group of 8 is a
    whole run of bytes: expand those bytes to bits, reorder the codes, and pack them back.
    """
    if not 1 <= bits <= 8:
        raise ValueError(f"bits={bits}: packed codes have 1 to 8 bits")
    if n % 8 or words.shape[-1] * 32 < n * bits:
        raise ValueError(
            f"{words.shape[-1]} words of {bits}-bit codes cannot hold n={n} codes in groups of 8: "
            "N must be a multiple of 8 and the last dim at least ceil(N*bits/32)"
        )
    data = _words_to_bytes(words)
    used = n * bits // 8
    groups = data[..., :used].unflatten(-1, (n // 8, bits))
    bit_idx = torch.arange(8, dtype=torch.int64, device=words.device)
    stream = ((groups.unsqueeze(-1) >> bit_idx) & 1).flatten(-2)  # (..., n/8, 8*bits)
    codes = stream.unflatten(-1, (8, bits))[..., list(perm), :]
    packed = (codes.flatten(-2).unflatten(-1, (bits, 8)) << bit_idx).sum(-1)
    return _bytes_to_words(torch.cat([packed.flatten(-2), data[..., used:]], dim=-1))


def permute_packed_rows(words: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """`permute_rows` for integer zero points: N codes of `bits` bits packed along the last dim."""
    return _permute_packed(words, bits, n, B_ROW_PERM)


def unpermute_packed_rows(words: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of `permute_packed_rows`."""
    return _permute_packed(words, bits, n, B_ROW_UNPERM)


def _apply(cw: CanonicalWeight, scales_before_mma: bool, inverse: bool) -> CanonicalWeight:
    rows = unpermute_rows if inverse else permute_rows
    packed = unpermute_packed_rows if inverse else permute_packed_rows
    w = cw.spec.weight
    # Group and channel scales have one row per output channel. Block scales (block rows are a
    # multiple of 16) and tensor scales are shared by whole groups of 8 rows: nothing moves.
    per_row = w.scale.granularity in ("group", "channel")
    scales = rows(cw.scales, -2) if scales_before_mma and per_row else cw.scales
    zeros = cw.zeros
    if w.zero_point == "int":
        zeros = packed(cw.zeros, w.dtype.bits, cw.n)
    elif w.zero_point == "float":  # offsets shaped like the scales, applied while dequantizing
        zeros = rows(cw.zeros, -2)
    return replace(cw, qweight=rows(cw.qweight, -2), scales=scales, zeros=zeros)


def permute_canonical(cw: CanonicalWeight, scales_before_mma: bool = True) -> CanonicalWeight:
    """A canonical weight with its rows in PPU order: weights, zero points, and the scales when the
    kernel applies them before the MMA (scales applied in the epilogue index output rows, which
    the PPU MMA already returns in natural order). Bias and global scale are unchanged."""
    return _apply(cw, scales_before_mma, inverse=False)


def unpermute_canonical(cw: CanonicalWeight, scales_before_mma: bool = True) -> CanonicalWeight:
    """Inverse of `permute_canonical` (same `scales_before_mma`)."""
    return _apply(cw, scales_before_mma, inverse=True)
