"""Real vLLM 0.33 linear layers with the humming_q method, real v2 weight loaders, simulated TP
ranks 0..3; the GEMMs run on the `reference` device and must match the dense dequantized weight."""

from __future__ import annotations

import pytest
import torch
from vllm_ckpt import ct_tensors, gptq_tensors, random_quant
from vllm_layer_kinds import K, build_layer, shards_of

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("vllm_env")]

GROUP = 32


def _gptq_cfg(bits, sym, act_order, v1):
    return {
        "quant_method": "gptq",
        "bits": bits,
        "group_size": GROUP,
        "sym": sym,
        "desc_act": act_order,
        "checkpoint_format": "gptq" if v1 else "gptq_v2",
    }


def _ct_cfg(bits, sym, act_order):
    weights = {
        "num_bits": bits,
        "type": "int",
        "symmetric": sym,
        "strategy": "group",
        "group_size": GROUP,
        "actorder": "group" if act_order else None,
    }
    return {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
    }


# name: (hf config, bits, sym, act_order, gptq v1 zero points or None for compressed-tensors)
CASES = {
    "gptq4-sym-v1": (_gptq_cfg(4, True, False, True), 4, True, False, True),
    "gptq3-asym-actorder-v2": (_gptq_cfg(3, False, True, False), 3, False, True, False),
    "gptq2-sym-actorder-v1": (_gptq_cfg(2, True, True, True), 2, True, True, True),
    "gptq8-asym-v1": (_gptq_cfg(8, False, False, True), 8, False, False, True),
    "ct4-asym": (_ct_cfg(4, False, False), 4, False, False, None),
    "ct4-sym-actorder": (_ct_cfg(4, True, True), 4, True, True, None),
}


def _checkpoint(case: str, kind: str, dtype):
    """Per shard: checkpoint tensors and dense weight; act-order layers share one g_idx (one input)."""
    cfg, bits, sym, act_order, v1 = CASES[case]
    zero_lo = 1 if v1 and not sym else 0
    out = []
    for i, (shard_id, n, k) in enumerate(shards_of(kind)):
        codes, scales, zeros, g_idx, dense = random_quant(
            n, k, bits, GROUP, sym, act_order, 100 + i, zero_lo
        )
        if act_order:  # the same permutation for every shard, as GPTQ produces for a shared input
            codes, scales, zeros, _, _ = random_quant(
                n, k, bits, GROUP, sym, False, 100 + i, zero_lo
            )
            g_idx = (torch.arange(k) // GROUP)[
                torch.randperm(k, generator=torch.Generator().manual_seed(7))
            ]
            z = (
                torch.full_like(scales, 1 << (bits - 1), dtype=torch.int64)
                if zeros is None
                else zeros
            )
            dense = scales.float()[:, g_idx] * (codes - z[:, g_idx]).float()
            g_idx = g_idx.to(torch.int32)
        if v1 is None:
            tensors = ct_tensors(codes, scales, zeros, g_idx, bits, dtype)
        else:
            tensors = gptq_tensors(codes, scales, zeros, g_idx, bits, v1)
            tensors.pop("_n")
        out.append((shard_id, tensors, dense))
    return cfg, out


def _run_rank(kind, cfg, shards, dtype, x, rank, tp, tp_rank):
    from humming_vllm import no_compiles
    from humming_vllm.config import HummingQuantConfig

    config = HummingQuantConfig.from_config(cfg)
    act_order = any(s.act_order for _, s in config.plan.groups)
    with tp_rank(rank, tp):
        layer = build_layer(kind, config, dtype)
        params = dict(layer.named_parameters())
        for shard_id, tensors, _ in shards:
            for name, tensor in tensors.items():
                if name not in params:
                    assert name.endswith("g_idx") and not act_order, (
                        f"checkpoint tensor {name} has no parameter"
                    )
                    continue
                param = params[name]
                if shard_id is None:
                    param.weight_loader(param, tensor)
                else:
                    param.weight_loader(param, tensor, shard_id)
        if kind == "row":
            layer.bias.data.copy_(torch.linspace(-1, 1, 96).to(dtype))
        layer.quant_method.process_weights_after_loading(layer)
    k_part = K // tp
    x_in = x[:, rank * k_part : (rank + 1) * k_part] if kind == "row" else x
    bias = layer.bias if kind == "row" and rank == 0 else None
    layer.quant_method.apply(layer, x_in, bias)  # warm-up
    with no_compiles("apply after process_weights_after_loading"):
        return layer.quant_method.apply(layer, x_in, bias)


def _gather(kind, outs, shards, tp):
    if kind == "row":
        return torch.stack([o.float() for o in outs]).sum(0)
    # Each rank holds its slice of every fused shard: reassemble shard by shard.
    pieces, start = [], 0
    for _, _, dense in shards:
        n_part = dense.shape[0] // tp
        pieces.append(torch.cat([o[:, start : start + n_part].float() for o in outs], dim=1))
        start += n_part
    return torch.cat(pieces, dim=1)


@pytest.mark.parametrize("tp", [1, 4])
@pytest.mark.parametrize("kind", ["merged", "qkv", "row"])
@pytest.mark.parametrize("case", list(CASES))
def test_loaded_layer_matches_dequantized_reference(case, kind, tp, tp_rank):
    dtype = torch.float16 if "gptq" in case else torch.bfloat16
    cfg, shards = _checkpoint(case, kind, dtype)
    x = torch.randn(5, K, generator=torch.Generator().manual_seed(3)).to(dtype)
    outs = [_run_rank(kind, cfg, shards, dtype, x, r, tp, tp_rank) for r in range(tp)]
    got = _gather(kind, outs, shards, tp)
    dense = torch.cat([d for _, _, d in shards])
    want = x.float() @ dense.t()
    if kind == "row":
        want = want + torch.linspace(-1, 1, 96).to(dtype).float()
    # The reference GEMM is exact in fp32; each rank's output is rounded once to the 16-bit dtype
    # (and row-parallel partial sums are rounded per rank), so allow tp+1 roundings of the largest value.
    eps = torch.finfo(dtype).eps
    tol = (tp + 1) * eps * float(want.abs().max())
    assert got.shape == want.shape
    assert float((got - want).abs().max()) <= tol
