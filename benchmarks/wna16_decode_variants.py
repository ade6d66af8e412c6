"""Time several WnA16 tile configs of the same decode-sized layer side by side (H200 tuning aid).

Every variant runs on the same packed weights (the WnA16 layout does not depend on the config), is
checked against the heuristic's kernel (relative L2 error) and timed by CUDA-graph replay over
rotated weight copies (humming_cuda.bench.timing). Also prints the occupancy the driver grants each
variant. `--ncu N K M CFG_JSON` instead launches one variant a few times eagerly, for ncu.

    python3 benchmarks/wna16_decode_variants.py --out $OUT/variants.json
    ncu ... python3 benchmarks/wna16_decode_variants.py --ncu 57344 8192 16 '{"warps_k": 4}'
"""

from __future__ import annotations

import argparse
import copy
import json
from concurrent.futures import ThreadPoolExecutor

import torch
from cuda.bindings import driver

from humming_core.device import GemmProblem
from humming_core.ops import PreparedGemm
from humming_core.spec import preset
from humming_cuda.bench.dense import _random_canonical, roof_us
from humming_cuda.bench.timing import copies_for, graph_time_us
from humming_cuda.caps import caps_for_arch
from humming_cuda.compiler import compile_source
from humming_cuda.kernels.wna16 import FAMILY, Wna16Config, Wna16Kernel
from humming_cuda.kernels.wna16.heuristics import pick_split_k
from humming_cuda.loader import load

SPEC = "W4A16_G128"
# (N, K, M) points: the two big layers and the small one of KERNELS.md, decode sizes.
POINTS = ((57344, 8192, 1), (57344, 8192, 16), (8192, 28672, 16), (6144, 4096, 1))
MS = (1, 16)
# Tile variants for M <= 16 (m_frags=1); split-K is swept per layer on top of each.
TILES = (
    {"warps_n": 1, "warps_k": 4, "k_steps": 2, "stages": 4},  # the committed heuristic
    {"warps_n": 1, "warps_k": 4, "k_steps": 2, "stages": 6},
    {"warps_n": 1, "warps_k": 4, "k_steps": 2, "stages": 8},
    {"warps_n": 1, "warps_k": 4, "k_steps": 4, "stages": 3},
    {"warps_n": 1, "warps_k": 4, "k_steps": 4, "stages": 4},
    {"warps_n": 1, "warps_k": 4, "k_steps": 4, "stages": 6},
    {"warps_n": 1, "warps_k": 8, "k_steps": 1, "stages": 4},
    {"warps_n": 1, "warps_k": 8, "k_steps": 2, "stages": 4},
    {"warps_n": 2, "warps_k": 4, "k_steps": 2, "stages": 4},
    {"warps_n": 2, "warps_k": 2, "k_steps": 2, "stages": 6},
    {"warps_n": 1, "warps_k": 2, "k_steps": 4, "stages": 6},
    {"warps_n": 1, "warps_k": 2, "k_steps": 2, "stages": 8},
    {"warps_n": 2, "warps_k": 4, "k_steps": 4, "stages": 3},
)
SPLITS = (1, 2, 4, 8)


def _kernel(spec, cfg: Wna16Config, caps, carveout: int | None = None) -> Wna16Kernel:
    fn = load(compile_source(FAMILY.render(spec, cfg, caps)))
    if carveout is not None:
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        (err,) = driver.cuFuncSetAttribute(fn.handle, attr, carveout)
        assert err == driver.CUresult.CUDA_SUCCESS, err
    return Wna16Kernel(fn, spec, cfg)


def _occupancy(kern: Wna16Kernel) -> int:
    err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        kern.function.handle, kern.config.threads, kern.smem
    )
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return blocks


def _layer(spec, n: int, k: int, copies: int):
    dev = torch.device("cuda")
    layer = PreparedGemm(_random_canonical(spec, n, k, dev), buckets=MS)
    packs = [layer.packed]
    for _ in range(copies - 1):
        packs.append({name: t.clone() for name, t in layer.packed.items()})
    return layer, packs


def _splits(n: int, k: int, m: int, cfg: Wna16Config, caps) -> list[int]:
    iters = -(-k // cfg.block_k)
    heur = pick_split_k(GemmProblem(n=n, k=k, m=m), cfg, caps)
    return sorted({heur, *(s for s in SPLITS if s <= max(1, iters // 2))}), heur


def _time(kern, x, out, packs, calls: int) -> float:
    return graph_time_us(lambda i: kern(x=x, out=out, **packs[i % len(packs)]), calls)


def sweep(out_path: str | None) -> None:
    torch.zeros(1, device="cuda")  # make torch's context current on this thread (occupancy query)
    spec = preset(SPEC)
    caps = caps_for_arch("sm_90a")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    cfgs = [Wna16Config(arch="sm_90a", m_frags=1, **t) for t in TILES]
    with ThreadPoolExecutor(16) as pool:  # compile in parallel, load on this thread
        list(pool.map(lambda c: compile_source(FAMILY.render(spec, c, caps)), cfgs))
    kernels = [_kernel(spec, c, caps) for c in cfgs]
    carve = _kernel(spec, cfgs[0], caps, carveout=100)
    for c, kern in zip(cfgs, kernels, strict=True):
        print(
            f"occupancy {_occupancy(kern)} CTAs/SM regs {kern.function.attributes['registers']} "
            f"smem {kern.smem} {c.model_dump(exclude={'family', 'arch', 'm_frags', 'split_k'})}"
        )
    print(f"occupancy with carveout=100: {_occupancy(carve)}")
    rows = []
    for n, k in dict.fromkeys((n, k) for n, k, _ in POINTS):
        copies = copies_for(spec.weight_bytes(n, k), l2)
        layer, packs = _layer(spec, n, k, copies)
        for m in (m for n2, k2, m in POINTS if (n2, k2) == (n, k)):
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            ref = torch.empty(m, n, device="cuda", dtype=torch.float16)
            layer.run(x, out=ref)
            out = torch.empty_like(ref)
            calls = max(2 * copies, 8)
            roof = roof_us(spec, n, k, m)
            variants = [
                (ci, kern, s)
                for ci, kern in enumerate(kernels)
                for s in _splits(n, k, m, cfgs[ci], caps)[0]
            ]
            variants.append((-1, carve, _splits(n, k, m, cfgs[0], caps)[1]))
            for ci, base_kern, split in variants:
                kern = copy.copy(base_kern)
                kern.config = base_kern.config.model_copy(update={"split_k": split})
                out.fill_(float("nan"))
                kern(x=x, out=out, **packs[0])
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                us = _time(kern, x, out, packs, calls)
                heur = split == _splits(n, k, m, cfgs[max(ci, 0)], caps)[1]
                rows.append(
                    {
                        "N": n,
                        "K": k,
                        "M": m,
                        "tile": ci,
                        "split": split,
                        "us": round(us, 2),
                        "roof_pct": round(100 * roof / us, 1),
                        "err": err,
                        "heur_split": heur,
                    }
                )
            _print_best(rows, n, k, m, roof)
        del layer, packs
        torch.cuda.empty_cache()
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"tiles": TILES, "rows": rows}, f, indent=1)


def _print_best(rows, n, k, m, roof) -> None:
    mine = [r for r in rows if (r["N"], r["K"], r["M"]) == (n, k, m)]
    bad = [r for r in mine if not r["err"] < 2e-3]
    base = next(r for r in mine if r["tile"] == 0 and r["heur_split"])
    carve = next(r for r in mine if r["tile"] == -1)
    print(
        f"== {n}x{k} M={m} roof {roof:.1f}us base {base['us']}us ({base['roof_pct']}%) "
        f"carveout100 {carve['us']}us; wrong: {[(r['tile'], r['split'], r['err']) for r in bad]}"
    )
    for r in sorted(mine, key=lambda r: r["us"])[:8]:
        print(
            f"   tile {r['tile']:2d} split {r['split']:2d}: {r['us']:8.2f}us {r['roof_pct']:5.1f}%"
        )


def ncu_target(n: int, k: int, m: int, tile: dict) -> None:
    spec = preset(SPEC)
    caps = caps_for_arch("sm_90a")
    cfg = Wna16Config(arch="sm_90a", m_frags=1, **tile)
    kern = _kernel(spec, cfg, caps)
    _layer_keepalive, packs = _layer(spec, n, k, 1)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    out = torch.empty(m, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        kern(x=x, out=out, **packs[0])
    torch.cuda.synchronize()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--ncu", nargs=4, default=None, metavar=("N", "K", "M", "CFG_JSON"))
    a = p.parse_args()
    if a.ncu:
        ncu_target(int(a.ncu[0]), int(a.ncu[1]), int(a.ncu[2]), json.loads(a.ncu[3]))
    else:
        sweep(a.out)
