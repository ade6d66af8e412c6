"""Three calls of the MoE bench's layer at one M, for a profiler to look at (issue 8 tuning on the
GPU host).

    ncu --kernel-name regex:humming_moe_w --launch-skip 4 --launch-count 1 --set full \\
        python3 benchmarks/profile_moe.py W4A16_G128:8192

SPEC:M builds `humming bench --suite moe`'s layer (Qwen3-30B-A3B experts, one weight copy, the
bench's uniform routing for M tokens) and calls it three times eagerly: each call runs the
routing alignment, then w13 and w2 (two kernels whose names start `humming_moe_w`; the alignment's do not), so a profiler's
launch-skip 4 picks the third call's w13 and launch-skip 5 its w2. Prints the family and config
of each layer's M bucket.
"""

from __future__ import annotations

import argparse

import torch

from humming_core.spec import preset
from humming_cuda.bench.moe import TOPK, activations, humming_fn, layer_pairs, routings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("point", help="SPEC:M, e.g. W4A16_G128:8192")
    args = parser.parse_args()
    name, m = args.point.split(":")
    spec, m, dev = preset(name), int(m), torch.device("cuda")
    pairs = layer_pairs(spec, dev, 1, (m,))
    fn = humming_fn(pairs, activations(spec, m, dev), routings(m, 1, dev, seed=m))
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    for gemm, layer in zip(("w13", "w2"), pairs[0], strict=True):
        print(args.point, gemm, layer.config_for(m * TOPK))


if __name__ == "__main__":
    main()
