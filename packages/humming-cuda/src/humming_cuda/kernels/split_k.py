"""Cross-CTA split-K on the host side: the launch's split count and the shared workspace.

The kernels sum their gridDim.z partials with humming::SplitKReducer (epilogue/epilogue.cuh): each
split writes its 4-byte partials to a workspace slot and bumps the tile's counter; the last one
adds them in split order and leaves the counter at zero again.
"""

from __future__ import annotations

import threading

import torch


def pow2_fill(ctas: int, tiles: int) -> int:
    """The largest power of two s with tiles * s <= ctas (at least 1): how many K splits keep
    `tiles` output tiles within `ctas` concurrent CTAs."""
    return 1 << (max(1, ctas // tiles).bit_length() - 1)


def clamp_split(split: int, iters: int) -> int:
    """`split` cut to keep at least 4 K iterations per split and at most 16 splits (at least 1)."""
    return max(1, min(split, iters // 4, 16))


def split_iterations(iters: int, split_k: int) -> tuple[int, int]:
    """(splits, K iterations per split) for `iters` K iterations and a requested `split_k`: no
    split is left empty (a requested 4 over 6 iterations launches 3 splits of 2)."""
    split = max(1, min(split_k, iters))
    per_split = -(-iters // split)
    return -(-iters // per_split), per_split


class SplitKBuffers:
    """Per-device 4-byte workspace and tile counters for split-K, grown on demand and then reused.

    The counters start at zero and every split-K launch leaves them at zero, so a call needs no
    memset (CUDA-graph replays included). Grow them in a warm-up call before capturing a graph.
    Launches that share a device must not run concurrently on different streams.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def get(
        self, device: torch.device, floats: int, tiles: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        index = device.index if device.index is not None else torch.cuda.current_device()
        with self._lock:
            ws, ct = self._buffers.get(index, (None, None))
            if ws is None or ws.numel() < floats:
                ws = torch.empty(max(floats, 1 << 16), dtype=torch.float32, device=device)
            if ct is None or ct.numel() < tiles:
                ct = torch.zeros(max(tiles, 1024), dtype=torch.int32, device=device)
            self._buffers[index] = (ws, ct)
            return ws, ct


SPLIT_K_BUFFERS = SplitKBuffers()


def tile_workspace(
    device: torch.device, tiles: int, split: int, tile_floats: int, counters: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The shared workspace for `split` fp32 partial tiles of `tile_floats` per output tile, and
    `counters` counters (one per tile unless given)."""
    return SPLIT_K_BUFFERS.get(device, tiles * split * tile_floats, counters or tiles)


def split_launch(
    steps: int, split_k: int, tiles: int, tile_floats: int, device: torch.device
) -> tuple[int, dict[str, torch.Tensor], dict[str, int]]:
    """For a kernel whose signature takes `workspace`, `counters` and `iters_per_split` (dim IPS):
    (splits, those buffers by argument name, none unsplit, {"IPS": steps per split}) for `steps`
    K steps of `tiles` output tiles and a requested `split_k`."""
    split, per_split = split_iterations(steps, split_k)
    dims = {"IPS": per_split}
    if split == 1:
        return 1, {}, dims
    workspace, counters = tile_workspace(device, tiles, split, tile_floats)
    return split, {"workspace": workspace, "counters": counters}, dims
