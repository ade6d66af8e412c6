"""AWQ, compressed-tensors 8-bit / NVFP4 / MXFP4, HF FP8 block and ModelOpt NVFP4 on real vLLM 0.33
linear layers: real v2 loaders, simulated TP ranks 0..3, GEMMs on the `reference` device.

Each rank's output must match its own slice of the dense dequantized weight times the activations
as that rank's kernel quantizes them (per token / per group over the rank's K, with the fused
layer's static scale: the largest shard's, as vLLM uses)."""

from __future__ import annotations

import pytest
import torch
from fmt_ckpt import (
    BLOCK,
    make_awq,
    make_fp8_block,
    make_fp8_channel,
    make_fp8_tensor,
    make_mxfp4,
    make_nvfp4,
)
from vllm_layer_kinds import K, build_layer, shards_of

from humming_core.numerics.gemm import prepare_act
from humming_core.spec import NVFP4_ACT, ActSpec

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("vllm_env")]


def _ct(fmt: str, weights: dict, acts: dict | None = None) -> dict:
    group = {"targets": ["Linear"], "weights": weights, "input_activations": acts}
    return {
        "quant_method": "compressed-tensors",
        "format": fmt,
        "ignore": ["lm_head"],
        "config_groups": {"group_0": group},
    }


_F8 = {"num_bits": 8, "type": "float", "symmetric": True}
_FP4 = {"num_bits": 4, "type": "float", "symmetric": True, "group_size": 16}
_TOKEN = ActSpec(dtype="e4m3", quant="dynamic", granularity="token")
_GROUP32 = ActSpec(dtype="e4m3", quant="dynamic", granularity="group", group_size=BLOCK[1])
_NVFP4 = NVFP4_ACT


def _max_scale(name: str, divisor: bool = False):
    def pick(shards):
        worst = torch.stack([t[name].float().reshape(()) for t, _ in shards]).max()
        return (1.0 / worst if divisor else worst).reshape(1)

    return pick


# name: (hf config, maker, activation spec or None, static activation scale of the fused layer)
CASES = {
    "awq4": ({"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm"}, make_awq),
    "ct-fp8-tensor-static": (
        _ct(
            "float-quantized",
            {**_F8, "strategy": "tensor"},
            {**_F8, "strategy": "tensor", "dynamic": False},
        ),
        make_fp8_tensor,
        ActSpec(dtype="e4m3", quant="static", granularity="tensor"),
        _max_scale("input_scale"),
    ),
    "ct-fp8-channel-token": (
        _ct(
            "float-quantized",
            {**_F8, "strategy": "channel"},
            {**_F8, "strategy": "token", "dynamic": True},
        ),
        make_fp8_channel,
        _TOKEN,
    ),
    "ct-fp8-block": (
        _ct(
            "float-quantized",
            {**_F8, "strategy": "block", "block_structure": list(BLOCK)},
            {**_F8, "strategy": "group", "group_size": BLOCK[1], "dynamic": True},
        ),
        make_fp8_block,
        _GROUP32,
    ),
    "ct-int8-w8a8": (
        _ct(
            "int-quantized",
            {**_F8, "type": "int", "strategy": "channel"},
            {**_F8, "type": "int", "strategy": "token", "dynamic": True},
        ),
        lambda n, k, seed, shard: make_fp8_channel(n, k, seed, shard, int8=True),
        ActSpec(dtype="int8", quant="dynamic", granularity="token"),
    ),
    "hf-fp8-block": (
        {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": list(BLOCK)},
        lambda n, k, seed, shard: make_fp8_block(n, k, seed, shard, "weight_scale_inv"),
        _GROUP32,
    ),
    "ct-nvfp4-w4a4": (
        _ct(
            "nvfp4-pack-quantized",
            {**_FP4, "strategy": "tensor_group"},
            {**_FP4, "strategy": "tensor_group", "dynamic": "local"},
        ),
        make_nvfp4,
        _NVFP4,
        _max_scale("input_global_scale", divisor=True),
    ),
    "ct-mxfp4": (
        _ct("mxfp4-pack-quantized", {**_FP4, "strategy": "group", "group_size": 32}),
        make_mxfp4,
    ),
    "modelopt-nvfp4": (
        {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
        lambda n, k, seed, shard: make_nvfp4(n, k, seed, shard, modelopt=True),
        _NVFP4,
        _max_scale("input_scale"),
    ),
}


def _case(name: str):
    cfg, maker, *rest = CASES[name]
    act = rest[0] if rest else None
    static = rest[1] if len(rest) > 1 else None
    return cfg, maker, act, static


def _load_rank(kind, cfg, shards, dtype, rank, tp, tp_rank):
    from humming_vllm.config import HummingQuantConfig

    config = HummingQuantConfig.from_config(cfg)
    with tp_rank(rank, tp):
        layer = build_layer(kind, config, dtype)
        params = dict(layer.named_parameters())
        for (shard_id, _, _), (tensors, _) in zip(shards_of(kind), shards, strict=True):
            for name, tensor in tensors.items():
                param = params[name]
                args = (param, tensor) if shard_id is None else (param, tensor, shard_id)
                param.weight_loader(*args)
        if kind == "row":
            layer.bias.data.copy_(torch.linspace(-1, 1, layer.bias.numel()).to(dtype))
        layer.quant_method.process_weights_after_loading(layer)
    return layer


def _rank_dense(kind, shards, rank, tp):
    if kind == "row":
        k_part = K // tp
        return shards[0][1][:, rank * k_part : (rank + 1) * k_part]
    return torch.cat(
        [d[rank * d.shape[0] // tp : (rank + 1) * d.shape[0] // tp] for _, d in shards]
    )


@pytest.mark.parametrize("tp", [1, 4])
@pytest.mark.parametrize("kind", ["merged", "qkv", "row"])
@pytest.mark.parametrize("case", list(CASES))
def test_format_layer_matches_dequantized_reference(case, kind, tp, tp_rank):
    from humming_vllm import no_compiles

    cfg, maker, act, static = _case(case)
    dtype = torch.float16 if case == "awq4" else torch.bfloat16
    shards = [maker(n, k, 200 + i, i) for i, (_, n, k) in enumerate(shards_of(kind))]
    x = torch.randn(5, K, generator=torch.Generator().manual_seed(3)).to(dtype)
    for rank in range(tp):
        layer = _load_rank(kind, cfg, shards, dtype, rank, tp, tp_rank)
        x_in = x[:, rank * K // tp : (rank + 1) * K // tp] if kind == "row" else x
        bias = layer.bias if kind == "row" and rank == 0 else None
        layer.quant_method.apply(layer, x_in, bias)  # warm-up
        with no_compiles("apply after process_weights_after_loading"):
            got = layer.quant_method.apply(layer, x_in, bias).float()
        scale = None if static is None else static(shards if kind != "row" else shards[:1])
        xa = x_in.float() if act is None else prepare_act(x_in, act, scale)
        want = xa @ _rank_dense(kind, shards, rank, tp).t()
        if bias is not None:
            want = want + bias.float()
        # The reference is exact in fp32 and rounds once to the 16-bit output; the bias add rounds
        # once more: two roundings of the largest value.
        tol = 2 * torch.finfo(dtype).eps * float(want.abs().max())
        assert got.shape == want.shape
        assert float((got - want).abs().max()) <= tol, f"rank {rank}"
