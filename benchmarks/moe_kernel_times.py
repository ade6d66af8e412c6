"""Where the MoE bench's layer spends its time (issue 8): the GPU kernels of one
`fused_moe_rows` call (alignment, w13, activation, w2), each kernel's mean time over a few
calls under torch.profiler.

    python3 benchmarks/moe_kernel_times.py [--specs W4A16_G128] [--m 2048,8192] [--peer] \
        [--out times.json]

The layer, weights and routings are `humming bench --suite moe`'s (two weight copies in turn, so
the experts stream from HBM as the bench times them); the kernels run eagerly, not from a graph.
`--peer` also times the published humming-kernels' layer (bench/peer.py's `moe`) the same way,
after ours at each point.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import torch
from points import save

from humming_core.spec import preset
from humming_cuda.bench import peer
from humming_cuda.bench.moe import WIDTH, E, activations, humming_fn, layer_pairs, routings

CALLS = 6


def kernel_times(name: str, m: int, of_peer: bool = False) -> dict:
    x = activations(preset(name), m, torch.device("cuda"))
    routes = routings(m, 2, torch.device("cuda"), seed=m)
    if of_peer:
        fn = peer.moe(name, x, routes, 2, E, WIDTH)
    else:
        fn = humming_fn(layer_pairs(preset(name), torch.device("cuda"), 2, (m,)), x, routes)
    for i in range(2):  # compile, load and warm up outside the profile
        fn(i)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(CALLS):
            fn(i)
        torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] += event.device_time / CALLS
    row = {
        "spec": name,
        "M": m,
        "peer": of_peer,
        "us_per_call": dict(sorted(totals.items(), key=lambda t: -t[1])),
    }
    print(f"{'peer ' if of_peer else ''}{name} M={m}: {sum(totals.values()):.1f} us per call")
    for kernel, us in row["us_per_call"].items():
        print(f"  {us:9.1f} us  {kernel[:100]}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="W4A16_G128")
    parser.add_argument("--m", default="2048,8192")
    parser.add_argument(
        "--peer", action="store_true", help="also the published humming-kernels, after ours"
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    save(
        args.out,
        [
            kernel_times(n, int(m), of_peer)
            for n in args.specs.split(",")
            for m in args.m.split(",")
            for of_peer in ((False, True) if args.peer else (False,))
        ],
    )


if __name__ == "__main__":
    main()
