"""The dense GEMM benchmark grid: Humming vs baselines per (spec, N, K, M), with the roofline bound.

Two suites share it: `dense` (16-bit activations: cuBLAS fp16, tinygemm int4, cuBLASLt fp8) and
`act8` (8-bit activations: cuBLASLt fp8 with row-wise scales), chosen by `run(specs, baselines)`.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import sys
from dataclasses import dataclass, field
from functools import partial

import torch

from humming_core.spec import QuantSpec, preset

from . import baselines, peer
from .timing import copies_for, graph_time_us, host_overhead_us

LAYERS = ((6144, 4096), (4096, 14336), (57344, 8192), (8192, 28672))  # (N, K), KERNELS.md
M_GRID = (1, 8, 16, 32, 64, 128, 256, 1024, 4096)
SPECS = ("W4A16_G128", "W8A16", "W3A16_G128", "E4M3_G128", "MXFP4")
BASELINES = ("cublas_fp16", "tinygemm_int4", "cublaslt_fp8", "peer")
ACT8_SPECS = ("W8A8_FP8", "W4A8_FP8", "FP8_BLOCK128")
ACT8_BASELINES = ("cublaslt_fp8", "peer")
SPEC_DEPENDENT = ("peer",)  # baselines whose time depends on the spec, not only on (N, K, M)
HBM_BYTES_PER_S = 4.27e12  # measured device-to-device copy on an H200 (KERNELS.md)
FP16_FLOPS = 989e12
FP8_FLOPS = 1979e12  # fp8 / int8 dense tensor peak: the ceiling of 8-bit-activation GEMMs


@dataclass
class Row:
    spec: str
    N: int
    K: int
    M: int
    roof_us: float
    us: dict[str, float] = field(default_factory=dict)
    host_us: float | None = None
    # the config of every kernel Humming's time came from, by layer name ("gemm", or "w13" / "w2")
    kernels: dict[str, dict] = field(default_factory=dict)

    def as_json(self) -> dict:
        doc = {
            "spec": self.spec,
            "N": self.N,
            "K": self.K,
            "M": self.M,
            "roof_us": round(self.roof_us, 3),
            "us": {name: round(v, 3) for name, v in self.us.items()},
            "host_us": round(self.host_us, 2),
        }
        if self.kernels:
            doc["kernels"] = self.kernels
        return doc


def kernel_of(layer, rows: int) -> dict:
    """The config (family and fields) of the kernel `layer` runs for `rows` rows (routed rows
    for a MoE layer, whose buckets go past the dense ones), as JSON."""
    return layer.config_for(rows).model_dump(mode="json")


def act_bytes(spec: QuantSpec) -> int:
    """Bytes per activation element the GEMM reads: 1 for 8-bit activations, else 2."""
    return 1 if spec.act.is_quantized and spec.act.dtype.bits <= 8 else 2


def tensor_peak(spec: QuantSpec) -> float:
    """The tensor-core peak of the spec's activation type (KERNELS.md): fp8/int8 or fp16."""
    return FP8_FLOPS if act_bytes(spec) == 1 else FP16_FLOPS


def roof_us(spec: QuantSpec, n: int, k: int, m: int) -> float:
    """max(bytes / HBM bandwidth, flops / tensor peak of the activation type) in µs."""
    nbytes = spec.weight_bytes(n, k) + m * k * act_bytes(spec) + m * n * 2
    return max(nbytes / HBM_BYTES_PER_S, 2.0 * m * n * k / tensor_peak(spec)) * 1e6


def _random_canonical(spec: QuantSpec, n: int, k: int, device: torch.device):
    """Full-size canonical weights by tiling a quantized 256-row slice (timing needs no real weights).

    256 rows keep every packed tensor tileable: block scales (128 rows), zero points packed along N.
    """
    from humming_core.numerics import quantize_weight

    rows = math.gcd(n, 256)
    small = quantize_weight(torch.randn(rows, k) * 0.02, spec).to(device)
    reps = n // rows
    zeros = small.zeros
    if zeros is not None:
        # Integer zero points are packed along N (last dim); float offsets are laid out like scales.
        zeros = zeros.repeat(1, reps) if zeros.dtype == torch.int32 else zeros.repeat(reps, 1)
    return dataclasses.replace(
        small,
        n=n,
        qweight=small.qweight.repeat(reps, 1),
        scales=small.scales.repeat(reps, 1),
        zeros=zeros,
    )


def _rotated_layers(spec: QuantSpec, n: int, k: int, device: torch.device, copies: int) -> list:
    """`copies` layers of one canonical weight, each packed anew: a PreparedGemm binds its packed
    weights when it is built, so every copy is built (its kernels come from the compile memo)."""
    from humming_core.ops import PreparedGemm

    cw = _random_canonical(spec, n, k, device)
    return [PreparedGemm(cw) for _ in range(copies)]


def _humming_fn(layers: list, x: torch.Tensor):
    out = torch.empty(x.shape[0], layers[0].n_out, dtype=layers[0].out_dtype, device=x.device)
    return lambda i: layers[i % len(layers)].run(x, out=out)


def _builders(name: str, x: torch.Tensor, n: int, k: int, copies: int, l2: int) -> dict:
    """Every baseline of the dense grid for one point; tinygemm only beside W4A16 g128 (int4)."""
    builders = {
        "cublas_fp16": partial(baselines.cublas_fp16, x, n, copies_for(2 * n * k, l2)),
        "tinygemm_int4": partial(baselines.tinygemm_int4, x, n, copies),
        "cublaslt_fp8": partial(baselines.cublaslt_fp8, x, n, copies_for(n * k, l2)),
        "peer": partial(peer.dense, name, x, n, k, copies),
    }
    if name != "W4A16_G128":
        builders.pop("tinygemm_int4")
    return builders


def l2_bytes(dev: torch.device) -> int:
    return torch.cuda.get_device_properties(dev).L2_cache_size if dev.type == "cuda" else 0


def run(
    specs=SPECS,
    layers=LAYERS,
    ms=M_GRID,
    log=print,
    on_row=None,
    baseline_names=BASELINES,
    device="cuda",
) -> dict:
    """Measure the grid; `on_row(result_so_far)` after every row lets a caller save partial results.

    `baseline_names` picks the baselines (of BASELINES) measured beside Humming."""
    unknown = set(baseline_names) - set(BASELINES)
    if unknown:
        raise ValueError(f"unknown baselines {sorted(unknown)}: choose from {', '.join(BASELINES)}")
    dev = torch.device(device)
    l2 = l2_bytes(dev)
    rows, omitted, measured = [], {}, {}
    for name in specs:
        spec = preset(name)
        for n, k in layers:
            copies = copies_for(spec.weight_bytes(n, k), l2)
            weights = _rotated_layers(spec, n, k, dev, copies)  # packed once for every M
            for m in ms:
                x = torch.randn(
                    m,
                    k,
                    device=dev,
                    dtype=torch.float16 if spec.act.dtype.name == "fp16" else torch.bfloat16,
                )
                calls = max(2 * copies, 8 if m <= 256 else 2)
                row = Row(name, n, k, m, roof_us(spec, n, k, m))
                fn = _humming_fn(weights, x)
                row.us["humming"] = graph_time_us(fn, calls)
                row.host_us = host_overhead_us(fn, row.us["humming"], calls=50)
                row.kernels = {"gemm": kernel_of(weights[0], m)}
                builders = _builders(name, x, n, k, copies, l2)
                picked = {b: builders[b] for b in baseline_names if b in builders}
                measure_baselines(row, picked, (n, k, m), calls, measured, omitted)
                rows.append(row)
                torch.cuda.empty_cache()
                log(_format(row))
                if on_row is not None:
                    on_row(document(rows, omitted, dev=dev))
            for layer in weights:  # the op registry would keep every copy alive otherwise
                layer.release()
    return document(rows, omitted, dev=dev)


def measure_baselines(row, builders: dict, point: tuple, calls: int, measured: dict, omitted: dict):
    """Time each baseline into `row.us`; most do not depend on the spec, so each is measured once per
    `point` (kept in `measured`), SPEC_DEPENDENT ones once per spec and point; an unavailable one
    goes to `omitted` with its reason (distinct reasons of one baseline are all kept)."""
    for base, build in builders.items():
        key = (base, row.spec, *point) if base in SPEC_DEPENDENT else (base, *point)
        if key not in measured:
            try:
                measured[key] = graph_time_us(build(), calls)
            except baselines.Unavailable as exc:
                reasons = omitted.get(base, "").split("; ") if base in omitted else []
                if str(exc) not in reasons:
                    omitted[base] = "; ".join([*reasons, str(exc)])
                measured[key] = None
        if measured[key] is not None:
            row.us[base] = measured[key]


def document(
    rows: list,
    omitted: dict[str, str],
    skipped: dict[str, str] | None = None,
    dev: torch.device | None = None,
) -> dict:
    """The results JSON: run facts, rows, baselines omitted (and specs skipped) with their reasons."""
    dev = dev if dev is not None else torch.device("cuda")
    doc = {
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev),
        "torch": torch.__version__,
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["humming", "bench", *sys.argv[2:]])
        if sys.argv[1:2] == ["bench"]
        else " ".join(sys.argv),
        "rows": [r.as_json() for r in rows],
        "omitted": omitted,
    }
    if skipped is not None:
        doc["skipped"] = skipped
    return doc


def _format(r: Row) -> str:
    h = r.us["humming"]
    parts = [
        f"{r.spec:11s} {r.N:6d}x{r.K:<6d} M={r.M:<5d} roof {r.roof_us:8.1f}us humming {h:8.1f}us "
        f"({100 * r.roof_us / h:5.1f}% of roof) host {r.host_us:5.1f}us"
    ]
    parts += [f"{b} {v:8.1f}us (x{v / h:4.2f})" for b, v in r.us.items() if b != "humming"]
    return " | ".join(parts)


def plot(result: dict, path: str, title: str = "humming dense GEMM") -> None:
    """Roofline-fraction plot: % of the bound per M, one line per layer and spec."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    series: dict[tuple, list] = {}
    for r in result["rows"]:
        series.setdefault((r["spec"], r["N"], r["K"]), []).append(
            (r["M"], 100 * r["roof_us"] / r["us"]["humming"])
        )
    for (spec, n, k), pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{spec} {n}x{k}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (tokens)")
    ax.set_ylabel("% of roofline bound")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"{title} on {result['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
