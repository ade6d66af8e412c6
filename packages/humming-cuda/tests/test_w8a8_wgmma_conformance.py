"""W8A8-wgmma conformance on an sm_90a GPU against humming_core.numerics.reference_gemm.

These tests are the family's hardware verification (first passed on an H200 on 2026-11-29). Each
case checks (1) |out - ref| within w8a8_cases.error_bound, (2) no
write outside the [M, N] output view, (3) no NaN (x columns after K are NaN: a read past K would
reach the output). Both ring depths the heuristics offer run; the device routes large-M fp8 to
this family; a call replays correctly from a CUDA graph (tensor maps are kernel
parameters captured by value). Split-K runs 2, 3 and 5 splits of uneven K ranges, twice in a row
(the tile counters must be back at zero) and from a CUDA graph (bit-identical: the partials are
summed in split order). The 64-row tile (two CTAs per SM, what M <= 64 runs on grids that fill the
SMs) runs the cases of up to 64 rows, unsplit and split. Staged output rows (2-byte outputs
through shared memory and bulk copies) run persistent and split, into 16-byte aligned rows (the
staged path), misaligned ones (the register stores it falls back to) and N tails of 6 columns
(both paths in one launch). Cluster split-K (the splits of a tile in one thread-block cluster)
runs the split cases' counts within the bound and bit for bit the workspace form's output.
"""

from __future__ import annotations

import pytest
import torch
from w8a8_cases import Case
from w8a8_wgmma_cases import SHAPES, SPLITS, split_cases, staged_tail_cases, wgmma_cases
from wgmma_conformance import (
    TORCH_DTYPES,
    WORKSPACE,
    act8_inputs,
    check_act8_case,
    check_cluster_split_case,
    check_routed_graph_replay,
    check_scatter_split_case,
    check_user_api_switch,
    replay_in_graph,
    ring_kernels,
    sm90_device,
    split_kernel,
    unsplit_kernels,
    variant_kernels,
)

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = wgmma_cases()
# the largest-K shape of each format (16 K blocks: both rings wrap) also runs the 6-stage config
DEEP = CASES[len(SHAPES) - 1 :: len(SHAPES)]
SPLIT_CASES = split_cases()
STAGED_CASES = CASES + staged_tail_cases()


@pytest.fixture(scope="module")
def device():
    return sm90_device("w8a8_wgmma")


@pytest.fixture(scope="module")
def kernels(device):
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    return ring_kernels(device, FAMILY, CASES, DEEP)


@pytest.fixture(scope="module")
def unsplit(device):
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    return unsplit_kernels(device, FAMILY, SPLIT_CASES)


def split_of(device, case: Case, unsplit, split: int):
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    return split_kernel(device, FAMILY, case, unsplit, split)


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


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_split_k_matches_reference_twice_in_a_row(case: Case, device, unsplit):
    """Unsplit, then each split count twice: a tile counter left non-zero would keep the second
    launch's last split from knowing it is last, leaving out unwritten (poisoned)."""
    check_act8_case(case, device, *unsplit[case.id])
    for split in SPLITS:
        config, kernel = split_of(device, case, unsplit[case.id], split)
        check_act8_case(case, device, config, kernel)
        check_act8_case(case, device, config, kernel)


@pytest.fixture(scope="module")
def cluster(device):
    """SPLIT_CASES' first candidates in the cluster split-K form (one module per case: the split
    count is a launch parameter): 64-row tiles for the cases of up to 64 rows, else 128."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    update = {"split_k": 2, "cluster_split": True, "persistent": False, "staged_store": False}
    return variant_kernels(device, FAMILY, SPLIT_CASES, update)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_cluster_split_k_matches_reference_and_the_workspace_form(case, device, unsplit, cluster):
    """SPLITS as clusters (each CTA sums and stores a share of the tile's columns over
    distributed shared memory): within the bound, and the workspace form's output bit for bit."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    check_cluster_split_case(FAMILY, case, device, cluster[case.id], unsplit[case.id], SPLITS)


@pytest.fixture(scope="module")
def scatter(device):
    """SPLIT_CASES' first candidates with split-K summed by all splits at once (split_scatter)."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    update = {
        "split_k": 2,
        "split_scatter": True,
        "cluster_split": False,
        "persistent": False,
        "staged_store": False,
    }
    return variant_kernels(device, FAMILY, SPLIT_CASES, update)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_split_scatter_matches_reference_and_the_workspace_form(case, device, unsplit, scatter):
    """SPLITS summed by all splits at once (each sums and stores a share of the tile's columns
    once every split has stored its partial): within the bound twice in a row (the counters back
    at zero), and the workspace form's output bit for bit."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    check_scatter_split_case(FAMILY, case, device, scatter[case.id], unsplit[case.id], SPLITS)


@pytest.mark.parametrize("m", [40, 100])
def test_split_k_replays_bit_identically_in_a_graph(m, device, unsplit):
    """FP8_BLOCK128's format (group-scaled activations, block-scaled weights) in 5 splits."""
    case = next(
        c
        for c in SPLIT_CASES
        if c.m == m
        and c.spec.act.granularity == "group"
        and c.spec.weight.scale.granularity == "block"
    )
    config, kernel = split_of(device, case, unsplit[case.id], 5)
    x, cw, scale = act8_inputs(case)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")
    if scale is not None:
        weights["act_scale"] = scale.cuda()
    x = x.cuda()
    out = torch.empty(case.m, case.n, dtype=TORCH_DTYPES[case.spec.output_dtype], device="cuda")
    kernel(x=x, out=out, **weights)
    eager = out.clone()
    replay_in_graph(kernel, x, out, weights)
    assert torch.equal(out, eager)


NARROW_CASES = [c for c in CASES + SPLIT_CASES if c.m <= 64]


@pytest.fixture(scope="module")
def narrow_kernels(device):
    """The 64-row tile at 4 stages, unsplit: the heuristic takes it at M <= 64 only on grids of at
    least a tile per SM, larger than these cases (H200, session 23: 90 conformance tests passed
    with it as the first candidate of every M <= 64 case, split ones included)."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    update = {"tile_rows": 64, "stages": 4, "split_k": 1, **WORKSPACE}
    return variant_kernels(device, FAMILY, NARROW_CASES, update)


@pytest.mark.parametrize("case", NARROW_CASES, ids=lambda c: c.id)
def test_64_row_tile_matches_reference_unsplit_and_split(case: Case, device, narrow_kernels):
    config, kernel = narrow_kernels[case.id]
    assert (config.tile_rows, config.ctas_per_sm) == (64, 2)
    check_act8_case(case, device, config, kernel)
    if case.k >= 5 * 128:  # the split cases' K: 5 splits of whole blocks
        config, kernel = split_of(device, case, narrow_kernels[case.id], 5)
        check_act8_case(case, device, config, kernel)
        check_act8_case(case, device, config, kernel)


@pytest.fixture(scope="module")
def persistent_kernels(device):
    """Every case's first candidate made persistent (unsplit, 128-row tile)."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    update = {"persistent": True, "split_k": 1, "tile_rows": 128, **WORKSPACE}
    return variant_kernels(device, FAMILY, CASES, update)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_persistent_kernel_matches_reference_on_any_grid(case: Case, device, persistent_kernels):
    """The persistent form on the device's resident grid, then on 3 CTAs and on 1: each CTA walks
    many tiles (up to all 27 of the 1030 x 384 case), its ring carrying on across them (phases
    continue from tile to tile, the next tile's stages fill during the epilogue), so a phase or
    stage error shows as wrong or unwritten (poisoned) output."""
    config, kernel = persistent_kernels[case.id]
    assert config.persistent and kernel.resident >= 1
    for ctas in (kernel.resident, 3, 1):
        kernel.resident = ctas
        check_act8_case(case, device, config, kernel)


@pytest.fixture(scope="module")
def staged_kernels(device):
    """Every staged case's first candidate with staged output rows, persistent, and unsplit (for
    the split counts: a launch parameter on the same module)."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    forms = {"persistent": True, "split_k": 1, "tile_rows": 128, "staged_store": True, **WORKSPACE}
    return (
        variant_kernels(device, FAMILY, STAGED_CASES, forms),
        variant_kernels(device, FAMILY, SPLIT_CASES, {**forms, "persistent": False}),
    )


@pytest.mark.parametrize("case", STAGED_CASES, ids=lambda c: c.id)
def test_staged_rows_match_reference_on_any_grid(case: Case, device, staged_kernels):
    """Persistent with staged rows on the resident grid, 3 CTAs and 1 (each warpgroup's rows are
    rewritten tile after tile while earlier copies may still read them), into aligned and
    misaligned outputs; guarded_call's poison catches a copy past N or M."""
    config, kernel = staged_kernels[0][case.id]
    assert config.staged_store and config.persistent
    for ctas in (kernel.resident, 3, 1):
        kernel.resident = ctas
        for aligned in (True, False):
            check_act8_case(case, device, config, kernel, aligned)


@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.id)
def test_staged_rows_after_split_k_match_reference(case: Case, device, staged_kernels):
    """The last split of each tile stores the summed tile through the staged rows."""
    for split in (1, 3):
        config, kernel = split_of(device, case, staged_kernels[1][case.id], split)
        assert config.staged_store
        check_act8_case(case, device, config, kernel, aligned=True)


# The 192-column tile: formats without block weight scales (a 192-column tile straddles their
# 128-column blocks)
WIDE_CASES = [c for c in STAGED_CASES if c.spec.weight.scale.granularity != "block"]


@pytest.fixture(scope="module")
def wide_kernels(device):
    """Every wide case's first candidate on 192-column tiles, persistent with staged rows, and
    one CTA per tile with register stores (split counts bind the latter's module)."""
    from humming_cuda.kernels.w8a8_wgmma import FAMILY

    forms = {"persistent": True, "split_k": 1, "tile_rows": 128, "tile_cols": 192, **WORKSPACE}
    staged = variant_kernels(device, FAMILY, WIDE_CASES, {**forms, "staged_store": True})
    plain_forms = {**forms, "persistent": False, "staged_store": False}
    plain = variant_kernels(device, FAMILY, WIDE_CASES, plain_forms)
    return {cid: (built, plain[cid]) for cid, built in staged.items()}


@pytest.mark.parametrize("case", WIDE_CASES, ids=lambda c: c.id)
def test_192_column_tiles_match_reference(case: Case, device, wide_kernels):
    """m64n192 wgmmas, 96 accumulators per thread: persistent on the resident grid and on 3 CTAs
    (staged rows, aligned and not), and one CTA per tile unsplit and split 3 ways."""
    (config, kernel), plain = wide_kernels[case.id]
    assert config.block_n == 192 and config.staged_store
    for ctas in (kernel.resident, 3):
        kernel.resident = ctas
        for aligned in (True, False):
            check_act8_case(case, device, config, kernel, aligned)
    check_act8_case(case, device, *plain)
    if case.k > 4 * 128:  # 3 splits of at least 2, 2 and 1 blocks
        check_act8_case(case, device, *split_of(device, case, plain, 3))
