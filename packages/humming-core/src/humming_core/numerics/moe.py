"""Reference MoE: vLLM's routing alignment, the gathered (indexed) GEMM, grouped layouts, fused MoE.

`moe_align` reproduces vLLM's `moe_align_block_size` (vllm/model_executor/layers/fused_moe/
moe_align_block_size.py and csrc/moe/moe_align_sum_kernels.cu):
- sorted_token_ids, int32, length numel + E*(block-1) (rounded up to a block with pad_sorted_ids;
  min(that, numel*block) when numel < E): indices into the flattened topk_ids (t*top_k + j), grouped
  by expert in expert order, each expert's run padded to a multiple of block_size with the sentinel
  numel(topk_ids); unused tail entries hold the sentinel too.
- expert_ids, int32, one per block of ceil(length/block) blocks: the expert of each used block, 0 for
  the unused tail. With expert_map and ignore_invalid_experts=False, every entry (tail included) is
  then mapped through expert_map, so non-local experts become -1; with ignore_invalid_experts=True,
  tokens of non-local experts are dropped before counting and the blocks carry local ids.
- num_tokens_post_padded, int32 [1] on the same device: the used length, a multiple of block_size.
Ids outside [0, num_experts) are dropped, as vLLM's kernel does. With `zero_rows` ([numel, n], one
row per flattened entry, e.g. a fused layer's output) the rows of the dropped entries are set to
zero (other rows are left alone): the rows no GEMM of the layer will write. Within an expert the
tokens are in ascending order; vLLM's large-batch CUDA path may permute them within an expert
(atomics), so compare per-expert sets against a GPU result, or positions against this reference.
"""

from __future__ import annotations

import torch

from ..packing.canonical import CanonicalWeight
from ..spec.quant import ActSpec
from .epilogue import apply_epilogue, resolve_out_dtype
from .gemm import prepare_act
from .quant import dequantize_weight


def align_length(numel: int, block_size: int, num_experts: int, pad_sorted_ids: bool) -> int:
    """Length of `moe_align`'s sorted ids for `numel` routed entries: room for every expert's run
    padded to a block (see the module docstring)."""
    length = numel + num_experts * (block_size - 1)
    if pad_sorted_ids:
        length = -(-length // block_size) * block_size
    if numel < num_experts:
        length = min(numel * block_size, length)
    return length


def _routing_keys(
    flat: torch.Tensor, num_experts: int, expert_map: torch.Tensor | None, ignore_invalid: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(expert key per flattened entry, mask of entries that take part)."""
    valid = (flat >= 0) & (flat < num_experts)
    keys = flat.clamp(0, num_experts - 1)
    if expert_map is not None and ignore_invalid:
        if expert_map.numel() != num_experts:
            raise ValueError(
                f"expert_map has {expert_map.numel()} entries but num_experts={num_experts}: "
                "num_experts is the global expert count and expert_map maps every global expert"
            )
        keys = expert_map.to(flat.device).long()[keys]
        valid &= keys >= 0
        keys = keys.clamp(min=0)
    return keys, valid


def moe_align(
    topk_ids: torch.Tensor,
    block_size: int,
    num_experts: int,
    expert_map: torch.Tensor | None = None,
    ignore_invalid_experts: bool = False,
    pad_sorted_ids: bool = False,
    zero_rows: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) as vLLM's moe_align_block_size."""
    if block_size < 1 or num_experts < 1:
        raise ValueError(f"block_size={block_size} and num_experts={num_experts} must both be >= 1")
    if zero_rows is not None and (zero_rows.dim() != 2 or zero_rows.shape[0] != topk_ids.numel()):
        raise ValueError(
            f"zero_rows must be [{topk_ids.numel()}, n] (one row per routing entry), got "
            f"{tuple(zero_rows.shape)}"
        )
    device = topk_ids.device
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    length = align_length(numel, block_size, num_experts, pad_sorted_ids)
    keys, valid = _routing_keys(flat, num_experts, expert_map, ignore_invalid_experts)
    if zero_rows is not None:
        zero_rows[~valid.to(zero_rows.device)] = 0
    tokens = torch.arange(numel, device=device)[valid]
    keys = keys[valid]
    counts = torch.bincount(keys, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    starts = torch.cumsum(padded, 0) - padded
    order = torch.argsort(keys, stable=True)
    keys, tokens = keys[order], tokens[order]
    # Rank of each token inside its expert = its position minus where the expert's run begins.
    rank = torch.arange(keys.numel(), device=device) - (torch.cumsum(counts, 0) - counts)[keys]
    sorted_ids = torch.full((length,), numel, dtype=torch.int32, device=device)
    sorted_ids[starts[keys] + rank] = tokens.to(torch.int32)
    total = int(padded.sum())
    expert_ids = torch.zeros(-(-length // block_size), dtype=torch.int64, device=device)
    used = total // block_size
    expert_ids[:used] = torch.repeat_interleave(
        torch.arange(num_experts, device=device), padded // block_size
    )
    if expert_map is not None and not ignore_invalid_experts:
        expert_ids = expert_map.to(device).long()[expert_ids]
    post = torch.tensor([total], dtype=torch.int32, device=device)
    return sorted_ids, expert_ids.to(torch.int32), post


def _expert_slice(cw: CanonicalWeight, e: int) -> CanonicalWeight:
    """Expert e of a MoE weight, kept 3-D (E=1) so its spec (layout 'moe') still applies."""
    pick = lambda t: None if t is None else t[e : e + 1]  # noqa: E731
    return CanonicalWeight(
        spec=cw.spec,
        n=cw.n,
        k=cw.k,
        qweight=cw.qweight[e : e + 1],
        scales=pick(cw.scales),
        zeros=pick(cw.zeros),
        global_scale=pick(cw.global_scale),
        bias=pick(cw.bias),
    )


def _check_moe(cw: CanonicalWeight, x: torch.Tensor) -> None:
    if not cw.is_moe:
        raise ValueError(
            "this MoE reference takes an (E, N, K) canonical weight; use reference_gemm for dense"
        )
    if x.shape[-1] != cw.k:
        raise ValueError(f"activations have K={x.shape[-1]} but the expert weights have K={cw.k}")


def _expert_rows(
    xa: torch.Tensor, cw: CanonicalWeight, e: int, row_weight: torch.Tensor | None
) -> torch.Tensor:
    """Epilogue(xa @ W_e^T) in the spec's output dtype for the rows xa routed to expert e."""
    acc = xa @ dequantize_weight(_expert_slice(cw, e))[0].T
    bias = None if cw.bias is None else cw.bias[e]
    return apply_epilogue(
        acc, cw.spec.epilogue, bias=bias, row_weight=row_weight, out_dtype=cw.spec.output_dtype
    )


def _out_width(cw: CanonicalWeight) -> int:
    return cw.n // 2 if cw.spec.epilogue.glu != "none" else cw.n


def _empty_out(rows: int, cw: CanonicalWeight, device: torch.device) -> torch.Tensor:
    dtype = resolve_out_dtype(cw.spec.epilogue, cw.spec.output_dtype)
    return torch.zeros(rows, _out_width(cw), dtype=dtype, device=device)


def reference_moe_gemm(
    x: torch.Tensor,
    cw: CanonicalWeight,
    sorted_token_ids: torch.Tensor,
    expert_ids: torch.Tensor,
    num_tokens_post_padded: torch.Tensor,
    top_k: int,
    mul_topk_weights: torch.Tensor | None = None,
    *,
    block_size: int,
    act_scale_static: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """Gathered MoE GEMM: out[id] = epilogue(x[id // top_k] @ W[expert of id's block]^T) for every
    non-sentinel id of the used blocks; blocks with expert -1 and unrouted rows stay zero.

    x [M, K]; output [M*top_k, N] (N/2 with a GLU). `mul_topk_weights` ([M, top_k] or flat) scales
    row id by its router weight. `block_size` is the alignment block the ids were built with."""
    _check_moe(cw, x)
    numel = x.shape[0] * top_k
    total = int(num_tokens_post_padded.reshape(-1)[0])
    ids = sorted_token_ids[:total].long()
    experts = expert_ids.long()[torch.arange(total, device=ids.device) // block_size]
    keep = (ids < numel) & (experts >= 0)
    ids, experts = ids[keep], experts[keep]
    xa = prepare_act(x, cw.spec.act, act_scale_static)
    weights = None if mul_topk_weights is None else mul_topk_weights.reshape(-1).float()
    out = _empty_out(numel, cw, x.device)
    for e in torch.unique(experts).tolist():
        rows = ids[experts == e]
        rw = None if weights is None else weights[rows]
        out[rows] = _expert_rows(xa[rows // top_k], cw, e, rw)
    return out


def reference_grouped_gemm(
    x: torch.Tensor,
    cw: CanonicalWeight,
    *,
    offsets: torch.Tensor | None = None,
    counts: torch.Tensor | None = None,
    act_scale_static: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """Grouped GEMM over experts in one of two layouts (rows outside every group stay zero):
    - contiguous: x [T, K] with `offsets` [E+1], rows offsets[e]:offsets[e+1] use expert e -> [T, N];
    - masked: x [E, max_m, K] with `counts` [E], the first counts[e] rows of x[e] -> [E, max_m, N]."""
    _check_moe(cw, x)
    if x.dim() == 2 and offsets is not None and counts is None:
        bounds = offsets.reshape(-1).tolist()
        spans = [(e, bounds[e], bounds[e + 1]) for e in range(len(bounds) - 1)]
        flat = x
    elif x.dim() == 3 and counts is not None and offsets is None:
        max_m = x.shape[1]
        spans = [
            (e, e * max_m, e * max_m + int(c)) for e, c in enumerate(counts.reshape(-1).tolist())
        ]
        flat = x.reshape(-1, x.shape[-1])
    else:
        raise ValueError(
            "pass either x [T, K] with offsets [E+1] (contiguous layout) or x [E, max_m, K] with "
            f"counts [E] (masked layout); got x of shape {tuple(x.shape)}"
        )
    if len(spans) != cw.num_experts:
        raise ValueError(
            f"the layout describes {len(spans)} experts but the weight has {cw.num_experts}"
        )
    rows = torch.cat([torch.arange(lo, hi, device=x.device) for _, lo, hi in spans])
    out = _empty_out(flat.shape[0], cw, x.device)
    if rows.numel() == 0:
        return out.reshape(*x.shape[:-1], out.shape[-1])
    # Quantize only rows that belong to a group: padding rows must not move a per-tensor scale.
    xa = torch.zeros(flat.shape, dtype=torch.float32, device=x.device)
    xa[rows] = prepare_act(flat[rows], cw.spec.act, act_scale_static)
    for e, lo, hi in spans:
        if hi > lo:
            out[lo:hi] = _expert_rows(xa[lo:hi], cw, e, None)
    return out.reshape(*x.shape[:-1], out.shape[-1])


def reference_fused_moe(
    x: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    w13: CanonicalWeight,
    w2: CanonicalWeight,
    expert_map: torch.Tensor | None = None,
    block_size: int = 16,
) -> torch.Tensor:
    """Fused MoE: per (token, k) the w13 GEMM with w13's epilogue (the GLU), the w2 GEMM, then the
    router-weighted sum over top_k -> [M, H] in w2's output dtype. `expert_map` (global -> local id
    or -1) drops experts that are not local. `block_size` only changes how the work is tiled."""
    m, top_k = topk_ids.shape
    num_experts = w13.num_experts if expert_map is None else expert_map.numel()
    align = moe_align(topk_ids, block_size, num_experts, expert_map, ignore_invalid_experts=True)
    hidden = reference_moe_gemm(x, w13, *align, top_k, block_size=block_size)
    if hidden.shape[-1] != w2.k:
        raise ValueError(
            f"w13 produces {hidden.shape[-1]} features per token but w2 takes K={w2.k}"
        )
    hidden = _as_next_act(hidden, w2.spec.act)
    out = reference_moe_gemm(hidden, w2, *align, 1, topk_weights, block_size=block_size)
    total = out.float().reshape(m, top_k, -1).sum(dim=1)
    return total.to(resolve_out_dtype(w2.spec.epilogue, w2.spec.output_dtype))


def _as_next_act(hidden: torch.Tensor, act: ActSpec) -> torch.Tensor:
    """The intermediate as the second GEMM reads it: quantized specs take any float, 16-bit specs
    take their own dtype (what a fused kernel writes between the two GEMMs)."""
    if act.is_quantized:
        return hidden
    return hidden.to({"fp16": torch.float16, "bf16": torch.bfloat16}[act.dtype.name])
