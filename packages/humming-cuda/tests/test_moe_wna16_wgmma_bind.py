"""The MoE WnA16-wgmma launch without a GPU (fake_launch): grid, block, shared memory and the
parameters in the entry's order for one call, the prepared call (moe_wna16's MoeWna16Call) launching
what the full check computes, and the errors for a routing aligned to another block and for x rows
the 16-byte gathers cannot copy."""

from __future__ import annotations

import pytest
import torch
from fake_launch import FakeFunction, Recorder, cuda

from humming_core.spec import preset
from humming_cuda.kernels.moe_bind import MAX_GRID_Y, blocks_grid, launch_blocks
from humming_cuda.kernels.moe_wna16.call import MoeWna16Call
from humming_cuda.kernels.moe_wna16_wgmma import MoeWna16WgmmaConfig, MoeWna16WgmmaKernel
from humming_cuda.kernels.moe_wna16_wgmma.config import smem_bytes

E, TOPK, M = 8, 2, 40
N, K = 320, 264  # an N tail past the 256-column tile, a K tail past the 64-deep step
SPEC = preset("W4A16_G128").replace(layout="moe", epilogue={"glu": "silu_mul"})
NP, KT = 320, 17  # the moe_wna16 layout pads N to 64 (GLU halves to 32) and K to 16


def make_kernel(block_m: int = 64) -> MoeWna16WgmmaKernel:
    cfg = MoeWna16WgmmaConfig(arch="sm_90a", block_m=block_m)
    kernel = MoeWna16WgmmaKernel(FakeFunction(), SPEC, cfg)
    kernel.launcher = Recorder(kernel.signature.ctypes)
    return kernel


def packed() -> dict[str, torch.Tensor]:
    return {
        "qweight": cuda(torch.zeros(E, NP // 64, KT, 128, dtype=torch.int32)),
        "scales": cuda(torch.zeros(E, 3, NP, dtype=torch.float16)),  # ceil(264 / 128) groups
        "global_scale": cuda(torch.ones(E)),
    }


def operands(block: int, m: int = M, x: torch.Tensor | None = None) -> dict:
    rows = m * TOPK
    length = rows + E * (block - 1)
    return {
        "x": cuda(torch.zeros(m, K, dtype=torch.float16)) if x is None else x,
        "out": cuda(torch.ones(rows, N // 2, dtype=torch.float16)),
        "sorted_token_ids": cuda(torch.zeros(length, dtype=torch.int32)),
        "expert_ids": cuda(torch.zeros(-(-length // block), dtype=torch.int32)),
        "num_tokens_post_padded": cuda(torch.zeros(1, dtype=torch.int32)),
        "top_k": TOPK,
        "block_size": block,
        "topk_weights": cuda(torch.rand(m, TOPK, dtype=torch.float16), kept=True),
    }


@pytest.mark.parametrize("block_m", [64, 128])
def test_one_call_launches_the_entry_with_its_grid_and_parameters(block_m):
    kernel, weights = make_kernel(block_m), packed()
    call = operands(block_m)
    kernel(**call, **weights)
    assert (call["out"] == 1).all()  # the launch alone writes out: no fill (PreparedMoe.run's)
    [(grid, block, smem, params)] = kernel.launcher.launches
    num_ids = call["sorted_token_ids"].numel()
    # persistent: one CTA per tile (2 column tiles: 320 packed columns over 256-column tiles, per
    # alignment block), at most the 132 the fake GPU holds at once
    assert grid == (min(132, 2 * -(-num_ids // block_m)), 1, 1)
    assert block == (384, 1, 1) and smem == smem_bytes(kernel.fmt, kernel.config) == kernel.smem
    ptr = lambda name: call[name].data_ptr() if name in call else weights[name].data_ptr()  # noqa: E731
    want = {
        **{n: ptr(n) for n in ("x", "qweight", "scales", "global_scale", "out")},
        **{n: ptr(n) for n in ("sorted_token_ids", "expert_ids", "num_tokens_post_padded")},
        "zeros": 0,
        "channel_scale": 0,
        "bias": 0,
        "N": NP,
        "n_out": N // 2,
        "K": K,
        "lda": K,
        "ldc": N // 2,
        "n_pad": NP,
        "k_tiles": KT,
        "groups": 3,
        "group_shift": 7,
        "top_k": TOPK,
        "numel": M * TOPK,
        "num_ids": num_ids,
        "num_experts": E,
        "a_scales": 0,  # read only by row-scaled epilogues (moe_wna16_a8)
    }
    got = dict(zip(kernel.signature.names, params, strict=True))
    assert got.pop("topk_weights") != 0  # flattened to fp32 by the call: a new tensor
    assert got == want


def test_the_prepared_call_launches_what_the_full_check_computes(monkeypatch):
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    assert isinstance(call, MoeWna16Call)
    block = kernel.config.block_m
    call(**operands(block))  # the full check, keeping the template
    monkeypatch.setattr(kernel, "checked", None)  # the quick path must not check again
    args = operands(block, m=70)
    call(**args)
    monkeypatch.undo()
    dims, params = kernel.checked({**args, **weights})
    fast = kernel.launcher.launches[-1]
    at = kernel.signature.names.index("topk_weights")
    assert fast[:3] == ((min(132, 2 * -(-dims["LEN"] // block)), 1, 1), (384, 1, 1), kernel.smem)
    assert fast[3][:at] + fast[3][at + 1 :] == params[:at] + params[at + 1 :]


def test_a_routing_aligned_to_another_block_is_refused():
    kernel = make_kernel(64)
    with pytest.raises(ValueError, match="block_size=128 but this kernel's config has block_m=64"):
        kernel(**operands(128), **packed())
    assert not kernel.launcher.launches


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (torch.zeros(M, K + 8, dtype=torch.float16)[:, 1 : K + 1], "aligned to 16 bytes"),
        (torch.zeros(M, K + 4, dtype=torch.float16)[:, :K], "row stride that is a multiple of 16"),
        (torch.zeros(M, K - 4, dtype=torch.float16), "K=260, .* K must be a multiple of 8"),
        (torch.zeros(M + 8, K + 8, dtype=torch.float16)[:M, : K - 4], "K must be a multiple of 8"),
    ],
    ids=["offset", "stride", "k", "k-of-aligned-rows"],
)
def test_x_rows_the_gathers_cannot_copy_are_refused(x, message):
    kernel, weights = make_kernel(), packed()
    with pytest.raises(ValueError, match=rf"'x': .*{message}"):
        kernel(**operands(64, x=cuda(x)), **weights)
    prepared = kernel.prepare(**weights)
    prepared(**operands(64))  # a valid call first: the template exists
    with pytest.raises(ValueError, match=message):
        prepared(**operands(64, x=cuda(x)))
    assert len(kernel.launcher.launches) == 1


def test_blocks_grid_is_one_cta_per_tile_or_the_resident_ctas():
    cfg = MoeWna16WgmmaConfig(arch="sm_90a", block_m=64)
    # 600 columns: 3 tiles of 256; 1000 sorted ids: 16 blocks of 64
    assert blocks_grid(cfg, 600, 1000) == (3, 16, 1)
    assert blocks_grid(cfg, 600, 1000, ctas=132) == (48, 1, 1)  # fewer tiles than CTAs
    assert blocks_grid(cfg, 600, 64 * 100, ctas=132) == (132, 1, 1)


def test_only_one_cta_per_tile_launches_are_bound_by_the_grid_limit():
    kernel = make_kernel(64)
    out = cuda(torch.empty(1, 8))
    ids = (MAX_GRID_Y + 1) * 64
    with pytest.raises(ValueError, match=f"{MAX_GRID_Y + 1} alignment blocks of 64 .* split"):
        launch_blocks(kernel, out, 256, ids, lambda: [], kernel.smem)
    assert not kernel.launcher.launches
    launch_blocks(kernel, out, 256, ids, lambda: [], kernel.smem, ctas=132)  # persistent
    assert kernel.launcher.launches[-1][0] == (132, 1, 1)
