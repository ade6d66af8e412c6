"""The MoE method on a real vLLM 0.33 FusedMoE layer: real RoutedExperts weight loader (shard ids
w1/w3/w2 per expert, TP on the intermediate dim), our FusedMoEKernel, simulated TP ranks 0..3,
GEMMs on the `reference` device; the ranks' summed output must match the MoE computed by hand from
the dense dequantized expert weights."""

from __future__ import annotations

import itertools

import pytest
import torch
from fmt_ckpt import make_mxfp4
from vllm_ckpt import ct_tensors, gptq_tensors, random_quant

pytestmark = [pytest.mark.vllm, pytest.mark.usefixtures("vllm_env")]

E, TOP_K, H, INTER, M = 4, 2, 128, 128, 6
GROUP = 32
_LAYER_IDS = itertools.count()  # vLLM refuses two MoE layers with one name in a process
LIMIT, ALPHA = 7.0, 1.702

GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "sym": True, "desc_act": False}
CT_ASYM = {
    "quant_method": "compressed-tensors",
    "format": "pack-quantized",
    "config_groups": {
        "g": {
            "targets": ["Linear"],
            "weights": {
                "num_bits": 4,
                "type": "int",
                "symmetric": False,
                "strategy": "group",
                "group_size": GROUP,
            },
        }
    },
}
CASES = {"gptq4": GPTQ, "ct4-asym": CT_ASYM, "gpt-oss-mxfp4": {"quant_method": "mxfp4"}}


def _projection(case: str, n: int, k: int, seed: int):
    """(checkpoint tensors, dense (N, K), bias (N,) or None) of one expert projection."""
    if case == "gpt-oss-mxfp4":
        tensors, dense = make_mxfp4(n, k, seed, 0)
        bias = torch.randn(n, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)
        out = {"weight": tensors["weight_packed"], "weight_scale": tensors["weight_scale"]}
        return {**out, "bias": bias}, dense, bias.float()
    sym = case == "gptq4"
    codes, scales, zeros, g_idx, dense = random_quant(
        n, k, 4, GROUP, sym, False, seed, 1 if sym else 0
    )
    if case == "gptq4":
        tensors = gptq_tensors(codes, scales, zeros, g_idx, 4, v1=True)
        tensors.pop("_n")
    else:
        tensors = ct_tensors(codes, scales, zeros, g_idx, 4, torch.bfloat16)
    return tensors, dense, None


def _checkpoint(case: str):
    """Per expert: {shard id: (tensors, dense, bias)} for gate (w1), up (w3) and down (w2)."""
    return [
        {
            "w1": _projection(case, INTER, H, 10 * e),
            "w3": _projection(case, INTER, H, 10 * e + 1),
            "w2": _projection(case, H, INTER, 10 * e + 2),
        }
        for e in range(E)
    ]


def _glu(case: str, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    if case == "gpt-oss-mxfp4":
        gate, up = gate.clamp(max=LIMIT), up.clamp(-LIMIT, LIMIT)
        return (up + 1) * gate * torch.sigmoid(ALPHA * gate)
    return torch.nn.functional.silu(gate) * up


def _expected(case, ckpt, x, topk_weights, topk_ids, dtype):
    out = torch.zeros(x.shape[0], H)
    for t in range(x.shape[0]):
        for j in range(TOP_K):
            shards = ckpt[int(topk_ids[t, j])]
            pre = []
            for sid in ("w1", "w3"):
                _, dense, bias = shards[sid]
                y = x[t].float() @ dense.t()
                pre.append(y if bias is None else y + bias)
            # The fused kernel stores the GLU output in the activation dtype for the second GEMM.
            h = _glu(case, *pre).to(dtype).float()
            _, dense2, bias2 = shards["w2"]
            y = h @ dense2.t()
            y = y if bias2 is None else y + bias2
            out[t] += y.to(dtype).float() * topk_weights[t, j]
    return out


def _run_rank(case, ckpt, dtype, rank, tp, x, topk_weights, topk_ids, monkeypatch):
    import vllm.model_executor.layers.fused_moe.config as moe_config
    from vllm.model_executor.layers.fused_moe.layer import FusedMoEFactory

    from humming_vllm import no_compiles
    from humming_vllm.config import HummingQuantConfig
    from humming_vllm.moe import HummingMoEMethod

    oss = case == "gpt-oss-mxfp4"
    monkeypatch.setattr(moe_config, "get_tensor_model_parallel_rank", lambda: rank)
    prefix = f"model.layers.{next(_LAYER_IDS)}.mlp.experts"
    runner = FusedMoEFactory(
        num_experts=E,
        top_k=TOP_K,
        hidden_size=H,
        intermediate_size=INTER,
        params_dtype=dtype,
        quant_config=HummingQuantConfig.from_config(CASES[case]),
        tp_size=tp,
        prefix=prefix,
        activation="swigluoai" if oss else "silu",
        has_bias=oss,
        swiglu_limit=LIMIT if oss else None,
    )
    layer = runner.routed_experts
    assert isinstance(layer.quant_method, HummingMoEMethod)
    params = dict(layer.named_parameters())
    for e, shards in enumerate(ckpt):
        for sid, (tensors, _, _) in shards.items():
            stem = "w2" if sid == "w2" else "w13"
            for name, tensor in tensors.items():
                if f"{stem}_{name}" not in params:
                    assert name.endswith("g_idx"), f"checkpoint tensor {name} has no parameter"
                    continue
                param = params[f"{stem}_{name}"]
                layer.weight_loader(param, tensor, f"{prefix}.{e}.{sid}.{name}", sid, e)
    layer.quant_method.process_weights_after_loading(layer)
    args = (layer, x, topk_weights, topk_ids, None, None)
    layer.quant_method.apply(*args)  # warm-up
    with no_compiles("MoE apply after process_weights_after_loading"):
        return layer.quant_method.apply(*args).float()


@pytest.mark.parametrize("tp", [1, 2, 4])
@pytest.mark.parametrize("case", list(CASES))
def test_moe_layer_matches_dense_experts(case, tp, monkeypatch):
    dtype = torch.float16 if case == "gptq4" else torch.bfloat16
    ckpt = _checkpoint(case)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(M, H, generator=gen).to(dtype)
    logits = torch.randn(M, E, generator=gen)
    topk_weights, topk_ids = torch.softmax(logits, -1).topk(TOP_K, dim=-1)
    topk_ids = topk_ids.to(torch.int32)
    got = sum(
        _run_rank(case, ckpt, dtype, r, tp, x, topk_weights, topk_ids, monkeypatch)
        for r in range(tp)
    )
    want = _expected(case, ckpt, x, topk_weights, topk_ids, dtype)
    # Exact fp32 GEMMs; roundings: the intermediate and each expert's output to the 16-bit dtype
    # (a relative eps/2 each, through the second GEMM's |weights|), each rank's output (tp), and
    # the intermediate's split across ranks changes nothing (the GLU is elementwise).
    eps = torch.finfo(dtype).eps
    tol = (tp + 3) * eps * float(want.abs().max())
    assert float((got - want).abs().max()) <= tol
