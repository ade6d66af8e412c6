"""The MoE benchmark: Humming's indexed MoE layer against torch._grouped_mm and the published
humming-kernels, on Qwen3-30B-A3B's experts.

Per M, "us" holds the w13 + w2 time of each implementation:
- "humming": `fused_moe_rows` (routing alignment on the GPU, w13 with its SiLU-GLU epilogue, w2
  with the router weights). The top-k sum that follows is the same for every implementation and
  is not timed.
- "grouped_mm_bf16": the two `torch._grouped_mm` calls on bf16 weights with the same routing,
  tokens already sorted by expert (sorting, gather, GLU and scatter are not timed: a lower bound
  of a bf16 layer).
- "peer": the published humming-kernels' MoE layer in the same format with the same routing
  (bench/peer.py's `moe`: alignment, w13, its fused SiLU-and-mul (and fp8 quantization) kernel,
  w2). Its GEMMs take no router weights: an engine applies them in the top-k sum, untimed here
  for every implementation.
Rows are dense.json's rows plus "E" and "topk"; N x K is w13's shape per expert (w2 is K x N/2).
"roof_us" (KERNELS.md): bytes of the experts the batch is expected to touch (M tokens each picking
topk distinct experts uniformly: E (1 - (1 - topk/E)^M) experts) plus the activation traffic, over
the HBM bandwidth, or the tensor-core bound if larger.

Every call of a captured graph reads another weight copy and routes its tokens anew, so the
experts it touches stream from HBM, not from L2.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import torch

from humming_core.device import GemmProblem, get_device
from humming_core.spec import QuantSpec, preset

from . import baselines, peer
from .dense import (
    HBM_BYTES_PER_S,
    Row,
    act_bytes,
    document,
    kernel_of,
    measure_baselines,
    tensor_peak,
)
from .dense import _format as format_row
from .timing import graph_time_us, host_overhead_us

E, TOPK, HIDDEN, WIDTH = 128, 8, 2048, 768  # Qwen3-30B-A3B: experts, top-k, hidden, expert width
M_GRID = (1, 8, 32, 128, 512, 2048, 8192)
# MXFP4 with fp8 activations runs on the moe_w8a8 family; a spec no family of the device runs is
# reported under "skipped" with the device's reason.
SPECS = ("W4A16_G128", "MXFP4", "MXFP4_A8")
BASELINES = ("grouped_mm_bf16", "peer")
# Up to this M: 4 weight copies and 16 calls per graph (decode calls are short and touch few
# experts); above it 2 copies (a W4A16 copy is 311 MB, bf16 1.2 GB) and 4 calls.
SMALL_M = 128


@dataclass
class MoeRow(Row):
    E: int = E
    topk: int = TOPK

    def as_json(self) -> dict:
        return {**super().as_json(), "E": self.E, "topk": self.topk}


def expected_experts(e: int, topk: int, m: int) -> float:
    """Expected distinct experts hit by m tokens that each pick topk distinct experts uniformly."""
    return e * (1.0 - (1.0 - topk / e) ** m)


def roof_us(spec: QuantSpec, m: int, e=E, topk=TOPK, hidden=HIDDEN, width=WIDTH) -> float:
    """The roofline bound of w13 + w2 in µs (module docstring)."""
    per_expert = spec.weight_bytes(2 * width, hidden) + spec.weight_bytes(hidden, width)
    rows = m * topk
    # w13 reads x and writes the GLU output (16-bit), w2 reads that and writes 16-bit rows.
    traffic = rows * (hidden * act_bytes(spec) + width * 2 + width * act_bytes(spec) + hidden * 2)
    nbytes = expected_experts(e, topk, m) * per_expert + traffic
    flops = 2.0 * rows * (2 * width * hidden + hidden * width)
    return max(nbytes / HBM_BYTES_PER_S, flops / tensor_peak(spec)) * 1e6


def layer_specs(spec: QuantSpec) -> tuple[QuantSpec, QuantSpec]:
    """(w13, w2) specs: expert-stacked, w13 with the split SiLU GLU (Qwen3's gate_up_proj)."""
    glu = spec.epilogue.model_copy(update={"glu": "silu_mul"})
    return spec.replace(layout="moe", epilogue=glu), spec.replace(layout="moe")


def unsupported_reason(device, spec: QuantSpec) -> str | None:
    """Why `device` has no MoE kernel for `spec` on these experts, or None."""
    for s, (n, k) in zip(layer_specs(spec), ((2 * WIDTH, HIDDEN), (HIDDEN, WIDTH)), strict=True):
        support = device.check(s, GemmProblem(n=n, k=k, m=TOPK, num_experts=E))
        if not support:
            return support.reason
    return None


def _random_experts(spec: QuantSpec, n: int, k: int, device: torch.device):
    """E experts' canonical weights: one quantized expert repeated (timing needs no real weights)."""
    from humming_core.numerics import quantize_weight

    one = quantize_weight(torch.randn(1, n, k) * 0.02, spec).to(device)
    rep = lambda t: None if t is None else t.repeat(E, *([1] * (t.dim() - 1)))  # noqa: E731
    fields = ("qweight", "scales", "zeros", "global_scale")
    return dataclasses.replace(one, **{f: rep(getattr(one, f)) for f in fields})


def twins(layer, copies: int) -> list:
    """`layer` plus `copies - 1` twins sharing its kernels, each with its own clone of the packed
    weights (PreparedMoe.with_weights: cloning instead of packing 128 experts anew)."""
    clones = ({name: t.clone() for name, t in layer.packed.items()} for _ in range(copies - 1))
    return [layer, *(layer.with_weights(packed) for packed in clones)]


def layer_pairs(spec: QuantSpec, dev: torch.device, copies: int, ms: tuple) -> list[tuple]:
    """`copies` (w13, w2) pairs sharing one build; kernels for exactly the M buckets of `ms`."""
    from humming_core.ops import PreparedMoe, moe_bucket_of

    buckets = tuple(sorted({moe_bucket_of(m * TOPK) for m in ms}))
    (s13, s2), shapes = layer_specs(spec), ((2 * WIDTH, HIDDEN), (HIDDEN, WIDTH))
    w13, w2 = (
        PreparedMoe(_random_experts(s, n, k, dev), buckets=buckets)
        for s, (n, k) in zip((s13, s2), shapes, strict=True)
    )
    return list(zip(twins(w13, copies), twins(w2, copies), strict=True))


def routings(m: int, count: int, dev: torch.device, seed: int = 0) -> list[tuple]:
    """`count` uniform routings of m tokens: (router weights fp32, expert ids int32), [m, TOPK]."""
    gen = torch.Generator(device=dev).manual_seed(seed)
    out = []
    for _ in range(count):
        ids = torch.rand(m, E, generator=gen, device=dev).topk(TOPK, dim=-1).indices
        weights = torch.softmax(torch.randn(m, TOPK, generator=gen, device=dev), dim=-1)
        out.append((weights, ids.to(torch.int32)))
    return out


def humming_fn(pairs: list[tuple], x: torch.Tensor, routes: list[tuple]):
    from humming_core.ops import fused_moe_rows

    w2 = pairs[0][1]
    out = torch.empty(x.shape[0] * TOPK, w2.n_out, dtype=w2.out_dtype, device=x.device)

    def fn(i: int) -> None:
        w13, w2 = pairs[i % len(pairs)]
        weights, ids = routes[i % len(routes)]
        fused_moe_rows(x, weights, ids, w13, w2, out=out)

    return fn


def _peer_moe(name: str, x: torch.Tensor, routes: list, copies: int):
    # Its kernels are CUDA-only: on CPU it would quantize 128 experts before failing.
    if x.device.type != "cuda":
        raise baselines.Unavailable("published humming-kernels runs on CUDA devices only")
    return peer.moe(name, x, routes, copies, E, WIDTH)


def copies_and_calls(m: int) -> tuple[int, int]:
    """Weight copies a timed graph rotates through and calls per graph at M (see SMALL_M)."""
    return (4, 16) if m <= SMALL_M else (2, 4)


def activations(spec: QuantSpec, m: int, dev) -> torch.Tensor:
    """The layer's input: [m, HIDDEN] random values in the spec's 16-bit activation dtype (a
    spec with quantized activations takes bf16 and quantizes it in the layer)."""
    act = torch.float16 if spec.act.dtype.name == "fp16" else torch.bfloat16
    return torch.randn(m, HIDDEN, device=dev, dtype=act)


def _measure(name: str, pairs: list[tuple], m: int, dev, measured: dict, omitted: dict) -> MoeRow:
    spec = preset(name)
    copies, calls = copies_and_calls(m)
    x = activations(spec, m, dev)
    routes = routings(m, calls, dev, seed=m)
    row = MoeRow(name, 2 * WIDTH, HIDDEN, m, roof_us(spec, m))
    fn = humming_fn(pairs[:copies], x, routes)
    row.us["humming"] = graph_time_us(fn, calls)
    row.host_us = host_overhead_us(fn, row.us["humming"], calls=20)
    w13, w2 = pairs[0]
    row.kernels = {"w13": kernel_of(w13, m * TOPK), "w2": kernel_of(w2, m * TOPK)}
    builders = {
        "grouped_mm_bf16": partial(baselines.grouped_mm_bf16, x, routes, E, WIDTH, copies),
        "peer": partial(_peer_moe, name, x, routes, copies),  # measured per spec (SPEC_DEPENDENT)
    }
    measure_baselines(row, builders, (m,), calls, measured, omitted)
    return row


def run(specs=SPECS, ms=M_GRID, log=print, on_row=None, device="cuda") -> dict:
    """Measure the grid; `on_row(result_so_far)` after every row lets a caller save partial results.

    A spec without a MoE kernel on this device is listed under "skipped" with the device's reason."""
    dev = torch.device(device)
    target = get_device()
    rows, skipped, measured, omitted = [], {}, {}, {}
    for name in specs:
        reason = unsupported_reason(target, preset(name))
        if reason is not None:
            skipped[name] = f"no MoE kernel on {target.name}: {reason}"
            log(f"{name}: skipped ({skipped[name]})")
            continue
        pairs = layer_pairs(preset(name), dev, 4, ms)  # packed once for every M
        for m in ms:
            rows.append(_measure(name, pairs, m, dev, measured, omitted))
            torch.cuda.empty_cache()
            log(f"{format_row(rows[-1])} | E={E} top{TOPK}")
            if on_row is not None:
                on_row(document(rows, omitted, skipped, dev))
        for layer in pairs[0]:  # the twins share the originals' registry entries
            layer.release()
        peer.release_moe()
    return document(rows, omitted, skipped, dev)
