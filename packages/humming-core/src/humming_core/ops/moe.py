"""MoE GEMMs: the indexed (vLLM-style sorted token ids) expert GEMM and the whole fused MoE layer.

Routing alignment follows vLLM's `moe_align_block_size` contract (humming_core.numerics.moe): the
sorted ids index the flattened top-k choices, the first GEMM gathers row `id // top_k` of x, the
second reads the [M*top_k, I] intermediate with top_k = 1 and multiplies by the router weights.
"""

from __future__ import annotations

import copy
import functools
from bisect import bisect_left
from typing import Any

import torch

from ..device import Device, Kernel, PreparesMoeAlign, get_device
from ..packing import CanonicalWeight
from .layer import M_BUCKETS, PreparedLayer, bucket_of

# Routed-row counts (M * top_k) a MoE layer gets a kernel for: the dense buckets, then on to top 8
# of 8192 tokens. A kernel chooses its block for the rows an expert can expect, which grow with M
# far past the dense buckets' 8192 (E = 128, top 8: 64 rows per expert at M = 1024, 512 at 8192).
MOE_BUCKETS: tuple[int, ...] = (*M_BUCKETS, 16384, 32768, 65536)


def moe_bucket_of(rows: int) -> int:
    """The MoE bucket of `rows` routed rows."""
    return bucket_of(rows, MOE_BUCKETS)


# topk_ids dtypes a layer's device builds its routing alignment for when the layer is built: vLLM
# routes with int32 ids, torch.topk returns int64.
ROUTING_ID_DTYPES = (torch.int32, torch.int64)


class PreparedMoe(PreparedLayer):
    """One expert-stacked weight [E, N, K] bound to a device, kernels built per M bucket.

    A device that can build its routing alignment ahead (`PreparesMoeAlign`) does so here too, so
    neither `fused_moe` nor a CUDA-graph capture of it compiles anything after construction.
    """

    def __init__(
        self,
        cw: CanonicalWeight,
        device: Device | str | None = None,
        buckets: tuple[int, ...] = MOE_BUCKETS,
    ) -> None:
        super().__init__(cw, device, buckets)
        if isinstance(self.device, PreparesMoeAlign):
            self.device.prepare_moe_align(ROUTING_ID_DTYPES)
        # block_size's answers, indexed as _calls (the configs are fixed from here on)
        blocks = [getattr(self.configs[b], "block_m", self.DEFAULT_BLOCK) for b in self._buckets]
        self._blocks = (*blocks, blocks[-1])
        self._bind_calls()

    def _bind_calls(self) -> None:
        """One call per distinct kernel with `self.packed` bound (see _bind_moe_weights), in
        bucket order, indexed as PreparedGemm's: bisect_left(self._buckets, rows), which gives
        len(buckets) past the last bucket, so the last call is there twice."""
        calls: dict[int, Any] = {}
        for kernel in self.kernels.values():
            if id(kernel) not in calls:
                calls[id(kernel)] = _bind_moe_weights(kernel, self.packed)
        bucket_calls = [calls[id(self.kernels[b])] for b in self._buckets]
        self._calls = (*bucket_calls, bucket_calls[-1])

    def with_weights(self, packed: dict[str, torch.Tensor]) -> PreparedMoe:
        """A layer that shares this one's kernels but runs on `packed`: other weights packed in
        this layer's layout, with the same tensor names, shapes and dtypes (e.g. clones, for a
        benchmark that rotates through copies to keep them out of L2)."""
        mine = {k: (tuple(t.shape), t.dtype) for k, t in self.packed.items()}
        theirs = {k: (tuple(t.shape), t.dtype) for k, t in packed.items()}
        if mine != theirs:
            raise ValueError(
                f"with_weights: packed tensors {theirs} differ from this layer's {mine}"
            )
        twin = copy.copy(self)
        twin.packed = dict(packed)
        twin._bind_calls()
        return twin

    @staticmethod
    def _accept(cw: CanonicalWeight) -> None:
        if not cw.is_moe or cw.spec.layout != "moe":
            raise ValueError(
                "PreparedMoe takes expert-stacked weights (qweight [E, N, ...], spec.layout='moe'); "
                "use PreparedGemm for a dense layer"
            )

    # Alignment block for configs that do not choose one (e.g. the reference device).
    DEFAULT_BLOCK = 16

    def block_size(self, rows: int) -> int:
        """The routing block size the kernel for `rows` routed rows (M*top_k) was built for."""
        return self._blocks[bisect_left(self._buckets, rows)]

    def run(
        self,
        x: torch.Tensor,
        sorted_token_ids: torch.Tensor,
        expert_ids: torch.Tensor,
        num_tokens_post_padded: torch.Tensor,
        top_k: int,
        block_size: int,
        topk_weights: torch.Tensor | None = None,
        out: torch.Tensor | None = None,
        zero_unrouted: bool = True,
        routing_ready: bool = False,
    ) -> torch.Tensor:
        """[M*top_k, n_out]: row id = epilogue(x[id // top_k] @ W[expert]^T) (× its router weight).

        Rows no block routes (dropped entries, blocks of expert -1) are zero; with
        `zero_unrouted=False` they are left as `out` held them, for a caller that never reads them
        or has zeroed them already (the kernels write only routed rows: one fill less).
        `routing_ready=True`: the routing tensors were complete before the previous kernel in the
        stream began, so a kernel that can may read them while that kernel finishes (see
        humming_core.device.Kernel)."""
        if x.dtype not in self._x_dtypes or x.shape[-1] != self.k:
            self._check_input(x)  # raises, saying which
        if x.dim() != 2:
            raise ValueError(f"x must be [M, K] for a MoE GEMM, got shape {tuple(x.shape)}")
        rows = x.shape[0] * top_k
        out = self._check_out(out, rows, (rows, self.n_out), x.device)
        if topk_weights is not None and topk_weights.numel() != rows:
            raise ValueError(
                f"topk_weights has {topk_weights.numel()} entries, expected M*top_k = {rows}"
            )
        if zero_unrouted:
            out.zero_()
        if rows:
            call = self._calls[bisect_left(self._buckets, rows)]
            ready = {"routing_ready": True} if routing_ready and _overlaps(call) else {}
            call(
                x=x.contiguous(),
                out=out,
                sorted_token_ids=sorted_token_ids,
                expert_ids=expert_ids,
                num_tokens_post_padded=num_tokens_post_padded,
                top_k=top_k,
                block_size=block_size,
                topk_weights=topk_weights,
                **ready,
            )
        return out


def _overlaps(call: Any) -> bool:
    """Whether a bound MoE call takes `routing_ready` (humming_core.device.Kernel)."""
    return getattr(call, "overlaps_routing", False)


def _bind_moe_weights(kernel: Kernel, packed: dict[str, torch.Tensor]) -> Any:
    """The kernel's call with this layer's packed weights bound (the keywords of PreparedMoe.run's
    call): the kernel's own `prepare(**packed)` when it has one (a kernel that keeps a checked
    argument template), else the kernel with the weights as fixed keywords."""
    prepare = getattr(kernel, "prepare", None)
    return prepare(**packed) if prepare is not None else functools.partial(kernel, **packed)


def moe_gemm(
    x,
    weight: PreparedMoe | CanonicalWeight,
    sorted_token_ids,
    expert_ids,
    num_tokens_post_padded,
    top_k: int,
    block_size: int,
    topk_weights=None,
) -> torch.Tensor:
    """The indexed MoE GEMM on the active device (see PreparedMoe.run)."""
    layer = weight if isinstance(weight, PreparedMoe) else PreparedMoe(weight)
    return layer.run(
        x, sorted_token_ids, expert_ids, num_tokens_post_padded, top_k, block_size, topk_weights
    )


def moe_align(
    topk_ids: torch.Tensor,
    block_size: int,
    num_experts: int,
    expert_map: torch.Tensor | None = None,
    ignore_invalid_experts: bool = False,
    pad_sorted_ids: bool = False,
    device: Device | str | None = None,
    zero_rows: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) as vLLM's moe_align_block_size;
    with `zero_rows` ([M*top_k, n]) also zeroes the rows of the entries it drops.

    Runs on `device` (default: the active one) when it implements `SupportsMoeAlign` (no host
    synchronisation there), else with the reference numerics, which read the counts back to the
    host and so cannot be captured in a CUDA graph. The contract: humming_core.numerics.moe."""
    dev = device if device is not None and not isinstance(device, str) else get_device(device)
    # what isinstance(dev, SupportsMoeAlign) tests (the method is there and not None), without the
    # protocol check's walk over its members: a few microseconds of every eager layer call
    align = getattr(dev, "moe_align", None)
    if align is None:
        from ..numerics.moe import moe_align as align
    return align(
        topk_ids,
        block_size,
        num_experts,
        expert_map,
        ignore_invalid_experts,
        pad_sorted_ids,
        zero_rows=zero_rows,
    )


def fused_moe(
    x: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    w13: PreparedMoe,
    w2: PreparedMoe,
    expert_map: torch.Tensor | None = None,
) -> torch.Tensor:
    """The whole MoE layer: w13 GEMM with its GLU epilogue, w2 GEMM with the router weights, top-k sum.

    x [M, H], topk_weights / topk_ids [M, top_k], w13 [E, 2I, H], w2 [E, H, I] -> [M, H].
    The routing is aligned on w13's device (`moe_align`), to the block size each layer's kernel
    for M*top_k rows was built with (once, or twice when w13 and w2 chose different blocks); on a
    device with its own alignment op the layer runs without host synchronisation.
    """
    m, top_k = topk_ids.shape
    out = fused_moe_rows(x, topk_weights, topk_ids, w13, w2, expert_map)
    # torch sums 16-bit rows in fp32 and rounds once: fp32 accumulation in one pass, without an
    # fp32 copy of the [M*top_k, H] rows (0.5 GB at M = 8192, top-8, H = 2048) or a cast after
    return out.view(m, top_k, -1).sum(dim=1)


def fused_moe_rows(
    x: torch.Tensor,
    topk_weights: torch.Tensor,
    topk_ids: torch.Tensor,
    w13: PreparedMoe,
    w2: PreparedMoe,
    expert_map: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """`fused_moe` before its top-k sum: [M*top_k, H], row t*top_k + j = router weight j of token t
    times expert topk_ids[t, j]'s output, zero for an entry the routing drops (alignment, w13 and
    w2 GEMMs; into `out` when given).

    w13's output is not filled: w2 reads only its routed rows. The output rows w2 does not write
    are those of dropped entries. Without an expert map only out-of-range ids drop, and the first
    alignment zeroes their rows (moe_align's `zero_rows`: no fill). With one, most rows may drop
    (seven in eight at 8-way expert parallelism), and a fill of the whole output over every SM beats
    the alignment's few CTAs."""
    m, top_k = topk_ids.shape
    if w13.n_out != w2.k:
        raise ValueError(f"w13 produces {w13.n_out} features per token but w2 takes K={w2.k}")
    num_experts = w13.num_experts if expert_map is None else expert_map.numel()
    rows = m * top_k
    out = w2._check_out(out, rows, (rows, w2.n_out), x.device)
    fill = expert_map is not None
    block13, block2 = w13.block_size(rows), w2.block_size(rows)
    align = functools.partial(
        moe_align,
        topk_ids,
        num_experts=num_experts,
        expert_map=expert_map,
        ignore_invalid_experts=True,
        device=w13.device,
    )
    align13 = align(block13, zero_rows=None if fill else out)
    hidden = w13.run(x, *align13, top_k, block13, zero_unrouted=False)
    if w2.act_dtype is not None and hidden.dtype is not w2.act_dtype:
        hidden = hidden.to(w2.act_dtype)
    # one alignment serves both GEMMs when their kernels chose one block (the rows of dropped
    # entries are zeroed by the first)
    align2 = align13 if block2 == block13 else align(block2)
    return w2.run(
        hidden,
        *align2,
        1,
        block2,
        topk_weights=topk_weights,
        out=out,
        zero_unrouted=fill,
        routing_ready=block2 == block13,  # aligned before w13 ran, not between w13 and w2
    )
