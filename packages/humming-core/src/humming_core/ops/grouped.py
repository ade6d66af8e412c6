"""Grouped expert GEMMs on the indexed MoE kernels: the contiguous layout (rows grouped by expert,
`offsets` [E+1]) and the masked, expert-parallel one (x [E, max_m, K], `counts` [E]).

Neither needs a kernel of its own: a group of rows is exactly what the indexed kernel computes for
one expert, so `grouped_rows` writes the routing table (sorted row ids, expert per block, used
length) that `moe_align` would produce for one choice per row, from the offsets or counts alone.
Every shape is fixed by (rows, experts, block), and the table is built by tensor ops on the
tensors' own device, so a call never reads a count back to the host and can be captured in a CUDA
graph. Bad offsets / counts are refused on the CPU at once, and by `torch._assert_async` (an
asynchronous device-side check, no host sync) on a GPU.
"""

from __future__ import annotations

import torch

from ..numerics.moe import align_length
from .moe import PreparedMoe


def _check(ok: torch.Tensor, message: str) -> None:
    if ok.device.type == "cpu":
        if not bool(ok.all()):
            raise ValueError(message)
    else:
        torch._assert_async(ok.all(), message)


def grouped_rows(
    starts: torch.Tensor, counts: torch.Tensor, rows: int, block_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) for groups of rows: expert e owns
    rows starts[e] .. starts[e] + counts[e] - 1 of a `rows`-row input, with top_k = 1.

    The same table as `moe_align` for the per-row expert ids (humming_core.numerics.moe): each
    expert's rows in order, padded to a multiple of `block_size` with the sentinel `rows`, experts
    in order, the unused tail all sentinels with expert 0.
    """
    num_experts = counts.numel()
    dev = counts.device
    counts = counts.reshape(-1).long()
    starts = starts.reshape(-1).long().to(dev)
    length = align_length(rows, block_size, num_experts, pad_sorted_ids=True)
    blocks = -(-counts // block_size)
    ends = torch.cumsum(blocks, 0)  # one past each expert's last block
    block = torch.arange(length // block_size, device=dev)
    expert = torch.searchsorted(ends, block, right=True)
    used = expert < num_experts
    expert = expert.clamp(max=num_experts - 1)
    row = (block - (ends - blocks)[expert])[:, None] * block_size + torch.arange(
        block_size, device=dev
    )
    valid = used[:, None] & (row < counts[expert][:, None])
    ids = torch.where(valid, starts[expert][:, None] + row, rows)
    expert_ids = torch.where(used, expert, 0)
    return (
        ids.reshape(-1).to(torch.int32),
        expert_ids.to(torch.int32),
        (ends[-1:] * block_size).to(torch.int32),
    )


def grouped_gemm(
    x: torch.Tensor,
    weight: PreparedMoe,
    *,
    offsets: torch.Tensor | None = None,
    counts: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Grouped GEMM of an expert-stacked layer (rows outside every group come out zero):
    - contiguous: x [T, K] with `offsets` [E+1] (rows offsets[e]:offsets[e+1] use expert e) -> [T, N];
    - masked: x [E, max_m, K] with `counts` [E] (the first counts[e] rows of x[e]) -> [E, max_m, N].

    The reference is humming_core.numerics.reference_grouped_gemm. `out`, when given, must be the
    zeroed output: only the grouped rows are written.
    """
    e = weight.num_experts
    if x.dim() == 2 and offsets is not None and counts is None:
        if offsets.numel() != e + 1:
            raise ValueError(f"offsets has {offsets.numel()} entries, expected E+1 = {e + 1}")
        bounds = offsets.reshape(-1).long()
        _check(
            (bounds[1:] >= bounds[:-1]) & (bounds[:1] >= 0) & (bounds[-1:] <= x.shape[0]),
            f"offsets must be non-decreasing within [0, {x.shape[0]}] (the rows of x)",
        )
        starts, sizes, flat = bounds[:-1], bounds[1:] - bounds[:-1], x
    elif x.dim() == 3 and counts is not None and offsets is None:
        if x.shape[0] != e or counts.numel() != e:
            raise ValueError(
                f"masked layout: x has {x.shape[0]} expert slices and counts {counts.numel()} "
                f"entries, the weight {e} experts"
            )
        max_m = x.shape[1]
        sizes = counts.reshape(-1).long()
        _check((sizes >= 0) & (sizes <= max_m), f"counts must lie in [0, {max_m}] (x.shape[1])")
        starts = torch.arange(e, device=counts.device) * max_m
        flat = x.reshape(-1, x.shape[-1])
    else:
        raise ValueError(
            "pass either x [T, K] with offsets [E+1] (contiguous layout) or x [E, max_m, K] with "
            f"counts [E] (masked layout); got x of shape {tuple(x.shape)}"
        )
    rows = flat.shape[0]
    if out is None:
        out = torch.zeros(rows, weight.n_out, dtype=weight.out_dtype, device=flat.device)
    else:
        out = out.view(rows, weight.n_out)
    block = weight.block_size(rows)
    table = grouped_rows(starts.to(flat.device), sizes.to(flat.device), rows, block)
    weight.run(flat, *table, 1, block, out=out, zero_unrouted=False)  # out is zeros already
    return out.view(*x.shape[:-1], weight.n_out)
