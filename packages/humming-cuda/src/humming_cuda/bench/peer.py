"""The published humming-kernels package (import name `humming`) as a dense / act8 baseline.

Its documented entry point is `humming.layer.HummingLayer(shape_n, shape_k, weight_config,
input_config, torch_dtype)`: `load_from_unquantized(w)` quantizes a float weight in the layer's
format, `transform()` repacks it and prepares its kernels, `layer(x)` runs the GEMM. Each of our
presets maps to the same number format there (bits, scale granularity and group, activation type);
weights are random, as ours are in the bench. MoE layers use another call (routing tensors) that
has no adapter yet, so the MoE suite omits the peer with that reason.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from .baselines import Unavailable
from .timing import Fn

_FP8 = {"dtype": "float8e4m3"}
# preset -> (weight_config, input_config or None for 16-bit activations), in the peer's keys
FORMATS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "W4A16_G128": ({"dtype": "int4", "group_size": 128}, None),
    "W8A16": ({"dtype": "int8"}, None),
    "W3A16_G128": ({"dtype": "int3", "group_size": 128}, None),
    "E4M3_G128": ({"dtype": "float8e4m3", "group_size": 128}, None),
    "MXFP4": ({"dtype": "float4e2m1", "group_size": 32, "scale_dtype": "float8e8m0"}, None),
    "W8A8_FP8": (dict(_FP8), dict(_FP8)),
    "W4A8_FP8": ({"dtype": "int4", "group_size": 128}, dict(_FP8)),
    "FP8_BLOCK128": (
        {"dtype": "float8e4m3", "group_size": 128, "group_size_n": 128, "scale_dtype": "float32"},
        {**_FP8, "group_size": 128},
    ),
}


def _layer_class():
    try:
        return importlib.import_module("humming.layer").HummingLayer
    except ImportError as exc:
        raise Unavailable(f"published humming-kernels not importable: {exc}") from None
    except AttributeError as exc:
        raise Unavailable(
            f"published humming-kernels has no humming.layer.HummingLayer: {exc}"
        ) from None


# The peer layers of the last (spec, N, K, copies, dtype): the bench sweeps M for one layer shape at a
# time, so they are built once per shape, and the previous shape's are freed when the next comes.
_built: dict[tuple, list] = {}


def _layers(layer_class, spec_name: str, n: int, k: int, copies: int, x: torch.Tensor) -> list:
    key = (spec_name, n, k, copies, x.dtype, x.device)
    if key not in _built:
        _built.clear()
        weight_config, input_config = FORMATS[spec_name]
        layers = []
        for _ in range(copies):
            layer = layer_class(
                shape_n=n,
                shape_k=k,
                weight_config=dict(weight_config),
                input_config=dict(input_config) if input_config else None,
                torch_dtype=x.dtype,
            ).to(x.device)
            layer.load_from_unquantized(torch.randn(n, k, device=x.device, dtype=x.dtype) * 0.02)
            layer.transform()
            layers.append(layer)
        _built[key] = layers
    return _built[key]


def dense(spec_name: str, x: torch.Tensor, n: int, k: int, copies: int) -> Fn:
    """`copies` peer layers of one format on random weights, as fn(i) -> layer i % copies (x)."""
    if spec_name not in FORMATS:
        raise Unavailable(f"no published-humming equivalent of {spec_name} is mapped")
    layer_class = _layer_class()
    try:
        layers = _layers(layer_class, spec_name, n, k, copies, x)

        def fn(i: int) -> torch.Tensor:
            return layers[i % copies](x)

        fn(0)
        if x.is_cuda:  # the bench times CUDA-graph replays: the call must capture
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn(0)
            del graph
    except Exception as exc:  # any failure of a third-party package omits it, with the reason
        _built.clear()
        raise Unavailable(f"published humming-kernels failed on {spec_name}: {exc!r}") from None
    return fn
