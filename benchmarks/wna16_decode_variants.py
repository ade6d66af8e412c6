"""Time several WnA16 tile configs of the same decode-sized layer side by side (H200 tuning aid).

Every variant runs on the same packed weights (the WnA16 layout does not depend on the config), is
checked against the heuristic's kernel (relative L2 error) and timed by CUDA-graph replay over
rotated weight copies (humming_cuda.bench.timing). Also prints the occupancy the driver grants each
variant. `--baseline-headers DIR` adds the heuristic's config built from another copy of the
include tree (e.g. the last commit's, `git archive HEAD <include dir>`), so an A/B of a kernel change
is measured in one run. `--ncu N K M CFG_JSON` instead launches one variant a few times eagerly.

    python3 benchmarks/wna16_decode_variants.py --out $OUT/variants.json [--baseline-headers DIR]
    ncu ... python3 benchmarks/wna16_decode_variants.py --ncu 57344 8192 16 '{"warps_k": 4}'
"""

from __future__ import annotations

import argparse
import copy
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from cuda.bindings import driver

from humming_core.device import GemmProblem
from humming_core.ops import PreparedGemm
from humming_core.spec import preset
from humming_cuda import compiler
from humming_cuda.bench.dense import _random_canonical, roof_us
from humming_cuda.bench.timing import copies_for, graph_time_us
from humming_cuda.caps import caps_for_arch
from humming_cuda.compiler import compile_source
from humming_cuda.kernels.wna16 import FAMILY, Wna16Config, Wna16Kernel
from humming_cuda.kernels.wna16.heuristics import pick_split_k
from humming_cuda.loader import load

SPEC = "W4A16_G128"
# (N, K, M) points: the two big layers and the small one of KERNELS.md, decode to mid-size M.
POINTS = (
    (57344, 8192, 1),
    (57344, 8192, 16),
    (57344, 8192, 64),
    (8192, 28672, 16),
    (8192, 28672, 32),
    (8192, 28672, 128),
    (6144, 4096, 1),
)
MS = (1, 16, 32, 64, 128)
# Tile variants (m_frags follows M: 16 rows per fragment, at most 4); split-K is swept on top.
TILES = (
    {"warps_n": 1, "warps_k": 4, "k_steps": 2, "stages": 4},
    {"warps_n": 1, "warps_k": 4, "k_steps": 4, "stages": 4},
    {"warps_n": 1, "warps_k": 8, "k_steps": 2, "stages": 4},
    {"warps_n": 2, "warps_k": 4, "k_steps": 2, "stages": 4},
    {"warps_n": 2, "warps_k": 4, "k_steps": 4, "stages": 3},
    {"warps_n": 2, "warps_k": 4, "k_steps": 4, "stages": 4},
    {"warps_n": 2, "warps_k": 2, "k_steps": 4, "stages": 4},
    {"warps_n": 4, "warps_k": 2, "k_steps": 2, "stages": 4},
    {"warps_n": 4, "warps_k": 1, "k_steps": 4, "stages": 4},
)
SPLITS = (1, 2, 4, 8)


# The committed heuristic's tile per M (before this change), for the --baseline-headers A/B.
BASELINE_TILES = {
    16: {"m_frags": 1, "warps_n": 1, "warps_k": 4, "k_steps": 2},
    32: {"m_frags": 2, "warps_n": 1, "warps_k": 4, "k_steps": 2},
    64: {"m_frags": 4, "warps_n": 2, "warps_k": 2, "k_steps": 2},
    4096: {"m_frags": 4, "warps_n": 4, "warps_k": 1, "k_steps": 4},
}


def _m_frags(m: int) -> int:
    return min(4, max(1, -(-m // 16)))


def _baseline_cfg(m: int) -> Wna16Config:
    tile = next(t for bound, t in BASELINE_TILES.items() if m <= bound)
    return Wna16Config(arch="sm_90a", stages=4, **tile)


def _compile(spec, cfg: Wna16Config, caps, headers: str | None = None):
    if headers is None:
        return compile_source(FAMILY.render(spec, cfg, caps))
    # The cache key hashes the included headers' contents, so the two trees never share an entry.
    saved = compiler.humming_include_root
    compiler.humming_include_root = lambda: Path(headers)
    try:
        return compile_source(FAMILY.render(spec, cfg, caps))
    finally:
        compiler.humming_include_root = saved


def _kernel(spec, cfg: Wna16Config, caps, headers: str | None = None) -> Wna16Kernel:
    return Wna16Kernel(load(_compile(spec, cfg, caps, headers)), spec, cfg)


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


def sweep(out_path: str | None, baseline_headers: str | None) -> None:
    torch.zeros(1, device="cuda")  # make torch's context current on this thread (occupancy query)
    spec = preset(SPEC)
    caps = caps_for_arch("sm_90a")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    frags = sorted({_m_frags(m) for _, _, m in POINTS})
    cfgs = {
        (f, ti): Wna16Config(arch="sm_90a", m_frags=f, **t)
        for f in frags
        for ti, t in enumerate(TILES)
    }
    cfgs = {key: c for key, c in cfgs.items() if _fits(spec, c, caps)}
    base_cfgs = {m: _baseline_cfg(m) for _, _, m in POINTS}
    jobs = [(c, None) for c in cfgs.values()]
    if baseline_headers:
        jobs += [(c, baseline_headers) for c in set(base_cfgs.values())]
    with ThreadPoolExecutor(16) as pool:  # compile in parallel, load on this thread
        list(pool.map(lambda job: _compile(spec, job[0], caps, job[1]), jobs))
    kernels = {key: _kernel(spec, c, caps) for key, c in cfgs.items()}
    for key, kern in kernels.items():
        print(
            f"mf{key[0]} tile {key[1]}: occupancy {_occupancy(kern)} CTAs/SM regs "
            f"{kern.function.attributes['registers']} smem {kern.smem}"
        )
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
                (f"t{ti}", kern, s)
                for (f, ti), kern in kernels.items()
                if f == _m_frags(m)
                for s in _splits(n, k, m, kern.config, caps)[0]
            ]
            heur = layer.config_for(m)
            variants.append(("heuristic", _unsplit_kernel(spec, heur, caps), heur.split_k))
            if baseline_headers:
                base = base_cfgs[m]
                variants.append(
                    (
                        "baseline",
                        _kernel(spec, base, caps, baseline_headers),
                        _splits(n, k, m, base, caps)[1],
                    )
                )
            for name, base_kern, split in variants:
                kern = copy.copy(base_kern)
                kern.config = base_kern.config.model_copy(update={"split_k": split})
                out.fill_(float("nan"))
                kern(x=x, out=out, **packs[0])
                err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                us = _time(kern, x, out, packs, calls)
                rows.append(
                    {
                        "N": n,
                        "K": k,
                        "M": m,
                        "tile": name,
                        "split": split,
                        "us": round(us, 2),
                        "roof_pct": round(100 * roof / us, 1),
                        "err": err,
                    }
                )
            _print_best(rows, n, k, m, roof)
        del layer, packs
        torch.cuda.empty_cache()
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"tiles": TILES, "rows": rows}, f, indent=1)


def _fits(spec, cfg: Wna16Config, caps) -> bool:
    from humming_cuda.kernels.wna16.config import KernelFormat

    return KernelFormat.from_spec(spec).smem_bytes(cfg) <= caps.smem_per_block


def _unsplit_kernel(spec, cfg: Wna16Config, caps) -> Wna16Kernel:
    return _kernel(spec, cfg.model_copy(update={"split_k": 1}), caps)


def _print_best(rows, n, k, m, roof) -> None:
    mine = [r for r in rows if (r["N"], r["K"], r["M"]) == (n, k, m)]
    bad = [r for r in mine if not r["err"] < 2e-3]
    named = {r["tile"]: r for r in mine if r["tile"] in ("heuristic", "baseline")}
    print(
        f"== {n}x{k} M={m} roof {roof:.1f}us "
        + " ".join(f"{t} {r['us']}us ({r['roof_pct']}%)" for t, r in named.items())
        + f"; wrong: {[(r['tile'], r['split'], r['err']) for r in bad]}"
    )
    for r in sorted(mine, key=lambda r: r["us"])[:6]:
        print(f"   {r['tile']:>9} split {r['split']:2d}: {r['us']:8.2f}us {r['roof_pct']:5.1f}%")


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
    p.add_argument("--baseline-headers", default=None, help="include root of the A/B baseline")
    p.add_argument("--ncu", nargs=4, default=None, metavar=("N", "K", "M", "CFG_JSON"))
    a = p.parse_args()
    if a.ncu:
        ncu_target(int(a.ncu[0]), int(a.ncu[1]), int(a.ncu[2]), json.loads(a.ncu[3]))
    else:
        sweep(a.out, a.baseline_headers)
