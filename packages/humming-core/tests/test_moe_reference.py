"""Reference MoE: vLLM's moe_align_block_size contract, the gathered GEMM, grouped layouts and the
fused MoE, each against a plain per-token loop."""

from __future__ import annotations

import pytest
import torch

from humming_core.numerics.moe import (
    moe_align,
    reference_fused_moe,
    reference_grouped_gemm,
    reference_moe_gemm,
)
from humming_core.numerics.quant import dequantize_weight, quantize_weight
from humming_core.spec import QuantSpec, presets


def test_vllm_docstring_example():
    # vLLM's docstring says num_experts=4, but its ids reach 4: the output it lists is that of 5
    # experts (expert 0 empty), which is what the CUDA kernel computes for num_experts=5.
    topk_ids = torch.tensor([[2, 3, 4], [1, 2, 4], [1, 3, 4], [1, 2, 3]], dtype=torch.int32)
    sorted_ids, expert_ids, post = moe_align(topk_ids, block_size=4, num_experts=5)
    assert sorted_ids.dtype == expert_ids.dtype == post.dtype == torch.int32
    assert post.tolist() == [16]
    assert sorted_ids[:16].tolist() == [3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12, 2, 5, 8, 12]
    assert sorted_ids.numel() == 12 + 5 * 3 and (sorted_ids[16:] == 12).all()
    assert expert_ids.tolist() == [1, 2, 3, 4, 0, 0, 0]  # ceil(27 / 4) blocks, the unused ones 0


def _golden_align(topk_ids, block, num_experts, expert_map=None, ignore_invalid=False, pad=False):
    """vLLM's semantics written as a plain loop (after its tests' torch_moe_align_block_size)."""
    flat = topk_ids.flatten().tolist()
    numel = len(flat)
    length = numel + num_experts * (block - 1)
    if pad:
        length = -(-length // block) * block
    if numel < num_experts:
        length = min(numel * block, length)
    sorted_ids = [numel] * length
    expert_ids = [0] * (-(-length // block))
    emap = None if expert_map is None else expert_map.tolist()
    pos = blk = 0
    for e in range(num_experts):
        key = e
        if ignore_invalid and emap is not None:
            if emap[e] == -1:
                continue
            key = emap[e]
        tokens = [i for i, v in enumerate(flat) if v == e]
        if not tokens:
            continue
        sorted_ids[pos : pos + len(tokens)] = tokens
        nblocks = -(-len(tokens) // block)
        expert_ids[blk : blk + nblocks] = [key] * nblocks
        pos += nblocks * block
        blk += nblocks
    if emap is not None and not ignore_invalid:
        expert_ids = [emap[e] for e in expert_ids]
    return sorted_ids, expert_ids, pos


@pytest.mark.parametrize("m", [1, 3, 17, 64])
@pytest.mark.parametrize("topk", [1, 2, 4])
@pytest.mark.parametrize("num_experts", [4, 8, 33])
@pytest.mark.parametrize("block", [1, 4, 16])
def test_align_matches_the_loop(m, topk, num_experts, block):
    g = torch.Generator().manual_seed(m * 1000 + topk * 100 + num_experts + block)
    topk_ids = torch.stack(
        [torch.randperm(num_experts, generator=g)[:topk] for _ in range(m)]
    ).int()
    for pad in (False, True):
        s, e, n = moe_align(topk_ids, block, num_experts, pad_sorted_ids=pad)
        gs, ge, gn = _golden_align(topk_ids, block, num_experts, pad=pad)
        assert s.tolist() == gs and e.tolist() == ge and n.tolist() == [gn]
        assert gn % block == 0
    # expert parallelism: every other expert is local
    emap = torch.full((num_experts,), -1, dtype=torch.int32)
    emap[::2] = torch.arange((num_experts + 1) // 2, dtype=torch.int32)
    for ignore in (False, True):
        s, e, n = moe_align(topk_ids, block, num_experts, emap, ignore_invalid_experts=ignore)
        gs, ge, gn = _golden_align(topk_ids, block, num_experts, emap, ignore)
        assert s.tolist() == gs and e.tolist() == ge and n.tolist() == [gn]


def test_expert_map_marks_or_drops_non_local_experts():
    topk_ids = torch.tensor([[0, 1], [1, 2]], dtype=torch.int32)
    emap = torch.tensor([-1, 0, 1], dtype=torch.int32)
    _, marked, post = moe_align(topk_ids, 2, 3, emap)
    assert marked[: post.item() // 2].tolist() == [-1, 0, 1]  # global order kept, non-local -1
    s, dropped, post = moe_align(topk_ids, 2, 3, emap, ignore_invalid_experts=True)
    assert dropped[: post.item() // 2].tolist() == [0, 1] and s[:4].tolist() == [1, 2, 3, 4]


def _moe_spec(weight_preset, **epilogue):
    return QuantSpec(
        weight=weight_preset.weight, act=weight_preset.act, layout="moe", epilogue=epilogue
    )


def _weights(e: int, n: int, k: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(e, n, k, generator=g) * 0.1


def test_gathered_gemm_matches_a_row_loop():
    m, k, n, e, topk, block = 7, 64, 24, 4, 2, 4
    g = torch.Generator().manual_seed(1)
    x = torch.randn(m, k, generator=g).to(torch.bfloat16)
    topk_ids = torch.stack([torch.randperm(e, generator=g)[:topk] for _ in range(m)]).int()
    weights = torch.rand(m, topk, generator=g)
    spec = _moe_spec(presets.MXFP4, bias=True, activation="gelu", topk_weight=True)
    bias = torch.randn(e, n, generator=g)
    cw = quantize_weight(_weights(e, n, k, 2), spec, bias=bias)
    align = moe_align(topk_ids, block, e)
    out = reference_moe_gemm(x, cw, *align, topk, weights, block_size=block)
    wd = dequantize_weight(cw)
    assert out.shape == (m * topk, n) and out.dtype == torch.bfloat16
    for i in range(m * topk):
        t, j = divmod(i, topk)
        ex = int(topk_ids[t, j])
        acc = x[t].float() @ wd[ex].T + bias[ex]
        row = torch.nn.functional.gelu(acc) * weights[t, j]
        torch.testing.assert_close(out[i], row.to(torch.bfloat16), rtol=1e-2, atol=1e-3)


def test_gathered_gemm_skips_blocks_of_non_local_experts():
    m, k, n, topk, block = 4, 32, 8, 2, 2
    topk_ids = torch.tensor([[0, 1], [1, 2], [2, 0], [1, 2]], dtype=torch.int32)
    emap = torch.tensor([-1, 0, 1], dtype=torch.int32)  # global expert 0 lives elsewhere
    cw = quantize_weight(
        _weights(2, n, k, 3),
        _moe_spec(
            presets.W4A16_G128.replace(
                weight={"dtype": "int4", "scale": {"granularity": "group", "group_size": 16}}
            )
        ),
    )
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(5)).half()
    out = reference_moe_gemm(x, cw, *moe_align(topk_ids, block, 3, emap), topk, block_size=block)
    routed_to_zero = (topk_ids.flatten() == 0).nonzero().flatten()
    assert (out[routed_to_zero] == 0).all()
    wd = dequantize_weight(cw)
    i = 1  # token 0, slot 1 -> global 1 -> local 0
    # the reference's gathered block and this single row sum the same fp32 products in orders
    # BLAS may block differently, so the fp16 results may differ by one rounding of the output
    want = (x[0].float() @ wd[0].T).half()
    torch.testing.assert_close(out[i], want, rtol=2.0**-10, atol=2.0**-24)
    assert not torch.equal(out[i], torch.zeros_like(out[i]))  # a local expert's row is computed


def test_grouped_layouts_match_per_expert_gemms():
    e, k, n = 3, 64, 16
    cw = quantize_weight(_weights(e, n, k, 4), _moe_spec(presets.W8A8_INT8))
    wd = dequantize_weight(cw)
    g = torch.Generator().manual_seed(5)
    # contiguous: rows [0, 3) expert 0, [3, 3) expert 1 (empty), [3, 8) expert 2, row 8 padding
    x = torch.randn(9, k, generator=g).to(torch.bfloat16)
    offsets = torch.tensor([0, 3, 3, 8])
    out = reference_grouped_gemm(x, cw, offsets=offsets)
    assert out.shape == (9, n) and (out[8] == 0).all()
    xf = x.float()

    def expected(rows: torch.Tensor, ex: int) -> torch.Tensor:
        s = rows.abs().amax(dim=1, keepdim=True) / 127
        q = torch.round(rows / s).clamp(-128, 127) * s
        return (q @ wd[ex].T).to(torch.bfloat16)

    torch.testing.assert_close(out[:3], expected(xf[:3], 0), rtol=0, atol=0)
    torch.testing.assert_close(out[3:8], expected(xf[3:8], 2), rtol=0, atol=0)
    # masked: [E, max_m, K] with counts
    xm = torch.randn(e, 4, k, generator=g).to(torch.bfloat16)
    xm[1, 2:] = 1e4  # padding rows: garbage must not leak into results
    counts = torch.tensor([4, 2, 0])
    outm = reference_grouped_gemm(xm, cw, counts=counts)
    assert outm.shape == (e, 4, n)
    torch.testing.assert_close(outm[0], expected(xm[0].float(), 0), rtol=0, atol=0)
    torch.testing.assert_close(outm[1, :2], expected(xm[1, :2].float(), 1), rtol=0, atol=0)
    assert (outm[1, 2:] == 0).all() and (outm[2] == 0).all()
    empty = reference_grouped_gemm(xm, cw, counts=torch.zeros(3, dtype=torch.int64))
    assert empty.shape == (e, 4, n) and (empty == 0).all()
    with pytest.raises(ValueError, match="offsets"):
        reference_grouped_gemm(x, cw)


@pytest.mark.parametrize("glu", ["silu_mul", "swiglu_oai"])
@pytest.mark.parametrize("layout", ["split", "interleaved"])
def test_fused_moe_equals_a_token_loop(glu, layout):
    m, hidden, inter, e, topk = 5, 64, 32, 4, 2
    g = torch.Generator().manual_seed(6)
    x = torch.randn(m, hidden, generator=g).to(torch.bfloat16)
    logits = torch.randn(m, e, generator=g)
    topk_weights, topk_ids = torch.softmax(logits, -1).topk(topk, dim=-1)
    w13 = quantize_weight(
        _weights(e, 2 * inter, hidden, 7),
        _moe_spec(presets.MXFP4, glu=glu, glu_layout=layout, out_dtype="bf16"),
    )
    w2 = quantize_weight(_weights(e, hidden, inter, 8), _moe_spec(presets.MXFP4, out_dtype="bf16"))
    out = reference_fused_moe(x, topk_weights, topk_ids.int(), w13, w2)
    assert out.shape == (m, hidden) and out.dtype == torch.bfloat16
    d13, d2 = dequantize_weight(w13), dequantize_weight(w2)
    for t in range(m):
        total = torch.zeros(hidden)
        for j in range(topk):
            ex = int(topk_ids[t, j])
            acc = x[t].float() @ d13[ex].T
            gate, up = (acc[:inter], acc[inter:]) if layout == "split" else (acc[0::2], acc[1::2])
            if glu == "silu_mul":
                h = torch.nn.functional.silu(gate) * up
            else:
                gate, up = gate.clamp(max=7.0), up.clamp(-7.0, 7.0)
                h = (up + 1) * gate * torch.sigmoid(1.702 * gate)
            h = h.to(torch.bfloat16).float()  # the intermediate is stored in w13's output dtype
            total += ((h @ d2[ex].T) * topk_weights[t, j]).to(torch.bfloat16).float()
        # same operations, different fp32 summation order inside the matmuls: a bf16 ulp at most
        torch.testing.assert_close(
            out[t].float(), total.to(torch.bfloat16).float(), rtol=1e-2, atol=1e-4
        )


def test_fused_moe_with_expert_map_drops_remote_experts():
    m, hidden, inter, topk = 4, 32, 16, 2
    topk_ids = torch.tensor([[0, 3], [1, 2], [3, 1], [2, 0]], dtype=torch.int32)
    topk_weights = torch.full((m, topk), 0.5)
    emap = torch.tensor([-1, 0, -1, 1], dtype=torch.int32)  # experts 1 and 3 are local
    spec13 = _moe_spec(presets.MXFP4, glu="silu_mul", out_dtype="fp32")
    spec2 = _moe_spec(presets.MXFP4, out_dtype="fp32")
    w13 = quantize_weight(_weights(2, 2 * inter, hidden, 9), spec13)
    w2 = quantize_weight(_weights(2, hidden, inter, 10), spec2)
    x = torch.randn(m, hidden).to(torch.bfloat16)
    out = reference_fused_moe(x, topk_weights, topk_ids, w13, w2, expert_map=emap)
    d13, d2 = dequantize_weight(w13), dequantize_weight(w2)
    for t in range(m):
        total = torch.zeros(hidden)
        for j in range(topk):
            local = int(emap[topk_ids[t, j]])
            if local < 0:
                continue
            acc = x[t].float() @ d13[local].T
            h = torch.nn.functional.silu(acc[:inter]) * acc[inter:]
            total += (h.to(torch.bfloat16).float() @ d2[local].T) * 0.5
        torch.testing.assert_close(out[t], total, rtol=1e-5, atol=1e-5)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_moe_reference_agrees_on_cuda():
    g = torch.Generator().manual_seed(11)
    m, hidden, inter, e, topk = 33, 64, 32, 8, 2
    topk_ids = torch.stack([torch.randperm(e, generator=g)[:topk] for _ in range(m)]).int()
    emap = torch.tensor([0, -1, 1, -1, 2, -1, 3, -1], dtype=torch.int32)
    for args in ((16, e), (16, e, emap), (16, e, emap, True), (4, e, None, False, True)):
        cpu = moe_align(topk_ids, *args)
        gpu = moe_align(
            topk_ids.cuda(), *[a.cuda() if isinstance(a, torch.Tensor) else a for a in args]
        )
        assert all(t.is_cuda for t in gpu)
        assert all(torch.equal(a, b.cpu()) for a, b in zip(cpu, gpu, strict=True))
    x = torch.randn(m, hidden, generator=g).to(torch.bfloat16)
    weights = torch.softmax(torch.randn(m, topk, generator=g), -1)
    w13 = quantize_weight(
        _weights(e, 2 * inter, hidden, 12),
        _moe_spec(presets.MXFP4, glu="swiglu_oai", glu_layout="interleaved"),
    )
    w2 = quantize_weight(_weights(e, hidden, inter, 13), _moe_spec(presets.MXFP4))
    out_cpu = reference_fused_moe(x, weights, topk_ids, w13, w2).float()
    out_gpu = reference_fused_moe(
        x.cuda(), weights.cuda(), topk_ids.cuda(), w13.to("cuda"), w2.to("cuda")
    )
    torch.testing.assert_close(out_gpu.cpu().float(), out_cpu, rtol=1e-2, atol=1e-3)
