"""Baselines measured beside Humming: cuBLAS fp16, tinygemm int4, cuBLASLt fp8, the bf16 grouped GEMM
(MoE); the published peer is in peer.py.

Each builder returns `fn(i)` over `copies` weight copies, or raises `Unavailable` with the reason
(the row then omits that baseline instead of reporting zero).
"""

from __future__ import annotations

import torch

from .timing import Fn


class Unavailable(Exception):
    pass


def cublas_fp16(x: torch.Tensor, n: int, copies: int) -> Fn:
    ws = [
        torch.randn(n, x.shape[1], device=x.device, dtype=torch.float16) * 0.02
        for _ in range(copies)
    ]
    xh = x.to(torch.float16)
    return lambda i: xh @ ws[i % copies].T


def tinygemm_int4(x: torch.Tensor, n: int, copies: int, group: int = 128) -> Fn:
    k = x.shape[1]
    if k % (group * 8) and k % 1024:
        raise Unavailable(f"tinygemm needs K divisible by 1024, got {k}")
    try:
        packed = []
        for _ in range(copies):
            codes = torch.randint(0, 16, (n, k), device=x.device, dtype=torch.int32)
            u8 = (codes[:, ::2] << 4 | codes[:, 1::2]).to(torch.uint8)
            packed.append(torch.ops.aten._convert_weight_to_int4pack(u8, 8))
        sz = torch.randn(k // group, n, 2, device=x.device, dtype=torch.bfloat16) * 0.01
        xb = x.to(torch.bfloat16)

        def fn(i: int) -> torch.Tensor:
            return torch.ops.aten._weight_int4pack_mm(xb, packed[i % copies], group, sz)

        fn(0)
    except (RuntimeError, TypeError) as exc:
        raise Unavailable(f"tinygemm int4 failed: {exc}") from None
    return fn


def cublaslt_fp8(x: torch.Tensor, n: int, copies: int) -> Fn:
    """torch._scaled_mm with row-wise scales (per token × per channel), bf16 output."""
    k = x.shape[1]
    m = x.shape[0]
    try:
        ws = [
            (torch.randn(n, k, device=x.device) * 0.02).to(torch.float8_e4m3fn)
            for _ in range(copies)
        ]
        xq = x.float().clamp(-448, 448).to(torch.float8_e4m3fn)
        sa = torch.rand(m, 1, device=x.device, dtype=torch.float32) + 0.5
        sb = torch.rand(1, n, device=x.device, dtype=torch.float32) + 0.5

        def fn(i: int) -> torch.Tensor:
            w = ws[i % copies]
            return torch._scaled_mm(xq, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

        fn(0)
    except (RuntimeError, TypeError) as exc:
        raise Unavailable(f"torch._scaled_mm fp8 failed: {exc}") from None
    return fn


def sorted_by_expert(x: torch.Tensor, ids: torch.Tensor, num_experts: int):
    """(x rows in expert order, one per routed (token, choice) pair; int32 cumulative row ends per
    expert), the operands of a grouped GEMM for this routing."""
    flat = ids.reshape(-1).long()
    order = torch.argsort(flat, stable=True)
    ends = torch.bincount(flat, minlength=num_experts).cumsum(0).to(torch.int32)
    return x[order // ids.shape[1]].contiguous(), ends


def grouped_mm_bf16(x: torch.Tensor, routes: list, num_experts: int, width: int, copies: int) -> Fn:
    """w13 then w2 of a MoE layer by `torch._grouped_mm` on bf16 weights, tokens pre-sorted.

    x [M, H]; routes: (weights, ids [M, topk]) per call; w13 [E, 2*width, H] and w2 [E, H, width]
    are passed as their [E, K, N] transposes (torch's grouped GEMM takes mat_b as [groups, K, N] and
    `offs` as int32 cumulative row ends). Only the two GEMMs are timed: sorting, gather, GLU and the
    top-k scatter are left out, so this is a lower bound for a bf16 layer."""
    hidden = x.shape[1]
    xb = x.to(torch.bfloat16)
    try:
        w13 = [
            torch.randn(num_experts, 2 * width, hidden, device=x.device, dtype=torch.bfloat16)
            for _ in range(copies)
        ]
        w2 = [
            torch.randn(num_experts, hidden, width, device=x.device, dtype=torch.bfloat16)
            for _ in range(copies)
        ]
        operands = []
        for _, ids in routes:
            xs, ends = sorted_by_expert(xb, ids, num_experts)
            h = torch.randn(xs.shape[0], width, device=x.device, dtype=torch.bfloat16)
            operands.append((xs, ends, h))

        def fn(i: int) -> None:
            xs, ends, h = operands[i % len(operands)]
            torch._grouped_mm(xs, w13[i % copies].transpose(-2, -1), offs=ends)
            torch._grouped_mm(h, w2[i % copies].transpose(-2, -1), offs=ends)

        fn(0)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise Unavailable(f"torch._grouped_mm bf16 failed: {exc}") from None
    return fn
