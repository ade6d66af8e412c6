"""The default (NVIDIA) WnA16 code generation is byte-identical to what was verified on the H200.

The PPU dialect lives in the same headers behind `HUMMING_DIALECT`; this pins every NVIDIA source
and cubin (sha256, deterministic run to run) of a matrix of formats x tiles x arch to the table
recorded before the dialect was added (wna16_identity_cases.py explains how it was made).
"""

from __future__ import annotations

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
from identity_fixture import assert_unchanged
from wna16_identity_cases import FAMILY, FIXTURE, identity_cases


@pytest.mark.compile
@pytest.mark.timeout(900)
def test_nvidia_wna16_source_and_cubin_unchanged():
    assert_unchanged(FIXTURE, FAMILY, identity_cases(), "WnA16")
