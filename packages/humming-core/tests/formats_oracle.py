"""Test helpers for the checkpoint-format tests: an exact fp64 reading of the canonical contract,
and comparison with the producing tool's own dequantization stored next to each fixture."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from humming_core.numerics.codec import canonical_table
from humming_core.numerics.scales import scale_values
from humming_core.packing import CanonicalWeight
from humming_core.packing.bits import unpack_k, unpack_n

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
_TORCH = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _expand(s: torch.Tensor, n: int, k: int, cw: CanonicalWeight) -> torch.Tensor:
    """Per-element values of scale-shaped tensors (..., rows, cols) over (..., n, k)."""
    sc = cw.spec.weight.scale
    if sc.granularity == "block":
        bn, bk = sc.block
        return s.repeat_interleave(bn, -2)[..., :n, :].repeat_interleave(bk, -1)[..., :k]
    if sc.granularity == "group":
        return s.repeat_interleave(sc.group_size, -1)[..., :k]
    return s.expand(*s.shape[:-2], n, k)


def exact_dequant(cw: CanonicalWeight) -> torch.Tensor:
    """w per the canonical contract, computed in fp64 (exact for every format these tests use)."""
    w = cw.spec.weight
    codes = unpack_k(cw.qweight, w.dtype.bits, cw.k).to(torch.int64)
    values = canonical_table(w.dtype).to(torch.float64)[codes]
    scales = _expand(scale_values(cw.scales, w.scale.dtype).to(torch.float64), cw.n, cw.k, cw)
    if w.zero_point == "int":
        z = unpack_n(cw.zeros, w.dtype.bits, cw.n).to(torch.float64)  # (..., N, G)
        out = scales * (codes.to(torch.float64) - _expand(z, cw.n, cw.k, cw))
    elif w.zero_point == "float":
        out = scales * codes.to(torch.float64) - _expand(cw.zeros.to(torch.float64), cw.n, cw.k, cw)
    else:
        out = scales * values
    if cw.global_scale is not None:
        out = out * cw.global_scale.to(torch.float64).reshape(-1, *([1] * (out.dim() - 1)))
    return out


def reference(name: str) -> tuple[dict, dict[str, torch.Tensor]]:
    folder = FIXTURES / name
    meta = json.loads((folder / "reference.json").read_text())
    return meta, load_file(str(folder / "reference.safetensors"))


def sha256_of(t: torch.Tensor) -> str:
    raw = t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)
    return hashlib.sha256(raw.numpy().tobytes()).hexdigest()


def as_tool_dtype(exact: torch.Tensor, dtype_name: str) -> torch.Tensor:
    """One rounding of the exact value to the tool's output dtype (via fp32 only when exact there)."""
    dtype = _TORCH[dtype_name]
    as32 = exact.to(torch.float32)
    if dtype == torch.float32 or torch.equal(as32.to(torch.float64), exact):
        return as32.to(dtype)
    # fp64 -> bf16 directly is not available on every path; round through fp32 only where exact.
    raise AssertionError("exact value is not representable in fp32; compare in fp64 instead")


def scale_product_first(cw: CanonicalWeight) -> torch.Tensor:
    """NVFP4 evaluated in ModelOpt's order (`NVFP4QTensor.dequantize`): fp32(e2m1 · fp32(s · g)).

    The canonical value e2m1 · s · g is exact; ModelOpt rounds s · g to fp32 first, then the
    product, so its fp32 output can differ from the exact value rounded once by one ulp. Computing
    its order from the canonical fields and matching it bit for bit shows that the codes, group
    scales and global scale were read exactly."""
    w = cw.spec.weight
    codes = unpack_k(cw.qweight, w.dtype.bits, cw.k).to(torch.int64)
    values = canonical_table(w.dtype).to(torch.float32)[codes]
    s = scale_values(cw.scales, w.scale.dtype) * cw.global_scale.to(torch.float32)
    return values * _expand(s, cw.n, cw.k, cw)
