"""W4A8-wgmma conformance on an sm_90a GPU against humming_core.numerics.reference_gemm.

These tests are the family's hardware verification (first passed on an H200 on 2026-11-29, which
made it a default family). Each case checks (1) |out - ref| within
w8a8_cases.error_bound, (2) no write outside the [M, N] output view, (3) no NaN (x columns after
K are NaN: a read past K would reach the output). Both ring depths run on the largest-K shape; the
device routes W4A8-fp8 above decode size here (M <= 16 stays w8a8, one packed copy
serves both); a call replays correctly from a CUDA graph. The heuristics split K on these small
grids and take 32- / 64-token tiles up to M = 64 (tests/test_w4a8_wgmma.py); split-K runs 2, 3 and
5 splits of uneven K ranges twice in a row (the tile counters must be back at zero), and as
clusters and summed by all splits at once (both bit for bit the workspace form's output). Staged output
rows (2-byte outputs through shared memory and bulk copies, the out^T form) run on every token
tile, unsplit and split, into 16-byte aligned rows (the staged path), misaligned ones (the register
stores it falls back to) and N tails of 6 columns; so do the large-M 160- and 176-token tiles,
whose staged rows past a warpgroup's 128 threads take a second copy per thread. Issue turns (the
two consumer warpgroups issuing their blocks alternately, `issue_turns`) run on every case,
unsplit and split.
"""

from __future__ import annotations

import pytest
import torch
from w4a8_wgmma_cases import split_cases, staged_tail_cases, wgmma_cases
from w8a8_cases import Case
from w8a8_wgmma_cases import SHAPES, SPLITS
from wgmma_conformance import (
    check_act8_case,
    check_cluster_split_case,
    check_routed_graph_replay,
    check_scatter_split_case,
    check_user_api_switch,
    ring_kernels,
    sm90_device,
    split_kernel,
    unsplit_kernels,
)
from wgmma_conformance import variant_kernels as shared_variant_kernels

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = wgmma_cases()
# the largest-K shape of each format (16 K blocks: both rings wrap) also runs the 6-stage config
DEEP = [c for c in CASES if (c.m, c.n, c.k) == SHAPES[-1]]
SPLIT_CASES = split_cases()
STAGED_CASES = CASES + staged_tail_cases()


@pytest.fixture(autouse=True)
def verified_families_only(monkeypatch):
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)


@pytest.fixture(scope="module")
def device():
    return sm90_device("w4a8_wgmma")


@pytest.fixture(scope="module")
def kernels(device):
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    return ring_kernels(device, FAMILY, CASES, DEEP)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    check_act8_case(case, device, *kernels[(case.id, 0)])


@pytest.mark.parametrize("case", DEEP, ids=lambda c: c.id)
def test_deeper_ring_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, 1)]
    assert config.stages == 6
    check_act8_case(case, device, config, kernel)


@pytest.fixture(scope="module")
def shared_memory_kernels(device):
    """The shared-memory form (weights_in_registers off, 128-token tiles): every case with the
    heuristic's config so changed."""
    shared = {
        "weights_in_registers": False,
        "rs_block_m": 128,
        "rs_ctas_per_sm": 1,
        "staged_store": False,
    }
    return variant_kernels(device, CASES, shared)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_shared_memory_form_matches_reference(case: Case, device, shared_memory_kernels):
    config, kernel = shared_memory_kernels[case.id]
    assert not config.weights_in_registers
    check_act8_case(case, device, config, kernel)


def test_device_routes_w4a8_here_and_replays_in_a_graph(device):
    check_routed_graph_replay(device, "W4A8_FP8", "w4a8_wgmma")


def test_user_api_switches_families_per_m_on_one_packed_copy(device):
    # w4a8_wgmma from M = 17 (session 23); this small layer's M = 9-16 bucket runs w8a8
    check_user_api_switch(device, "W4A8_FP8", "w4a8_wgmma")


@pytest.fixture(scope="module")
def unsplit(device):
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    return unsplit_kernels(device, FAMILY, SPLIT_CASES)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_split_k_matches_reference_twice_in_a_row(case: Case, device, unsplit):
    """Unsplit, then each split count twice: a tile counter left non-zero would keep the second
    launch's last split from knowing it is last, leaving out unwritten (poisoned)."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    check_act8_case(case, device, *unsplit[case.id])
    for split in SPLITS:
        config, kernel = split_kernel(device, FAMILY, case, unsplit[case.id], split)
        check_act8_case(case, device, config, kernel)
        check_act8_case(case, device, config, kernel)


@pytest.fixture(scope="module")
def cluster(device):
    """SPLIT_CASES' first candidates in the cluster split-K form (the split count is a launch
    parameter: one module per case)."""
    update = {"split_k": 2, "cluster_split": True, "staged_store": False}
    return variant_kernels(device, SPLIT_CASES, update)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_cluster_split_k_matches_reference_and_the_workspace_form(case, device, unsplit, cluster):
    """SPLITS as clusters (each CTA sums and stores a share of the tile's tokens over distributed
    shared memory): within the bound, and the workspace form's output bit for bit."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    check_cluster_split_case(FAMILY, case, device, cluster[case.id], unsplit[case.id], SPLITS)


@pytest.fixture(scope="module")
def scatter(device):
    """SPLIT_CASES' first candidates with split-K summed by all splits at once (split_scatter)."""
    update = {"split_k": 2, "split_scatter": True, "cluster_split": False, "staged_store": False}
    return variant_kernels(device, SPLIT_CASES, update)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_split_scatter_matches_reference_and_the_workspace_form(case, device, unsplit, scatter):
    """SPLITS summed by all splits at once (each sums and stores a share of the tile's tokens
    once every split has stored its partial): within the bound twice in a row, and the
    workspace form's output bit for bit."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    check_scatter_split_case(FAMILY, case, device, scatter[case.id], unsplit[case.id], SPLITS)


def variant_kernels(device, cases: list[Case], update: dict) -> dict:
    """Each case's first candidate with `update` applied, by case id."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    return shared_variant_kernels(device, FAMILY, cases, update)


@pytest.fixture(scope="module")
def staged_kernels(device):
    """Every staged case's first candidate with staged output rows."""
    return variant_kernels(device, STAGED_CASES + SPLIT_CASES, {"staged_store": True})


@pytest.mark.parametrize("case", STAGED_CASES, ids=lambda c: c.id)
def test_staged_rows_match_reference(case: Case, device, staged_kernels):
    """guarded_call's poison catches a copy past N or M."""
    config, kernel = staged_kernels[case.id]
    assert config.staged_store and config.weights_in_registers
    for aligned in (True, False):
        check_act8_case(case, device, config, kernel, aligned)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_staged_rows_after_split_k_match_reference(case: Case, device, staged_kernels):
    """The last split of each tile stores the summed tile through the staged rows."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    config, kernel = split_kernel(device, FAMILY, case, staged_kernels[case.id], 3)
    assert config.staged_store
    check_act8_case(case, device, config, kernel, aligned=True)


@pytest.fixture(scope="module")
def turn_kernels(device):
    """Every case's first candidate with its consumers issuing in turns."""
    return variant_kernels(device, CASES + SPLIT_CASES, {"issue_turns": True})


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_issue_turns_match_reference(case: Case, device, turn_kernels):
    """A turn never passed (or passed twice) hangs the kernel or lets a warpgroup run ahead into a
    stage the other still reads; the largest-K shape wraps the ring four times."""
    config, kernel = turn_kernels[case.id]
    assert config.issue_turns and config.weights_in_registers
    check_act8_case(case, device, config, kernel)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_issue_turns_after_split_k_match_reference(case: Case, device, turn_kernels):
    """Uneven splits: each split's pair takes turns over its own block count."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    for split in SPLITS:
        config, kernel = split_kernel(device, FAMILY, case, turn_kernels[case.id], split)
        assert config.issue_turns
        check_act8_case(case, device, config, kernel)


WIDE_TOKENS = (160, 176)


@pytest.fixture(scope="module")
def wide_kernels(device):
    """(config, kernel) by (case id, tokens): every staged and split case's first candidate on the
    wide token tiles with staged rows, unsplit, 4 stages (the depth both widths fit with their
    rows; 6 fit at 160 tokens only)."""
    built = {}
    for tokens in WIDE_TOKENS:
        update = {
            "rs_block_m": tokens,
            "rs_ctas_per_sm": 1,
            "staged_store": True,
            "stages": 4,
            "split_k": 1,
        }
        for cid, b in variant_kernels(device, STAGED_CASES + SPLIT_CASES, update).items():
            built[(cid, tokens)] = b
    return built


@pytest.mark.parametrize("tokens", WIDE_TOKENS)
@pytest.mark.parametrize("case", STAGED_CASES, ids=lambda c: c.id)
def test_wide_token_tiles_match_reference(case: Case, tokens: int, device, wide_kernels):
    """Staged rows (aligned: bulk copies of up to 176 token rows per warpgroup) and the register
    stores (misaligned); M = 300 and 1030 end on partial wide tiles."""
    config, kernel = wide_kernels[(case.id, tokens)]
    assert config.rs_block_m == tokens and config.split_k == 1
    for aligned in (True, False):
        check_act8_case(case, device, config, kernel, aligned)


@pytest.mark.parametrize("tokens", WIDE_TOKENS)
@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_wide_token_tiles_after_split_k_match_reference(
    case: Case, tokens: int, device, wide_kernels
):
    """The reduction of 80 / 88 accumulators per thread, uneven splits, twice in a row."""
    from humming_cuda.kernels.w4a8_wgmma import FAMILY

    for split in SPLITS:
        config, kernel = split_kernel(device, FAMILY, case, wide_kernels[(case.id, tokens)], split)
        check_act8_case(case, device, config, kernel, aligned=True)
        check_act8_case(case, device, config, kernel, aligned=True)
