"""The indexed MoE WnA16 kernels through the user API, for compute-sanitizer on the GPU host.

    compute-sanitizer --tool racecheck python3 scripts/sanitize_moe.py [CASE ...]
    compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_moe.py

CASE: indices into CASES and then FORCED (tiles the heuristics do not route yet, forced through
them), to run only those (with HUMMING_LINEINFO=1 a report names source lines).
Covers moe_wna16's decode form (one or two 64-column warps per CTA, a K tail) and its dense K loop,
and moe_wna16_wgmma's 96- and 160-row blocks (the producer warpgroup's gathered rows arriving on the full
barriers by cp.async, padding rows, K tails; persistent CTAs walking several tiles, the ring, row
tables and staged output reused across them), and moe_wna16_a8 (8-bit activations: the quantizer,
then the decode form or moe_wna16_wgmma's e4m3 form, its code tables in shared memory). The layer's kernels are built for the M bucket, so the wgmma cases' 38
and 150 rows per expert both fall in buckets of 64 rows or more. Each result is compared with the reference
GEMM (humming_core.numerics.moe), so a silent corruption also fails: the error relative to the
output's largest value must stay within 2^-6, a coarse guard (the conformance tests hold the exact
bounds) that a race corrupting whole fragments exceeds.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext

import torch

from humming_core.numerics.moe import moe_align, reference_moe_gemm
from humming_core.numerics.quant import quantize_weight
from humming_core.ops import PreparedMoe, moe_bucket_of
from humming_core.spec import preset
from humming_cuda.kernels.moe_wna16_wgmma.heuristics import forced_tile

CASES = [  # (preset, experts, top_k, M, N, K): rows per expert pick the kernel
    ("W4A16_G128", 64, 2, 8, 256, 264),  # moe_wna16 decode, one warp column, K tail
    ("W4A16_G128", 128, 8, 40, 1024, 512),  # decode, two warp columns
    ("MXFP4", 16, 4, 60, 256, 384),  # the dense K loop's 16-row blocks
    ("W4A16_G128", 8, 2, 150, 320, 264),  # moe_wna16_wgmma, 96-row blocks mostly padding, K tail
    ("W8A16", 8, 4, 300, 256, 520),  # moe_wna16_wgmma, 128-row blocks (8-bit codes), K tail
    ("W4A16_G128", 8, 4, 2048, 1024, 136),  # 160-row blocks: CTAs walk tiles, K in 3 steps
    ("MXFP4_A8", 64, 2, 8, 256, 288),  # moe_wna16_a8: quantizer, decode form, K tail
    ("MXFP4_A8", 8, 4, 300, 256, 544),  # moe_wna16_a8: the e4m3 form, 128-row blocks, K tail
    ("MXFP4_A8", 32, 4, 250, 320, 512),  # the e4m3 form, 64-row blocks, an N tail
    ("MXFP4_A8", 64, 4, 100, 256, 512),  # the e4m3 form, 16-row blocks on two CTAs per SM
    ("MXFP4_A8", 16, 4, 60, 320, 528),  # 16-row blocks, K and N tails
]
# (case, block_m, config fields of every ring depth the heuristics would offer for it)
FORCED = [
    # moe_wna16_wgmma's 128-column tile, two persistent CTAs per SM: 64-row blocks of 100 rows per
    # expert (padding rows), an N tail (320: the last tile one layout column), a K tail
    (("W4A16_G128", 16, 4, 400, 320, 520), 64, {"block_n": 128, "ctas_per_sm": 2}),
]
GUARD = 2.0**-6


def run_case(
    name: str, experts: int, top_k: int, m: int, n: int, k: int, block_m=None, fields=None
) -> float:
    spec = preset(name).replace(layout="moe")
    gen = torch.Generator().manual_seed(m * n + k)
    cw = quantize_weight(torch.randn(experts, n, k, generator=gen) / k**0.5, spec).to("cuda")
    act = torch.float16 if spec.act.dtype.name == "fp16" else torch.bfloat16
    x = torch.randn(m, k, generator=gen).to(act).cuda()
    ids = torch.rand(m, experts, generator=gen).topk(top_k, dim=-1).indices.int().cuda()
    rows = m * top_k
    forcing = nullcontext() if block_m is None else forced_tile(block_m, **(fields or {}))
    with forcing:
        layer = PreparedMoe(cw, buckets=(moe_bucket_of(rows),))
    config = layer.config_for(rows)
    block = layer.block_size(rows)
    routing = moe_align(ids, block, experts)
    out = layer.run(x, *routing, top_k, block)
    torch.cuda.synchronize()
    ref = reference_moe_gemm(x, cw, *routing, top_k, block_size=block)
    err = float((out.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-6))
    tokens = getattr(config, "tokens", 0)
    form = f"{config.family}{' decode' if tokens else ''} block {block}"
    if fields:
        form += " " + " ".join(f"{key}={value}" for key, value in fields.items())
    print(
        f"{name:11s} E={experts:<3d} top{top_k} M={m:<4d} N={n:<5d} K={k:<4d} {form:28s} err {err:.2e}"
    )
    return err


def main(picked: list[str]) -> int:
    every = [(*c, None, None) for c in CASES] + [(*c, b, f) for c, b, f in FORCED]
    cases = [every[int(i)] for i in picked] if picked else every
    return 1 if sum(run_case(*case) > GUARD for case in cases) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
