"""How many clusters of a kernel the GPU holds at once (cuOccupancyMaxActiveClusters), against
the CTAs it holds without clusters: cluster split-K's grid must fit the former to run in one
wave. For each point SPEC:NxK:M, the routed config with rs_cluster_split and each split_k given.

    python3 benchmarks/cluster_occupancy.py W4A16_G128:8192x28672:128 --splits 2,4,8
"""

from __future__ import annotations

import argparse

import torch
from cuda.bindings import driver
from points import Point, with_fields

from humming_cuda.device import CudaDevice
from humming_cuda.launch import _launch_attributes


def max_clusters(function, cfg, split: int) -> int:
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = 1024, 1, split
    config.blockDimX, config.blockDimY, config.blockDimZ = cfg.threads, 1, 1
    config.sharedMemBytes = cfg.smem_bytes
    attrs = _launch_attributes((1, 1, split), False)
    config.attrs, config.numAttrs = attrs, len(attrs)
    err, n = driver.cuOccupancyMaxActiveClusters(function.handle, config)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters: {err}")
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("points", nargs="+")
    parser.add_argument("--splits", default="2,3,4,5,6,8")
    args = parser.parse_args()
    torch.zeros(1, device="cuda")  # the primary context, current
    device = CudaDevice()
    for text in args.points:
        point = Point.parse(text)
        routed = device.candidates(point.spec, point.problem)[0]
        for split in (int(s) for s in args.splits.split(",")):
            # one cluster of all the splits (the routed config may take smaller clusters)
            fields = {"split_k": split, "rs_cluster_split": True, "rs_cluster_ctas": 0}
            cfg = with_fields(routed, fields)
            kernel = device.load(device.compile(device.render(point.spec, cfg)))
            function = kernel.function
            alone = function.resident_ctas(cfg.threads, cfg.smem_bytes)
            clusters = max_clusters(function, cfg, split)
            print(
                f"{text:30s} bn{cfg.block_n} bm{cfg.block_m} ctas/SM {cfg.rs_ctas_per_sm} split {split}: "
                f"{clusters} clusters = {clusters * split} CTAs at once (without clusters {alone})",
                flush=True,
            )


if __name__ == "__main__":
    main()
