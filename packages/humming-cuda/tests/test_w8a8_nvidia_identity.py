"""The default (NVIDIA) W8A8 / W4A8 code generation is byte-identical to what was verified on the H200.

The PPU dialects live in the same headers behind `HUMMING_DIALECT`; this pins every NVIDIA source
and cubin (sha256, deterministic run to run) of a matrix of formats x heuristic tiles x arch to the
table recorded before the dialect was added (w8a8_identity_cases.py explains how it was made).
"""

from __future__ import annotations

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from identity_fixture import assert_unchanged
from w8a8_identity_cases import FAMILY, FIXTURE, identity_cases


@pytest.mark.compile
@pytest.mark.timeout(600)
def test_nvidia_w8a8_source_and_cubin_unchanged():
    assert_unchanged(FIXTURE, FAMILY, identity_cases(), "W8A8")
