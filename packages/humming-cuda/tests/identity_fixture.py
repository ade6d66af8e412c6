"""Byte-identity fixtures: a family's NVIDIA sources and cubins pinned by sha256 per case.

A `<family>_identity_cases.py` module lists its cases (case id, spec, config) and the fixture path;
this module hashes them, writes the fixture and compares against it. Cubins are only comparable
under the NVRTC version that wrote the table; rendered sources are compared everywhere.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels import KernelFamily

Case = tuple[str, object, object]  # (case id, spec, config)


def case_hashes(family: KernelFamily, spec, cfg) -> dict[str, str]:
    """sha256 of the rendered source and of the cubin NVRTC makes from it."""
    from humming_cuda.compiler import compile_source

    source = family.render(spec, cfg, caps_for_arch(cfg.arch))
    artifact = compile_source(source)
    return {
        "source": hashlib.sha256(source.code.encode()).hexdigest(),
        "cubin": hashlib.sha256(artifact.binary).hexdigest(),
    }


def nvrtc_version() -> str:
    """Cubins are only comparable between identical NVRTC versions."""
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def _all_hashes(family: KernelFamily, cases: list[Case]) -> list[dict[str, str]]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda c: case_hashes(family, c[1], c[2]), cases))


def write_fixture(path: Path, family: KernelFamily, cases: list[Case]) -> None:
    """Record every case's hashes with the NVRTC version that made them."""
    hashes = _all_hashes(family, cases)
    table = {cid: h for (cid, _, _), h in zip(cases, hashes, strict=True)}
    data = {"nvrtc": nvrtc_version(), "cases": table}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(table)} cases to {path}")


def assert_unchanged(path: Path, family: KernelFamily, cases: list[Case], what: str) -> None:
    """Fail, naming the first cases, when any hash differs from the fixture at `path` (whose case
    ids must be exactly those of `cases`); `what` names the kernels in the message (e.g. "W8A8")."""
    recorded = json.loads(path.read_text())
    expected = recorded["cases"]
    # Rendered sources must match everywhere; cubins only under the NVRTC that made the table.
    keys = ("source", "cubin") if recorded["nvrtc"] == nvrtc_version() else ("source",)
    assert sorted(cid for cid, _, _ in cases) == sorted(expected), "case matrix changed"
    got = _all_hashes(family, cases)
    changed = [
        cid
        for (cid, _, _), h in zip(cases, got, strict=True)
        if any(h[key] != expected[cid][key] for key in keys)
    ]
    assert not changed, (
        f"{len(changed)} of {len(cases)} NVIDIA {what} kernels changed (first: {changed[:5]}): "
        "the NVIDIA path must stay byte-identical to the H200-verified code; keep dialect changes "
        "behind HUMMING_DIALECT != 0"
    )
