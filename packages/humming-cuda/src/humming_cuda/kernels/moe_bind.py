"""What the indexed MoE GEMM kernels (moe_wna16, moe_w8a8) share when called: the routing checks,
the router weights' flat form, and the launch over alignment blocks (one CTA row per block of
`block_m` sorted ids, or as many persistent CTAs as the GPU holds, each walking (block, column
tile) tiles; rows no block routes are not written: humming_core.ops.PreparedMoe.run zeroes them
when its caller reads them, see humming_core.device.Kernel).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

MAX_GRID_Y = 65535  # CUDA grid limit on y (one row of CTAs per alignment block)


def check_routing(name: str, block_m: int, values: dict[str, Any]) -> None:
    """The routing was aligned for this kernel's block and has an expert per block."""
    if values["block_size"] != block_m:
        raise ValueError(
            f"{name}: block_size={values['block_size']} but this kernel's config has "
            f"block_m={block_m}: align the routing (moe_align) with block_size={block_m}"
        )
    blocks = -(-values["sorted_token_ids"].numel() // block_m)
    if values["expert_ids"].numel() < blocks:
        raise ValueError(
            f"{name}: expert_ids has {values['expert_ids'].numel()} entries, expected one "
            f"per block of {block_m} sorted ids ({blocks})"
        )


def flatten_topk_weights(values: dict[str, Any]) -> None:
    """topk_weights [M, top_k] (any float dtype) as the kernels read them: fp32 [M * top_k]."""
    tw = values.get("topk_weights")
    if tw is not None:
        values["topk_weights"] = tw.reshape(-1).float().contiguous()


def blocks_grid(cfg: Any, columns: int, num_ids: int, ctas: int = 0) -> tuple[int, int, int]:
    """ceil(columns / block_n) x ceil(num_ids / block_m) CTAs, one per (column tile, alignment
    block); with `ctas` > 0 (a persistent kernel, each CTA walking tiles) at most that many in x."""
    grid_n, blocks = -(-columns // cfg.block_n), -(-num_ids // cfg.block_m)
    if ctas > 0:
        return (min(ctas, grid_n * blocks), 1, 1)
    return (grid_n, blocks, 1)


def launch_blocks(
    kernel: Any,
    out: torch.Tensor,
    columns: int,
    num_ids: int,
    params: Callable[[], Any],
    smem: int,
    ctas: int = 0,
) -> None:
    """Launch `kernel.launcher` over blocks_grid's CTAs; `params` builds the parameter block only
    when there is something to launch."""
    cfg = kernel.config
    if out.shape[0] == 0 or num_ids == 0:
        return
    if ctas == 0 and -(-num_ids // cfg.block_m) > MAX_GRID_Y:
        raise ValueError(
            f"{kernel.name}: {-(-num_ids // cfg.block_m)} alignment blocks of {cfg.block_m} "
            f"sorted ids exceed the launch limit of {MAX_GRID_Y}: split the batch into smaller "
            "calls"
        )
    kernel.launcher(blocks_grid(cfg, columns, num_ids, ctas), (cfg.threads, 1, 1), params(), smem)
