"""A few representative kernels through the user API, for compute-sanitizer on the GPU host.

    compute-sanitizer --tool memcheck --report-api-errors no python3 scripts/sanitize_kernels.py
    compute-sanitizer --tool racecheck python3 scripts/sanitize_kernels.py [CASE ...]

CASE: indices into CASES and then FORCED (configs not routed yet, run through their family), to
run only those (with HUMMING_LINEINFO=1 a report names source lines).

Covers split-K (M=1, long K; wna16 and w8a8), N/M/K tails, integer zero points, float zero points,
MX scales and bf16, and the sm_90a wgmma kernels (wna16_wgmma on grids large enough to be chosen,
in both forms and the register form's narrow small-M tiles with split-K, w8a8_wgmma with its
activation quantizer, FP8 block-128's factors staged by a producer warp (in the mma.sync kernel:
copied with each stage), w4a8_wgmma (also its 160- / 176-token tiles), both with staged output
rows from M = 65, a persistent
CTA's rows rewritten over ~9 tiles); the per-token quantizer on rows longer than it keeps in shared memory; the M <= 8 WnA16 cases run the
wna16_decode kernels (split-K included at M=1), M = 9-16 with 4-bit codes wna16's, every larger M
wna16_wgmma (its register form's 16-128-row tiles with split-K where the grid is small, two CTAs
per SM for 16 and 32 rows where they finish first).
Each result is checked against the reference so a silent corruption also fails.
"""

from __future__ import annotations

import sys

import torch

from humming_core.numerics import quantize_weight
from humming_core.ops import prepare
from humming_core.spec import preset
from humming_core.testing.conformance import within_bound

CASES = [  # (preset, act dtype, M, N, K)
    ("W4A16_G128", "fp16", 1, 320, 4096),
    ("GPTQ_INT4", "fp16", 7, 200, 384),
    ("MXFP4", "bf16", 33, 136, 512),
    ("W8A16", "bf16", 100, 72, 264),
    ("GGUF_Q4_K", "fp16", 17, 96, 256),
    ("W4A16_G128", "fp16", 300, 3968, 256),
    ("W8A16", "bf16", 1030, 4100, 320),  # wna16_wgmma's register-A form (2 waves against 3)
    ("W8A8_FP8", "bf16", 200, 264, 384),
    ("W4A8_FP8", "bf16", 200, 264, 384),
    ("W8A8_FP8", "bf16", 1, 520, 4096),  # w8a8 split-K
    ("W4A16_G128", "bf16", 16, 200, 1024),  # 16 tokens: wna16 just above the decode family
    ("W8A16", "fp16", 12, 520, 4096),  # wna16_wgmma's 16-row register tile, K split 8 ways
    ("W4A16_G128", "bf16", 40, 1000, 2048),  # its 64-row tile, an N tail, K split 4 ways
    ("W4A16_G128", "bf16", 130, 1000, 3000),  # three 64-row tiles (an M tail), K split 5 ways
    ("W4A16_G128", "fp16", 130, 8192, 4096),  # two 128-row tiles (an M tail), K split 2 ways
    ("W4A16_G128", "fp16", 20, 36864, 1024),  # its 32-row tile at two CTAs per SM (144 tiles)
    ("FP8_BLOCK128", "bf16", 200, 264, 384),  # w8a8_wgmma: a producer warp stages block factors
    ("W8A8_FP8", "bf16", 3, 136, 17408),  # per-token rows longer than the quantizer keeps
    ("W8A8_FP8", "bf16", 1030, 16904, 256),  # persistent CTAs' staged rows reused tile after tile
    ("FP8_BLOCK128", "fp16", 9, 264, 1008),  # w8a8 (mma.sync): stage-copied factors, split K
]
# Configs the heuristic does not route yet, run through their family (indices after CASES):
# (preset, act dtype, M, N, K, family, config fields over the family's first candidate)
FORCED = [
    # persistent stream-K: 2 tiles of 128 K steps over 132 CTAs, 66 partial segments each
    ("W4A16_G128", "fp16", 17, 264, 8192, "wna16_wgmma", {"rs_stream_k": True, "split_k": 1,
     "rs_ctas_per_sm": 1, "rs_block_m": 64, "stages": 4}),
    # stream-K on 128-row tiles: whole and partial tiles, M / N / K tails, MX scales
    ("MXFP4", "bf16", 300, 520, 2056, "wna16_wgmma", {"rs_stream_k": True, "split_k": 1,
     "rs_ctas_per_sm": 1, "rs_block_m": 128, "stages": 4}),
    # a 176-row token tile, K split 3 ways (the reduction's 4-float4 batches)
    ("W4A16_G128", "bf16", 200, 136, 1040, "wna16_wgmma", {"split_k": 3, "rs_ctas_per_sm": 1,
     "rs_block_m": 176, "stages": 4}),
    # W4A8 176-token tiles with staged rows: threads 0-47 of each consumer warpgroup also copy
    # rows 128-175 of the first tile (an M tail of 124 rows next)
    ("W4A8_FP8", "bf16", 300, 264, 1040, "w4a8_wgmma", {"split_k": 1, "rs_ctas_per_sm": 1,
     "rs_block_m": 176, "stages": 4, "staged_store": True}),
    # a 160-token W4A8 tile, K split 3 ways (the 80-accumulator reduction)
    ("W4A8_FP8", "bf16", 200, 136, 1040, "w4a8_wgmma", {"split_k": 3, "rs_ctas_per_sm": 1,
     "rs_block_m": 160, "stages": 4, "staged_store": True}),
    # the 128-token W4A8 tile over 9 K blocks: every ring stage refilled after its release
    ("W4A8_FP8", "bf16", 300, 264, 1040, "w4a8_wgmma", {"split_k": 1, "rs_ctas_per_sm": 1,
     "rs_block_m": 128, "stages": 4, "staged_store": True}),
    # the 96-row WnA16 token tile (m64n96k16): three tiles (an M tail of 8 rows), K split 2 ways,
    # 17 K steps refilling a 4-stage ring
    ("W4A16_G128", "bf16", 200, 520, 1040, "wna16_wgmma", {"split_k": 2, "rs_ctas_per_sm": 1,
     "rs_block_m": 96, "stages": 4}),
    # stream-K on 96-row tiles: 9 tiles of 33 K steps over 132 CTAs, partial segments summed
    ("W4A16_G128", "fp16", 200, 520, 2056, "wna16_wgmma", {"rs_stream_k": True, "split_k": 1,
     "rs_ctas_per_sm": 1, "rs_block_m": 96, "stages": 4}),
    # the 128-column tile (one consumer warpgroup) at two CTAs per SM: 64-row tiles, an M tail,
    # an N tail past the tile's first layout column (N = 1000), K split 3 ways
    ("W4A16_G128", "bf16", 100, 1000, 2056, "wna16_wgmma", {"split_k": 3, "rs_ctas_per_sm": 2,
     "rs_block_n": 128, "rs_block_m": 64, "stages": 4}),
    # stream-K over 128-column, 128-row tiles, two persistent CTAs per SM, MX scales
    ("MXFP4", "bf16", 300, 520, 2056, "wna16_wgmma", {"rs_stream_k": True, "split_k": 1,
     "rs_ctas_per_sm": 2, "rs_block_n": 128, "rs_block_m": 128, "stages": 3}),
]  # fmt: skip


def forced_out(spec, cw, x: torch.Tensor, n: int, family: str, fields: dict) -> torch.Tensor:
    """x @ W^T (W: cw, n rows) by `family`'s first candidate with `fields` changed, compiled and
    called directly."""
    from humming_core.device import GemmProblem
    from humming_cuda.device import CudaDevice
    from humming_cuda.kernels import family_named

    device = CudaDevice()
    m, k = x.shape
    problem = GemmProblem(n, k, m=m, act_dtype=spec.act.dtype.name)
    first = family_named(family).candidates(spec, problem, device.caps())[0]
    config = type(first).model_validate(
        {**first.model_dump(), "weights_in_registers": True, **fields}
    )
    kernel = device.load(device.compile(device.render(spec, config)))
    weights = device.weight_layout(spec, config).pack(cw, "cuda")
    out = torch.empty(m, n, dtype=x.dtype, device="cuda")
    kernel(x=x, out=out, **weights)
    return out


def main(picked: list[str]) -> int:
    failures = 0
    every = [(*c, None, None) for c in CASES] + FORCED
    for name, act, m, n, k, family, fields in [every[int(i)] for i in picked] if picked else every:
        spec = preset(name)
        if not spec.act.is_quantized:  # 8-bit activations are quantized from x's dtype, `act`
            spec = spec.replace(act={"dtype": act})
        gen = torch.Generator().manual_seed(m * n + k)
        cw = quantize_weight(torch.randn(n, k, generator=gen) * 0.05, spec)
        x = torch.randn(m, k, generator=gen).to(
            getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[act])
        )
        if family is None:
            out = prepare(cw, "cuda").run(x.cuda())
        else:
            out = forced_out(spec, cw, x.cuda(), n, family, fields)
        torch.cuda.synchronize()
        worst = within_bound(out, x, cw)
        print(f"{name:11s} {act} M={m:<4d} N={n:<4d} K={k:<5d} worst err/bound {worst:.3f}")
        failures += worst > 1.0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
