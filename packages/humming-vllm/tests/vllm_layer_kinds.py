"""The three vLLM linear layer kinds the adapter tests load: merged gate/up, QKV, row parallel."""

from __future__ import annotations

K, HEAD, HEADS, KV_HEADS = 256, 32, 8, 4


def shards_of(kind: str) -> list[tuple[object, int, int]]:
    """(shard id, N, K) of each checkpoint layer the vLLM layer fuses."""
    if kind == "merged":
        return [(0, 128, K), (1, 256, K)]
    if kind == "qkv":
        return [("q", HEADS * HEAD, K), ("k", KV_HEADS * HEAD, K), ("v", KV_HEADS * HEAD, K)]
    return [(None, 96, K)]


def build_layer(kind: str, config, dtype):
    from vllm.model_executor.layers.linear import (
        MergedColumnParallelLinear,
        QKVParallelLinear,
        RowParallelLinear,
    )

    if kind == "merged":
        return MergedColumnParallelLinear(
            K,
            [128, 256],
            bias=False,
            quant_config=config,
            params_dtype=dtype,
            prefix="model.layers.0.mlp.gate_up_proj",
        )
    if kind == "qkv":
        return QKVParallelLinear(
            K,
            HEAD,
            HEADS,
            KV_HEADS,
            bias=False,
            quant_config=config,
            params_dtype=dtype,
            prefix="model.layers.0.self_attn.qkv_proj",
        )
    return RowParallelLinear(
        K,
        96,
        bias=True,
        quant_config=config,
        params_dtype=dtype,
        prefix="model.layers.0.self_attn.o_proj",
    )
