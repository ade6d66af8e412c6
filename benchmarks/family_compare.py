"""Side-by-side GPU times of every kernel family that runs one problem (routing decisions).

    HUMMING_UNVERIFIED_KERNELS=1 python3 benchmarks/family_compare.py \\
        W4A16_G128:57344x8192:1 W4A8_FP8:4096x14336:64 [--out compare.json]

For each point SPEC:NxK:M: every registered family that supports the problem (gated ones too: a
comparison is how a family earns its place in the routing), each with its first candidate config,
timed by CUDA-graph replay over rotated weight copies that together exceed 3x L2 (as `humming
bench` times), on the same x and output. The family the device routes the problem to (under the
environment's HUMMING_UNVERIFIED_KERNELS) is marked, and every time is also given as a ratio to it.
Packing is not timed; each family packs its own copies.
"""

from __future__ import annotations

import argparse

from points import Point, rotated_us, save

from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES


def compare(device: CudaDevice, text: str) -> dict:
    point = Point.parse(text)
    spec, problem = point.spec, point.problem
    caps = device.caps()
    routed = device.candidates(spec, problem)[0].family
    cw, x, out = point.tensors()
    copies = point.copies(caps)
    row = {"point": text, "routed": routed, "copies": copies, "families": []}
    for family in FAMILIES:
        if not family.supports(spec, problem, caps):
            continue
        config = family.candidates(spec, problem, caps)[0]
        layout = family.weight_layout(spec, config, caps)
        packed = [layout.pack(cw, "cuda") for _ in range(copies)]
        kernel = device.load(device.compile(device.render(spec, config)))
        us = rotated_us(kernel, packed, x, out)
        row["families"].append({"family": family.name, "config": config.model_dump(), "us": us})
        del packed
    base = next((f["us"] for f in row["families"] if f["family"] == routed), None)
    for f in row["families"]:
        f["vs_routed"] = round(base / f["us"], 3) if base else None
        mark = "*" if f["family"] == routed else " "
        print(
            f"{text:32s} {mark}{f['family']:14s} {f['us']:9.1f} us  x{f['vs_routed']}", flush=True
        )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M")
    parser.add_argument("--out")
    args = parser.parse_args()
    device = CudaDevice()
    save(args.out, [compare(device, p) for p in args.points])


if __name__ == "__main__":
    main()
