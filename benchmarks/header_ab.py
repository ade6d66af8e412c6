"""Same-run A/B of this tree's kernel headers against another version of them (issue 6 perf work).

    git archive next/session7 packages/humming-cuda/src/humming_cuda/include | tar -x -C .ab
    python3 benchmarks/header_ab.py --b .ab/packages/humming-cuda/src/humming_cuda/include \\
        W4A16_G128:6144x4096:64 W4A16_G128:57344x8192:1 [--out ab.json]

(.ab is git-ignored: name it in the device tool's `carry`.) For each point SPEC:NxK:M the device's
chosen config is rendered once by this tree and compiled twice: against this tree's headers (A)
and against the headers under --b (B). Both run on the same rotated weight copies (together over
3x L2, as `humming bench` times), x and output, timed by CUDA-graph replay in A, B, A, B order;
each variant's time is the lower of its two medians. cuBLAS fp16 (`x @ w.T`, over its own rotated
fp16 weight copies, as `humming bench` times it) is the reference.
`--set field=value` changes both sides' config (e.g. `weights_in_registers=false`: an unrouted
form of the kernel, old and new headers). `--b-set field=value` also changes B's config (a
launch-time field, such as `pdl=false`, that leaves the rendered code alone: B's time then is the
old headers launched the old way).
Only header changes can be compared: rendering, weight layout, binding and the launch's shared
memory size are this tree's, so B must need no more than A gets (next/session7's wna16 does not
qualify: its staged epilogue changed the shared-memory size in Python too).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from points import Point, field_values, headers_from, packed_copies, rotated_us, save, with_fields

from humming_cuda.bench.baselines import cublas_fp16
from humming_cuda.bench.timing import copies_for, graph_time_us
from humming_cuda.device import CudaDevice


def _compile_against(device: CudaDevice, source, include_root: Path | None):
    """Compile and load `source` with `include_root` in place of the package's headers."""
    with headers_from(include_root):
        return device.load(device.compile(source))


def ab(device: CudaDevice, text: str, b_root: Path, b_set: dict, both_set: dict) -> dict:
    point = Point.parse(text)
    spec, problem = point.spec, point.problem
    caps = device.caps()
    config = with_fields(device.candidates(spec, problem)[0], both_set)
    source = device.render(spec, config)
    kernels = {
        "A": _compile_against(device, source, None),
        "B": _compile_against(device, device.render(spec, with_fields(config, b_set)), b_root),
    }
    cw, x, out = point.tensors()
    copies = point.copies(caps)
    packed = packed_copies(device, spec, config, cw, copies)
    times: dict[str, list[float]] = {"A": [], "B": []}
    for name in ("A", "B", "A", "B"):
        times[name].append(rotated_us(kernels[name], packed, x, out))
    fp16_copies = copies_for(2 * point.n * point.k, caps.l2_bytes or 50 << 20)
    cublas = graph_time_us(cublas_fp16(x, point.n, fp16_copies), max(2 * fp16_copies, 8))
    a, b = min(times["A"]), min(times["B"])
    row = {"point": text, "config": config.model_dump(mode="json"), "copies": copies}
    row |= {"a_us": a, "b_us": b, "b_over_a": round(b / a, 3), "cublas_fp16_us": cublas}
    row["samples"] = times
    print(
        f"{text:32s} A {a:9.1f} us  B {b:9.1f} us  B/A {b / a:5.2f}  cuBLAS fp16 {cublas:9.1f} us",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M")
    parser.add_argument("--b", required=True, type=Path, help="the other version's include/ root")
    parser.add_argument(
        "--b-set", action="append", default=[], help="field=value of B's config (launch-time)"
    )
    parser.add_argument(
        "--set", action="append", default=[], help="field=value of both sides' config"
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    if not (args.b / "humming").is_dir():
        raise SystemExit(f"--b {args.b} has no humming/ headers: pass the include/ directory")
    device = CudaDevice()
    b_set = field_values(args.b_set)
    both_set = field_values(args.set)
    rows = [ab(device, p, args.b.resolve(), b_set, both_set) for p in args.points]
    save(args.out, rows, b=str(args.b), b_set=b_set, set=both_set)


if __name__ == "__main__":
    main()
