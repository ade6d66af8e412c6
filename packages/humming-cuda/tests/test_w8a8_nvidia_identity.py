"""The default (NVIDIA) W8A8 / W4A8 code generation is byte-identical to what was verified on the H200.

The PPU dialects live in the same headers behind `HUMMING_DIALECT`; this pins every NVIDIA source
and cubin (sha256, deterministic run to run) of a matrix of formats x heuristic tiles x arch to the
table recorded before the dialect was added (w8a8_identity_cases.py explains how it was made).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from w8a8_identity_cases import FIXTURE, case_hashes, identity_cases, nvrtc_version


@pytest.mark.compile
@pytest.mark.timeout(600)
def test_nvidia_w8a8_source_and_cubin_unchanged():
    recorded = json.loads(FIXTURE.read_text())
    expected = recorded["cases"]
    # Rendered sources must match everywhere; cubins only under the NVRTC that made the table.
    keys = ("source", "cubin") if recorded["nvrtc"] == nvrtc_version() else ("source",)
    cases = identity_cases()
    assert sorted(cid for cid, _, _ in cases) == sorted(expected), "case matrix changed"
    with ThreadPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(lambda c: case_hashes(c[1], c[2]), cases))
    changed = [
        cid
        for (cid, _, _), h in zip(cases, got, strict=True)
        if any(h[key] != expected[cid][key] for key in keys)
    ]
    assert not changed, (
        f"{len(changed)} of {len(cases)} NVIDIA W8A8 kernels changed (first: {changed[:5]}): the "
        "NVIDIA path must stay byte-identical to the H200-verified code; keep dialect changes "
        "behind HUMMING_DIALECT != 0"
    )
