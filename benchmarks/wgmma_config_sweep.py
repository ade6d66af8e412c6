"""Side-by-side GPU times of one spec's kernel under several configs (wgmma tuning, issue 6/7).

    python3 benchmarks/wgmma_config_sweep.py --set group_m=1,8,16 --set stages=4,6 \\
        W8A8_FP8:8192x28672:4096 W4A16_G128:57344x8192:1024 [--out sweep.json]

For each point SPEC:NxK:M: the device's chosen config, then every combination of the `--set`
values applied to it (fields of the config), each compiled and timed by CUDA-graph replay over
rotated packed weight copies (together over 3x L2, as `humming bench` times: a small layer's
weights would otherwise stay in L2) with the same x and output; cuBLAS fp16 (`x @ w.T`, over its
own rotated copies) in the same run as the reference ratio. The first combination that equals the
chosen config is the baseline of the row; when none does (e.g. `--set split_k=1 --set
rs_stream_k=false,true` at a point routed to split 2) the chosen config is timed too
(`chosen_us`).
`--family NAME` sweeps that family's first candidate instead of the device's choice (a family the
heuristic does not prefer at this point) and also times the device's choice (`routed_us`).
`--peer` also times the published humming-kernels layer of the point's format (`peer_us`, over
rotated copies of its own), the issue 6 target, in the same run.
"""

from __future__ import annotations

import argparse
import itertools

from points import Point, config_us, field_values, packed_copies, peer_us, save, with_fields

from humming_cuda.bench.baselines import Unavailable, cublas_fp16
from humming_cuda.bench.timing import copies_for, graph_time_us
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import family_named


def sweep(
    device: CudaDevice, text: str, grid: dict[str, list], family: str | None, peer: bool = False
) -> dict:
    point = Point.parse(text)
    spec = point.spec
    routed = chosen = device.candidates(spec, point.problem)[0]
    if family and family != routed.family:
        own = family_named(family).candidates(spec, point.problem, device.caps())
        if not own:
            raise SystemExit(f"{text}: the {family} family has no candidate for this point")
        chosen = own[0]
    cw, x, out = point.tensors()
    row = {"point": text, "chosen": chosen.model_dump(mode="json"), "variants": []}
    caps = device.caps()
    copies = point.copies(caps)
    fp16_copies = copies_for(2 * point.n * point.k, caps.l2_bytes or 50 << 20)
    row["cublas_fp16_us"] = graph_time_us(
        cublas_fp16(x, point.n, fp16_copies), max(2 * fp16_copies, 8)
    )
    if peer:
        try:
            row["peer_us"] = peer_us(point, x, copies)
        except Unavailable as exc:
            print(f"{text:32s} peer: {exc}", flush=True)
        else:
            print(f"{text:32s} peer {row['peer_us']:9.1f} us", flush=True)
    if chosen is not routed:
        row["routed"] = routed.model_dump(mode="json")
        row["routed_us"] = config_us(
            device, spec, routed, packed_copies(device, spec, routed, cw, copies), x, out
        )
        print(f"{text:32s} routed to {routed.family} {row['routed_us']:9.1f} us", flush=True)
    # one layout for every variant of the chosen config
    packed = packed_copies(device, spec, chosen, cw, copies)
    variants = []
    for values in itertools.product(*grid.values()):
        fields = dict(zip(grid, values, strict=True))
        try:
            variants.append((values, with_fields(chosen, fields)))
        except ValueError as exc:  # e.g. stream-K on a split-K plan: skip it, keep the sweep
            reason = " ".join(str(exc).split())
            row["variants"].append({**fields, "invalid": reason})
            print(f"{text:32s} {fields} not a valid config: {reason}", flush=True)
    if all(cfg != chosen for _, cfg in variants):
        row["chosen_us"] = config_us(device, spec, chosen, packed, x, out)
        print(f"{text:32s} chosen {row['chosen_us']:9.1f} us", flush=True)
    for values, cfg in variants:
        us = config_us(device, spec, cfg, packed, x, out)
        row["variants"].append({**dict(zip(grid, values, strict=True)), "us": us})
        print(
            f"{text:32s} {dict(zip(grid, values, strict=True))} {us:9.1f} us  "
            f"x{row['cublas_fp16_us'] / us:.2f} cuBLAS fp16",
            flush=True,
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M")
    parser.add_argument("--set", action="append", default=[], help="field=v1,v2,...")
    parser.add_argument("--family", help="sweep this family's first candidate")
    parser.add_argument("--peer", action="store_true", help="time the published package too")
    parser.add_argument("--out")
    args = parser.parse_args()
    grid = field_values(args.set, many=True)
    device = CudaDevice()
    save(args.out, [sweep(device, p, grid, args.family, args.peer) for p in args.points])


if __name__ == "__main__":
    main()
