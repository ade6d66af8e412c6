"""What a checkpoint holds (`inspect_checkpoint`) and its conversion to a canonical humming
checkpoint (`convert_checkpoint`), the library side of `humming inspect` / `humming convert`.

A canonical humming checkpoint is a folder with `model.safetensors` and `humming.json`. For each
quantized layer NAME the safetensors file holds NAME.qweight, NAME.scales and, when present,
NAME.zeros, NAME.global_scale, NAME.bias, NAME.k_perm (act-order K order) and NAME.<activation
scale>; `humming.json` maps NAME to {"spec": QuantSpec JSON, "n", "k"}. Other tensors are copied
under their own names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .base import QuantLayer, open_checkpoint

MANIFEST = "humming.json"


@dataclass(frozen=True)
class CheckpointReport:
    path: Path
    format: str
    layers: list[QuantLayer]
    plain_tensors: int
    specs: dict[str, int] = field(default_factory=dict)  # spec JSON -> number of layers

    @property
    def weights(self) -> int:
        return sum(layer.n * layer.k * max(1, layer.experts) for layer in self.layers)

    @property
    def quantized_bytes(self) -> int:
        return sum(layer.nbytes for layer in self.layers)

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.quantized_bytes / self.weights if self.weights else 0.0


def inspect_checkpoint(path: str | Path) -> CheckpointReport:
    """Format, quantized layers (shapes and specs), bits per weight and memory; reads headers only
    (GPTQ v1 asymmetric checkpoints also read their small zero-point tensors)."""
    fmt = open_checkpoint(path)
    layers = fmt.layers()
    specs: dict[str, int] = {}
    for layer in layers:
        key = layer.spec.to_json()
        specs[key] = specs.get(key, 0) + 1
    return CheckpointReport(Path(path), fmt.name, layers, len(fmt.plain_tensors()), specs)


def convert_checkpoint(
    path: str | Path, out: str | Path, progress: bool = True, allow_rounding: bool = False
) -> Path:
    """Convert every layer to the canonical form and write a humming checkpoint folder `out`."""
    from rich.progress import Progress
    from safetensors.torch import save_file

    fmt = open_checkpoint(path, allow_rounding=allow_rounding)
    layers = fmt.layers()
    plain = fmt.plain_tensors()
    tensors: dict[str, torch.Tensor] = {}
    manifest: dict[str, dict] = {}
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task(f"converting {fmt.name}", total=len(layers) + len(plain))
        for layer in layers:
            tensors.update(_layer_tensors(fmt, layer))
            manifest[layer.name] = {
                "spec": json.loads(layer.spec.to_json()),
                "n": layer.n,
                "k": layer.k,
            }
            bar.advance(task)
        for name in plain:
            tensors[name] = fmt.read_plain(name).contiguous()
            bar.advance(task)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_file(
        tensors,
        str(out / "model.safetensors"),
        metadata={"format": "humming", "source_format": fmt.name},
    )
    (out / MANIFEST).write_text(
        json.dumps({"source_format": fmt.name, "layers": manifest}, indent=1)
    )
    return out


def _layer_tensors(fmt, layer: QuantLayer) -> dict[str, torch.Tensor]:
    cw = fmt.load(layer.name)
    parts = {
        "qweight": cw.qweight,
        "scales": cw.scales,
        "zeros": cw.zeros,
        "global_scale": cw.global_scale,
        "bias": cw.bias,
        "k_perm": fmt.k_permutation(layer.name),
    }
    parts.update(fmt.extras(layer.name))
    return {f"{layer.name}.{key}": t.contiguous() for key, t in parts.items() if t is not None}


def format_report(report: CheckpointReport) -> str:
    """Plain-text summary for the CLI."""
    lines = [
        f"{report.path}: {report.format}, {len(report.layers)} quantized layers, "
        f"{report.plain_tensors} other tensors",
        f"quantized weights: {report.weights:,} at {report.bits_per_weight:.3f} bits/weight "
        f"= {report.quantized_bytes / 2**20:.2f} MiB",
    ]
    for spec, count in report.specs.items():
        lines.append(f"  {count:4d} x {spec}")
    for layer in report.layers:
        experts = f"{layer.experts} x " if layer.experts else ""
        lines.append(
            f"  {layer.name}: {experts}{layer.n}x{layer.k}, {layer.spec.weight.dtype.name}, "
            f"{layer.bits_per_weight:.3f} bpw"
        )
    return "\n".join(lines)
