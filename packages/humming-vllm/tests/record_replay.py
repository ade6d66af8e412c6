"""Record the replay fixtures from real vLLM 0.33 layers on the CPU (reference device).

Run in the tests_vllm environment:
    VLLM_TARGET_DEVICE=cpu .nox/tests_vllm/bin/python packages/humming-vllm/tests/record_replay.py

Each fixture is one tensor-parallel rank of one layer after vLLM's loaders and our
process_weights_after_loading: the rank's input `x`, the act-order gather `input_index` (if any),
the canonical tensors the layer was prepared from (`cw.*`, the reference device packs the canonical
form as is), and the layer's output `out`; the QuantSpec travels in the metadata.
"""

from __future__ import annotations

import os
import socket
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path
from unittest import mock

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).parent))
from vllm_layer_kinds import K, build_layer, shards_of

OUT = Path(__file__).parent / "fixtures" / "replay"

# (fixture name, test module, case, layer kind, tp, rank): WnA16 formats the CUDA kernels serve.
CASES = [
    ("gptq4_merged_tp2_r1", "layers", "gptq4-sym-v1", "merged", 2, 1),
    ("gptq3_actorder_row_tp2_r1", "layers", "gptq3-asym-actorder-v2", "row", 2, 1),
    ("ct4_asym_qkv_tp2_r0", "layers", "ct4-asym", "qkv", 2, 0),
    ("awq4_qkv_tp4_r2", "formats", "awq4", "qkv", 4, 2),
    ("ct_mxfp4_merged_tp1", "formats", "ct-mxfp4", "merged", 1, 0),
]


def _init_vllm() -> None:
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    import humming_vllm

    humming_vllm.register()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    init_distributed_environment(1, 0, f"tcp://127.0.0.1:{port}", 0, "gloo")
    initialize_model_parallel(1, 1)


@contextmanager
def _tp_rank(rank: int, size: int):
    """Make vLLM's layers and parameters believe they are rank `rank` of `size` (one process)."""
    import vllm.model_executor.layers.linear as linear
    import vllm.model_executor.parameter as parameter

    with ExitStack() as stack:
        for module in (linear, parameter):
            stack.enter_context(
                mock.patch.object(module, "get_tensor_model_parallel_rank", lambda: rank)
            )
            stack.enter_context(
                mock.patch.object(module, "get_tensor_model_parallel_world_size", lambda: size)
            )
        yield


def _load(module: str, case: str, kind: str, tp: int, rank: int):
    """(the loaded vLLM layer, its 16-bit dtype) for one rank, through the tests' checkpoints."""
    import test_vllm_formats as formats
    import test_vllm_layers as layers

    from humming_vllm.config import HummingQuantConfig

    if module == "formats":
        cfg, maker, _, _ = formats._case(case)
        dtype = torch.float16 if case == "awq4" else torch.bfloat16
        shards = [maker(n, k, 200 + i, i) for i, (_, n, k) in enumerate(shards_of(kind))]
        return formats._load_rank(kind, cfg, shards, dtype, rank, tp, _tp_rank), dtype
    dtype = torch.float16 if "gptq" in case else torch.bfloat16
    cfg, shards = layers._checkpoint(case, kind, dtype)
    with _tp_rank(rank, tp):
        layer = build_layer(kind, HummingQuantConfig.from_config(cfg), dtype)
        params = dict(layer.named_parameters())
        for shard_id, tensors, _ in shards:
            for name, tensor in tensors.items():
                if name in params:
                    extra = () if shard_id is None else (shard_id,)
                    params[name].weight_loader(params[name], tensor, *extra)
        layer.quant_method.process_weights_after_loading(layer)
    return layer, dtype


def record(name: str, module: str, case: str, kind: str, tp: int, rank: int) -> None:
    layer, dtype = _load(module, case, kind, tp, rank)
    x = torch.randn(5, K, generator=torch.Generator().manual_seed(3)).to(dtype)
    x_in = x[:, rank * K // tp : (rank + 1) * K // tp] if kind == "row" else x
    out = layer.quant_method.apply(layer, x_in, None)
    prepared = layer.humming_gemm
    tensors = {"x": x_in.contiguous(), "out": out.contiguous()}
    tensors.update({f"cw.{k}": v.contiguous() for k, v in prepared.packed.items()})
    if layer.humming_input_index is not None:
        tensors["input_index"] = layer.humming_input_index
    meta = {"spec": prepared.spec.to_json(), "n": str(prepared.n), "k": str(prepared.k)}
    save_file(tensors, OUT / f"{name}.safetensors", metadata=meta)


def main() -> None:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ["HUMMING_DEVICE"] = "reference"
    from vllm.config import VllmConfig, set_current_vllm_config

    with set_current_vllm_config(VllmConfig()):
        _init_vllm()
        OUT.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            record(*case)
            print("recorded", case[0])


if __name__ == "__main__":
    main()
