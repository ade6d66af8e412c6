"""The SPEC:NxK:M points the GPU benchmark scripts take (family_compare, wgmma_config_sweep,
fast_compile_compare, header_ab), the tensors one needs (random canonical weights, x and the
output), timing over rotated weight copies as `humming bench` does, and the scripts' JSON file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from humming_core.device import DeviceCaps, GemmProblem
from humming_core.spec import QuantSpec, preset
from humming_cuda import compiler
from humming_cuda.bench.dense import _random_canonical
from humming_cuda.bench.timing import copies_for, graph_time_us

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@dataclass(frozen=True)
class Point:
    text: str
    spec: QuantSpec
    n: int
    k: int
    m: int

    @classmethod
    def parse(cls, text: str) -> Point:
        try:
            name, layer, m = text.split(":")
            n, k = (int(v) for v in layer.split("x"))
            rows = int(m)
        except ValueError as exc:
            raise SystemExit(
                f"point {text!r}: expected SPEC:NxK:M, e.g. W4A16_G128:8192x8192:16"
            ) from exc
        return cls(text, preset(name), n, k, rows)

    @property
    def act(self) -> str:
        """x's dtype: the spec's 16-bit activations, or fp16 where they are quantized in the kernel."""
        name = self.spec.act.dtype.name
        return name if name in DTYPES else "fp16"

    @property
    def problem(self) -> GemmProblem:
        return GemmProblem(n=self.n, k=self.k, m=self.m, act_dtype=self.act)

    def copies(self, caps: DeviceCaps) -> int:
        """How many packed weight copies a rotation needs to exceed 3x the L2 of `caps`."""
        return copies_for(self.spec.weight_bytes(self.n, self.k), caps.l2_bytes or 50 << 20)

    def tensors(self) -> tuple[object, torch.Tensor, torch.Tensor]:
        """(canonical weights, x [M, K], out [M, N]) on the GPU."""
        cw = _random_canonical(self.spec, self.n, self.k, torch.device("cuda"))
        x = torch.randn(self.m, self.k, device="cuda").to(DTYPES[self.act])
        out = torch.empty(self.m, self.n, device="cuda", dtype=DTYPES[self.spec.output_dtype])
        return cw, x, out


def field_value(text: str) -> int | float | str:
    """A config field's (or a module constant's) value from the command line: an integer, a
    float, or the text as given (booleans and names: pydantic parses it; an int Literal field
    would refuse the text "3")."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def field_values(items: list[str], many: bool = False) -> dict:
    """`field=value` arguments (`field=v1,v2,...` with `many`: a list per field) as a dict for
    `with_fields`."""
    fields = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field:
            raise SystemExit(f"{item!r}: expected field=value")
        values = [field_value(v) for v in value.split(",")] if many else field_value(value)
        fields[field] = values
    return fields


def with_fields(config, update: dict):
    """`config` with `update`'s fields, validated as a new config: a field the config type lacks,
    or a value it refuses, stops the script (model_copy would keep either silently, and the kernel
    rendered from it would be the unchanged one)."""
    unknown = set(update) - set(type(config).model_fields)
    if unknown:
        raise SystemExit(
            f"{type(config).__name__} has no field {sorted(unknown)}; it has "
            f"{sorted(type(config).model_fields)}"
        )
    return type(config).model_validate({**config.model_dump(), **update})


def packed_copies(device, spec: QuantSpec, config, cw, copies: int) -> list[dict]:
    """`copies` packings of the canonical weights `cw` in `config`'s layout, on the GPU."""
    return [device.weight_layout(spec, config).pack(cw, "cuda") for _ in range(copies)]


def config_us(device, spec: QuantSpec, config, packed: list[dict], x, out) -> float:
    """`config`'s kernel compiled and timed by CUDA-graph replay, call i on copy i of `packed`."""
    kernel = device.load(device.compile(device.render(spec, config)))
    return rotated_us(kernel, packed, x, out)


def peer_us(point: Point, x: torch.Tensor, copies: int) -> float:
    """The published humming-kernels layer of the point's format over `copies` rotated weight
    copies of its own, timed by CUDA-graph replay (raises bench.baselines.Unavailable)."""
    from humming_cuda.bench.peer import dense

    fn = dense(point.text.split(":")[0], x, point.n, point.k, copies)
    return graph_time_us(fn, max(2 * copies, 8))


def rotated_us(kernel, packed: list[dict], x: torch.Tensor, out: torch.Tensor) -> float:
    """`kernel`'s time by CUDA-graph replay, call i on weight copy i % len(packed)."""
    copies = len(packed)
    return graph_time_us(lambda i: kernel(x=x, out=out, **packed[i % copies]), max(2 * copies, 8))


def save(path: str | None, rows: list[dict], **meta) -> None:
    """Write {"device", **meta, "rows"} to `path` as JSON (nothing when `path` is None)."""
    if path:
        with open(path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), **meta, "rows": rows}, f, indent=1)


@contextmanager
def headers_from(include_root: Path | None) -> Iterator[None]:
    """Compile against `include_root` (another version's include/ directory) instead of the
    package's headers inside the block; None: the package's."""
    original = compiler.humming_include_root
    if include_root is not None:
        compiler.humming_include_root = lambda: include_root
    try:
        yield
    finally:
        compiler.humming_include_root = original
