"""One GEMM call per (spec, layer, M), for a profiler to look at (issue 6/7 tuning on the GPU host).

    ncu --kernel-name regex:humming --launch-skip 2 --launch-count 1 --section SpeedOfLight \\
        python3 benchmarks/profile_gemm.py W8A8_FP8:8192x28672:4096

Each argument SPEC:NxK:M builds a PreparedGemm on full-size random weights (the bench's), then
makes three calls: two warm-ups (the first also sets up tensor maps) and one to profile; a
profiler's launch-skip / launch-count pick the third. Prints the family and config each call
runs, so the profile can be matched to its kernel. `--set field=value` (repeatable) runs the
device's first candidate with those config fields changed instead (e.g. another kernel form).
`--peer` makes the same three calls on the published humming-kernels layer of the point's format
(the bench's peer baseline; its GEMM kernel's function name is `humming`, and building it makes
one eager call first, so `--kernel-name humming --launch-skip 3` picks the third).
`--cublas` makes them on cuBLASLt fp8 (`torch._scaled_mm`, row-wise scales: the bench's
cublaslt_fp8 baseline, which also makes one call first) for the point's N, K and M.
"""

from __future__ import annotations

import argparse

import torch
from points import DTYPES, Point, field_values, with_fields

from humming_core.ops import PreparedGemm
from humming_core.spec import preset
from humming_cuda.bench.dense import _random_canonical


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+", help="SPEC:NxK:M, e.g. W4A16_G128:57344x8192:4096")
    parser.add_argument("--set", action="append", default=[], help="config field=value")
    parser.add_argument("--peer", action="store_true", help="the published package's layer")
    parser.add_argument("--cublas", action="store_true", help="cuBLASLt fp8 at the point's shape")
    args = parser.parse_args()
    if args.cublas:
        for text in args.points:
            run_cublas(Point.parse(text))
        return
    if args.peer:
        for text in args.points:
            run_peer(Point.parse(text))
        return
    if args.set:
        update = field_values(args.set)
        for text in args.points:
            run_config(Point.parse(text), update)
        return
    device = torch.device("cuda")
    for point in args.points:
        name, layer, m = point.split(":")
        n, k = (int(v) for v in layer.split("x"))
        spec = preset(name)
        gemm = PreparedGemm(_random_canonical(spec, n, k, device))
        x = torch.randn(int(m), k, device=device).to(
            torch.bfloat16 if spec.act.dtype.name == "bf16" else torch.float16
        )
        for _ in range(3):
            gemm.run(x)
        torch.cuda.synchronize()
        print(point, gemm.config_for(int(m)))


def run_config(point: Point, update: dict) -> None:
    """Three calls of the device's first candidate for `point` with `update` applied."""
    from humming_cuda.device import CudaDevice

    device = CudaDevice()
    config = with_fields(device.candidates(point.spec, point.problem)[0], update)
    kernel = device.load(device.compile(device.render(point.spec, config)))
    cw, x, out = point.tensors()
    packed = device.weight_layout(point.spec, config).pack(cw, "cuda")
    for _ in range(3):
        kernel(x=x, out=out, **packed)
    torch.cuda.synchronize()
    print(point.text, config)


def run_peer(point: Point) -> None:
    """Three calls of the published package's layer for `point` (bench/peer.py builds it)."""
    from humming_cuda.bench.peer import dense

    x = torch.randn(point.m, point.k, device="cuda").to(DTYPES[point.act])
    fn = dense(point.text.split(":")[0], x, point.n, point.k, copies=1)
    for _ in range(3):
        fn(0)
    torch.cuda.synchronize()
    print(point.text, "peer")


def run_cublas(point: Point) -> None:
    """Three calls of the bench's cuBLASLt fp8 baseline at the point's shape."""
    from humming_cuda.bench.baselines import cublaslt_fp8

    x = torch.randn(point.m, point.k, device="cuda").to(torch.bfloat16)
    fn = cublaslt_fp8(x, point.n, copies=1)
    for _ in range(3):
        fn(0)
    torch.cuda.synchronize()
    print(point.text, "cublaslt_fp8")


if __name__ == "__main__":
    main()
