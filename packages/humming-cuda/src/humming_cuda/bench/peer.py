"""The published humming-kernels package (import name `humming`) as a dense / act8 / MoE baseline.

Its documented entry point is `humming.layer.HummingLayer(shape_n, shape_k, weight_config,
input_config, torch_dtype)`: `load_from_unquantized(w)` quantizes a float weight in the layer's
format, `transform()` repacks it and prepares its kernels, `layer(x)` runs the GEMM. Each of our
presets maps to the same number format there (bits, scale granularity and group, activation type);
weights are random, as ours are in the bench.

A MoE layer is the same class with `num_experts=E` (weights [E, N, K]) called as an indexed GEMM
(`compute_config={"gemm_type": "indexed"}`) on vLLM's `moe_align_block_size` routing tensors; `moe()`
below builds and times one (its docstring says what the timed call contains).
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from .baselines import Unavailable
from .timing import Fn

_FP8 = {"dtype": "float8e4m3"}
_MXFP4 = {"dtype": "float4e2m1", "group_size": 32, "scale_dtype": "float8e8m0"}
# preset -> (weight_config, input_config or None for 16-bit activations), in the peer's keys
FORMATS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "W4A16_G128": ({"dtype": "int4", "group_size": 128}, None),
    "W8A16": ({"dtype": "int8"}, None),
    "W3A16_G128": ({"dtype": "int3", "group_size": 128}, None),
    "E4M3_G128": ({"dtype": "float8e4m3", "group_size": 128}, None),
    "MXFP4": (dict(_MXFP4), None),
    # fp8 input without a group size: the peer quantizes per token, as MXFP4_A8's activations are
    "MXFP4_A8": (dict(_MXFP4), dict(_FP8)),
    "W8A8_FP8": (dict(_FP8), dict(_FP8)),
    "W4A8_FP8": ({"dtype": "int4", "group_size": 128}, dict(_FP8)),
    "FP8_BLOCK128": (
        {"dtype": "float8e4m3", "group_size": 128, "group_size_n": 128, "scale_dtype": "float32"},
        {**_FP8, "group_size": 128},
    ),
}
INDEXED = {"gemm_type": "indexed"}  # the peer's MoE GEMM on sorted token ids (vLLM's layout)
# SiLU(gate) * up as the C++ expression (floats a = gate, b = up) the peer's process_input kernel
# applies to the two halves of each w13 row ("binary_split": gate first, as Qwen3's gate_up_proj).
SILU_MUL = "a / (1.0f + expf(-a)) * b"


def _peer(module: str, name: str):
    """`module.name` of the published package, or Unavailable with the reason."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise Unavailable(f"published humming-kernels not importable: {exc}") from None
    except AttributeError as exc:
        raise Unavailable(f"published humming-kernels has no {module}.{name}: {exc}") from None


def _build(layer_class, spec_name: str, n: int, k: int, x: torch.Tensor, num_experts=None):
    """One peer layer of the spec's format on random weights ([E, N, K] when num_experts is set)."""
    weight_config, input_config = FORMATS[spec_name]
    experts = {} if num_experts is None else {"num_experts": num_experts}
    layer = layer_class(
        shape_n=n,
        shape_k=k,
        weight_config=dict(weight_config),  # copies: the peer may edit them in place
        input_config=dict(input_config) if input_config else None,
        torch_dtype=x.dtype,
        **experts,
    ).to(x.device)
    shape = (n, k) if num_experts is None else (num_experts, n, k)
    layer.load_from_unquantized(torch.randn(*shape, device=x.device, dtype=x.dtype) * 0.02)
    layer.transform()
    return layer


def _check_capture(fn: Fn, x: torch.Tensor) -> None:
    """Run fn once (compiles the peer's kernels) and, on CUDA, check that it captures in a graph:
    the bench times CUDA-graph replays."""
    fn(0)
    if x.is_cuda:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(0)
        del graph


# The peer layers of the last (spec, N, K, copies, dtype): the bench sweeps M for one layer shape at a
# time, so they are built once per shape, and the previous shape's are freed when the next comes.
_built: dict[tuple, list] = {}


def _layers(layer_class, spec_name: str, n: int, k: int, copies: int, x: torch.Tensor) -> list:
    key = (spec_name, n, k, copies, x.dtype, x.device)
    if key not in _built:
        _built.clear()
        _built[key] = [_build(layer_class, spec_name, n, k, x) for _ in range(copies)]
    return _built[key]


def dense(spec_name: str, x: torch.Tensor, n: int, k: int, copies: int) -> Fn:
    """`copies` peer layers of one format on random weights, as fn(i) -> layer i % copies (x)."""
    if spec_name not in FORMATS:
        raise Unavailable(f"no published-humming equivalent of {spec_name} is mapped")
    layer_class = _peer("humming.layer", "HummingLayer")
    try:
        layers = _layers(layer_class, spec_name, n, k, copies, x)

        def fn(i: int) -> torch.Tensor:
            return layers[i % copies](x)

        _check_capture(fn, x)
    except Exception as exc:  # any failure of a third-party package omits it, with the reason
        _built.clear()
        raise Unavailable(f"published humming-kernels failed on {spec_name}: {exc!r}") from None
    return fn


# (w13, w2) peer layer pairs of the last (spec, E, width, hidden, dtype): the MoE suite sweeps M for
# one spec, with 4 weight copies for small M and 2 above, so one list serves every M of the spec.
_built_moe: dict[tuple, list] = {}


def _moe_pairs(layer_class, spec_name: str, e: int, width: int, copies: int, x) -> list:
    key = (spec_name, e, width, x.shape[1], x.dtype, x.device)
    if key not in _built_moe:
        _built_moe.clear()
        _built_moe[key] = []
    pairs = _built_moe[key]
    shapes = ((2 * width, x.shape[1]), (x.shape[1], width))  # w13 [E, 2I, H], w2 [E, H, I]
    while len(pairs) < copies:
        pairs.append(tuple(_build(layer_class, spec_name, n, k, x, e) for n, k in shapes))
    return pairs[:copies]


def release_moe() -> None:
    """Free the cached MoE peer layers (the MoE suite calls it after each spec)."""
    _built_moe.clear()


def _routing(sorted_ids, expert_ids, num_tokens_padded) -> dict:
    """An alignment (sorted ids, expert id per block, padded count) as the peer's keywords."""
    return {
        "sorted_ids": sorted_ids,
        "expert_ids": expert_ids,
        "num_tokens_padded": num_tokens_padded,
    }


def _moe_fn(pairs: list, x: torch.Tensor, routes: list, e: int, topk_sum: bool) -> Fn:
    from humming_core.ops import moe_align

    tuning_of = _peer("humming.tune", "get_heuristics_config")
    process_input = _peer("humming.forward", "may_process_input")
    m, top_k = routes[0][1].shape
    rows = m * top_k
    w13, w2 = pairs[0]
    # The peer's own heuristic kernel for this many routed rows (what its launcher picks for
    # valid_shape_m = M * top_k), passed explicitly so that the routing is aligned to the M block
    # of the kernel that runs; every copy has the same shapes and format, hence the same kernels.
    t13, t2 = (
        dict(tuning_of(layer.humming_config, shape_m=rows, gemm_type="indexed", device=x.device))
        for layer in (w13, w2)
    )
    blocks = (t13["block_shape"][0], t2["block_shape"][0])
    h13 = torch.empty(rows, w13.shape_n, dtype=x.dtype, device=x.device)
    out = torch.empty(rows, w2.shape_n, dtype=x.dtype, device=x.device)

    def fn(i: int) -> torch.Tensor:
        layer13, layer2 = pairs[i % len(pairs)]
        weights, ids = routes[i % len(routes)]
        # Aligned once per distinct block size, by our GPU op (the peer has none; it takes vLLM's
        # moe_align_block_size output), with the arguments fused_moe_rows aligns ours with.
        aligned = {b: moe_align(ids, b, e, ignore_invalid_experts=True) for b in set(blocks)}
        r13, r2 = (_routing(*aligned[b]) for b in blocks)
        layer13(x, outputs=h13, top_k=top_k, compute_config=INDEXED, tuning_config=t13, **r13)
        # SiLU-and-mul fused with the quantization of w2's input (8-bit activations) in one kernel
        act, group_scales, token_scales = process_input(
            layer2.humming_config, h13, activation_type="binary_split", activation_impl=SILU_MUL
        )
        scale = group_scales if group_scales is not None else token_scales
        layer2(
            act,
            outputs=out,
            input_scale=scale,
            top_k=1,
            compute_config=INDEXED,
            tuning_config=t2,
            **r2,
        )
        if not topk_sum:
            return out
        # the router-weighted top-k sum in one batched GEMM: [M, 1, top_k] x [M, top_k, H]
        return torch.bmm(weights.to(out.dtype).unsqueeze(1), out.view(m, top_k, -1)).squeeze(1)

    return fn


def moe(
    spec_name: str,
    x: torch.Tensor,
    routes: list,
    copies: int,
    num_experts: int,
    width: int,
    topk_sum: bool = False,
) -> Fn:
    """The peer's MoE layer (w13 [E, 2*width, H], w2 [E, H, width]) as fn(i): weight copy i % copies,
    routing i % len(routes) ((router weights, expert ids [M, top_k]) per call).

    fn(i) runs what an engine runs for the peer, as one CUDA-graph-capturable call:
    1. the routing alignment (vLLM's `moe_align_block_size` layout, by our GPU op; once per distinct
       M block of the two kernels);
    2. w13: the peer's indexed GEMM over x (its own per-token fp8 quantization of x first, for
       8-bit activations) -> [M*top_k, 2*width];
    3. the peer's process_input kernel: SiLU(gate) * up, fused with the fp8 quantization of w2's
       input for 8-bit activations;
    4. w2: the peer's indexed GEMM (top_k = 1) -> [M*top_k, H] rows, unweighted: the peer's GEMM
       takes no router weights.
    That is our "humming" timed region (alignment, w13 with its GLU, w2) except the router weights:
    ours multiplies them in w2's epilogue and leaves the top-k sum untimed; the peer applies them in
    that same top-k reduction (vLLM's moe_fused_mul_sum), so leaving it out leaves out the same
    pass on both sides. `topk_sum=True` adds it (router-weighted top-k sum -> [M, H]).
    """
    if spec_name not in FORMATS:
        raise Unavailable(f"no published-humming equivalent of {spec_name} is mapped")
    layer_class = _peer("humming.layer", "HummingLayer")
    try:
        pairs = _moe_pairs(layer_class, spec_name, num_experts, width, copies, x)
        fn = _moe_fn(pairs, x, routes, num_experts, topk_sum)
        _check_capture(fn, x)
    except Unavailable:
        _built_moe.clear()
        raise
    except Exception as exc:  # any failure of a third-party package omits it, with the reason
        _built_moe.clear()
        raise Unavailable(f"published humming-kernels MoE failed on {spec_name}: {exc!r}") from None
    return fn
