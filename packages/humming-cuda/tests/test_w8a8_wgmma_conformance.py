"""W8A8-wgmma conformance on an sm_90a GPU against humming_core.numerics.reference_gemm.

These tests are the family's hardware verification (first passed on an H200 on 2026-11-29). Each
case checks (1) |out - ref| within w8a8_cases.error_bound, (2) no
write outside the [M, N] output view, (3) no NaN (x columns after K are NaN: a read past K would
reach the output). Both ring depths the heuristics offer run; the device routes large-M fp8 to
this family; a call replays correctly from a CUDA graph (tensor maps are kernel
parameters captured by value).
"""

from __future__ import annotations

import pytest
import torch
from w8a8_cases import Case
from w8a8_wgmma_cases import SHAPES, wgmma_cases
from wgmma_conformance import (
    check_act8_case,
    check_routed_graph_replay,
    check_user_api_switch,
    ring_kernels,
    sm90_device,
)

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = wgmma_cases()
# the largest-K shape of each format (16 K blocks: both rings wrap) also runs the 6-stage config
DEEP = CASES[len(SHAPES) - 1 :: len(SHAPES)]


@pytest.fixture(scope="module")
def device():
    return sm90_device("w8a8_wgmma")


@pytest.fixture(scope="module")
def kernels(device):
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    return ring_kernels(device, FAMILY, CASES, DEEP)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    check_act8_case(case, device, *kernels[(case.id, 0)])


@pytest.mark.parametrize("case", DEEP, ids=lambda c: c.id)
def test_deeper_ring_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, 1)]
    assert config.stages == 6
    check_act8_case(case, device, config, kernel)


@pytest.mark.parametrize("name", ["W8A8_FP8", "FP8_BLOCK128"])
def test_device_routes_large_m_here_and_replays_in_a_graph(name, device):
    check_routed_graph_replay(device, name, "w8a8_wgmma")


def test_user_api_switches_families_per_m_on_one_packed_copy(device):
    """PreparedGemm: decode M runs the mma.sync w8a8 kernels, M > 16 these (M=40 in a 128-row tile
    that TMA fills with zero rows past M), same packed weights."""
    check_user_api_switch(device, "FP8_BLOCK128", "w8a8_wgmma")
