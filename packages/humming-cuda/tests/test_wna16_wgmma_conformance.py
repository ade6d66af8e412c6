"""WnA16-wgmma conformance on an sm_90a GPU against humming_core.numerics.reference_gemm.

These tests are the family's hardware verification (first passed on an H200 on 2026-11-29). Each
case checks (1) |out - ref| within error_bound, (2) no write outside
the [M, N] output view, (3) no NaN (x columns after K are NaN: a read past K would reach the
output). Both ring depths run on the largest-K shape; small M runs the register form's narrow tiles with
K split across CTAs (uneven splits, graph replays that rely on the counters resetting); the device
routes integer WnA16 here when M and the grid are large (a grid too small to fill the GPU stays
wna16, one packed copy serves both); a call replays correctly from a CUDA graph.
"""

from __future__ import annotations

import pytest
import torch
from pdl_chain import check_pdl_chain
from wgmma_conformance import (
    TORCH_DTYPES,
    build_kernels,
    guarded_call,
    replay_in_graph,
    sm90_device,
)
from wna16_cases import Case, random_weight
from wna16_wgmma_cases import (
    CLUSTER_GROUP_SHAPES,
    CLUSTER_SPLIT_SHAPES,
    MID_M_SHAPES,
    NARROW_N_SHAPES,
    NARROW_N_STREAM_SHAPES,
    SCATTER_SHAPES,
    SHAPES,
    STREAM_SHAPES,
    TWO_CTAS_SHAPES,
    WIDE_M_SHAPES,
    float_cases,
    matrix_cases,
    small_m_cases,
    wgmma_cases,
)

from humming_core.testing.conformance import error_bound

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (torch.cuda)"),
]

CASES = wgmma_cases() + matrix_cases()
# the largest-K shape of each own format also runs the second (6-stage) config
DEEP = wgmma_cases()[len(SHAPES) - 1 :: len(SHAPES)]


@pytest.fixture(scope="module")
def device():
    torch.backends.cuda.matmul.allow_tf32 = False
    return sm90_device("wna16_wgmma")


# Fixtures that build another form from the routed config (which may sum its splits in
# clusters, or all at once, or run stream-K) set those fields back unless they test them: split-K
# through the workspace, summed by the last split to arrive.
UNCLUSTERED = {
    "rs_cluster_split": False,
    "rs_cluster_ctas": 0,
    "rs_split_scatter": False,
    "rs_stream_k": False,
}
# The shared-memory form, which the cost model keeps for grids it fills in one wave (the
# register forms have their own tests below), at the ring depths of its candidates.
SHARED = {
    **UNCLUSTERED,
    "weights_in_registers": False,
    "rs_block_m": 128,
    "rs_block_n": 256,
    "rs_ctas_per_sm": 1,
    "split_k": 1,
}


@pytest.fixture(scope="module")
def kernels(device):
    """Every case's kernel in the shared-memory form with a 4-stage ring, and DEEP's with the
    6-stage one (index 1), compiled in parallel."""
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    built = {}
    for index, stages, cases in ((0, 4, CASES), (1, 6, DEEP)):
        jobs = [(c, 0) for c in cases]
        pairs = build_kernels(device, FAMILY, jobs, {**SHARED, "stages": stages})
        built.update({(c.id, c.seed, index): b for c, b in zip(cases, pairs, strict=True)})
    return built


def _check(case: Case, device, config, kernel) -> torch.Tensor:
    """The case's output (checked against the reference)."""
    from humming_core.numerics import quantize_weight, reference_gemm

    act = TORCH_DTYPES[case.spec.act.dtype.name]
    gen = torch.Generator(device="cuda").manual_seed(case.seed)
    bias = torch.randn(case.n, device="cuda", generator=gen) if case.spec.epilogue.bias else None
    cw = quantize_weight(random_weight(case, "cuda"), case.spec, bias=bias)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")

    x = torch.randn(case.m, case.k, device="cuda", generator=gen).to(act)
    out = guarded_call(kernel, x, case.n, case.spec.output_dtype, 8, **weights)
    ref = reference_gemm(x, cw)
    err = (out.double() - ref.double()).abs()
    worst = (err / error_bound(x, cw, ref)).max().item()
    assert worst <= 1.0, f"max err/bound {worst:.3f} (max err {err.max().item():.3g}, {config})"
    return out


@pytest.mark.parametrize("case", CASES, ids=[f"{c.id}-s{c.seed}" for c in CASES])
def test_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, case.seed, 0)]
    assert not config.weights_in_registers
    _check(case, device, config, kernel)


FLOAT = float_cases()


@pytest.fixture(scope="module")
def float_kernels(device):
    """The float-code kernels, from the family's own candidates."""
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    built = build_kernels(device, FAMILY, [(c, 0) for c in FLOAT])
    return {(c.id, c.seed): b for c, b in zip(FLOAT, built, strict=True)}


@pytest.mark.parametrize("case", FLOAT, ids=[f"{c.id}-s{c.seed}" for c in FLOAT])
def test_float_codes_match_reference(case: Case, device, float_kernels):
    """MXFP4, E4M3, NVFP4 (global scale) and E5M2 codes through wna16's float dequantizer."""
    _check(case, device, *float_kernels[(case.id, case.seed)])


@pytest.mark.parametrize("case", DEEP, ids=lambda c: c.id)
def test_deeper_ring_matches_reference(case: Case, device, kernels):
    config, kernel = kernels[(case.id, case.seed, 1)]
    assert config.stages == 6
    _check(case, device, config, kernel)


# the register-A form as the heuristic builds it (a producer warpgroup, 4 fragment buffers), and
# as thread 0 feeds it with 2 fragment buffers in turn (on the 256-column tile at one CTA per SM:
# the 128-column one and two CTAs per SM need the producer warpgroup)
RS_FORMS = {
    "rs": {"weights_in_registers": True},
    "rs-thread0-2buf": {
        "weights_in_registers": True,
        "rs_producer": False,
        "rs_frag_buffers": 2,
        "rs_ctas_per_sm": 1,
        "rs_block_n": 256,
    },
}


@pytest.fixture(scope="module", params=list(RS_FORMS))
def register_a_kernels(request, device):
    """Every integer and float case with the heuristic's config in a register-A form."""
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    cases = CASES + FLOAT
    built = build_kernels(device, FAMILY, [(c, 0) for c in cases], RS_FORMS[request.param])
    return {(c.id, c.seed): b for c, b in zip(cases, built, strict=True)}


@pytest.mark.parametrize("case", CASES + FLOAT, ids=[f"{c.id}-s{c.seed}" for c in CASES + FLOAT])
def test_weights_in_registers_matches_reference(case: Case, device, register_a_kernels):
    """The out^T form (wna16_wgmma_rs.cuh): its own 256 x 128 tile tails, scale rows streamed per
    step (groups of 16 to whole-K zero points), the transposed epilogue."""
    config, kernel = register_a_kernels[(case.id, case.seed)]
    assert config.weights_in_registers
    _check(case, device, config, kernel)


SMALL_M = small_m_cases()
MID_M = small_m_cases(first_seed=3100, shapes=MID_M_SHAPES)
TWO_CTAS = small_m_cases(first_seed=3200, shapes=TWO_CTAS_SHAPES)
WIDE_M = small_m_cases(first_seed=3300, shapes=WIDE_M_SHAPES)
STREAM = small_m_cases(first_seed=3400, shapes=STREAM_SHAPES)
NARROW_N = small_m_cases(first_seed=3500, shapes=NARROW_N_SHAPES)
NARROW_N_STREAM = small_m_cases(first_seed=3600, shapes=NARROW_N_STREAM_SHAPES)
CLUSTER_SPLIT = small_m_cases(first_seed=3700, shapes=CLUSTER_SPLIT_SHAPES)
CLUSTER_GROUPS = small_m_cases(first_seed=3800, shapes=CLUSTER_GROUP_SHAPES)
SCATTER = small_m_cases(first_seed=3900, shapes=SCATTER_SHAPES)
# the stream-K form's fixed fields (the case's own: token tile, ring depth)
STREAM_FIELDS = {**UNCLUSTERED, "rs_stream_k": True, "split_k": 1, "rs_ctas_per_sm": 1}


def _split_kernels(device, cases, fields) -> dict:
    """`cases` (case, launch values) in the register form with `fields` set to those values."""
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    def build(item):
        case, values = item
        update = {"weights_in_registers": True, **UNCLUSTERED}
        update.update(zip(fields, values, strict=True))
        (built,) = build_kernels(device, FAMILY, [(case, 0)], update)
        return built

    return {(c.id, c.seed): build((c, v)) for c, v in cases}


@pytest.fixture(scope="module")
def small_m_kernels(device):
    """SMALL_M's cases with the heuristic's narrow register-form config at the case's split: the
    256-column tiles of 16 / 32 / 48 rows (3- and 4-bit codes take the 128-column plans from
    M = 33 since session 48; their forms have the NARROW_N / STREAM / SCATTER / CLUSTER cases), so
    with those plans offered from M = 64 as before."""
    from humming_cuda.kernels.wna16_wgmma import heuristics

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(heuristics, "N128_MIN_M", 64)
        return _split_kernels(device, SMALL_M, ("split_k",))


@pytest.fixture(scope="module")
def mid_m_kernels(device):
    """MID_M's cases in the register form at the case's split, token tile and ring depth."""
    return _split_kernels(device, MID_M, ("split_k", "rs_block_m", "stages"))


@pytest.fixture(scope="module")
def wide_m_kernels(device):
    """WIDE_M's cases in the register form at the case's split, wide token tile and ring depth."""
    return _split_kernels(device, WIDE_M, ("split_k", "rs_block_m", "stages"))


@pytest.fixture(scope="module")
def stream_kernels(device):
    """STREAM's cases in the persistent stream-K form at the case's token tile and ring depth."""
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    def build(case, block_m, stages):
        fields = {**STREAM_FIELDS, "rs_block_m": block_m, "stages": stages}
        (built,) = build_kernels(device, FAMILY, [(case, 0)], fields)
        return built

    return {(c.id, c.seed): build(c, *v) for c, v in STREAM}


@pytest.fixture(scope="module")
def narrow_n_kernels(device):
    """NARROW_N's cases in the 128-column register form at the case's fields."""
    fields = ("split_k", "rs_block_m", "rs_ctas_per_sm", "stages")
    cases = [(c, (128, *v)) for c, v in NARROW_N]
    return _split_kernels(device, cases, ("rs_block_n", *fields))


@pytest.fixture(scope="module")
def narrow_n_stream_kernels(device):
    """NARROW_N_STREAM's cases in the stream-K form over 128-column tiles, two CTAs per SM."""
    fields = ("rs_block_m", "stages")
    cases = [(c, (True, 1, 2, 128, *v)) for c, v in NARROW_N_STREAM]
    return _split_kernels(
        device, cases, ("rs_stream_k", "split_k", "rs_ctas_per_sm", "rs_block_n", *fields)
    )


@pytest.fixture(scope="module")
def cluster_split_kernels(device):
    """CLUSTER_SPLIT's cases: splits of a tile summed within a cluster, at the case's fields."""
    fields = ("split_k", "rs_block_m", "rs_block_n", "rs_ctas_per_sm", "stages")
    cases = [(c, (True, *v)) for c, v in CLUSTER_SPLIT]
    return _split_kernels(device, cases, ("rs_cluster_split", *fields))


@pytest.fixture(scope="module")
def cluster_group_kernels(device):
    """CLUSTER_GROUPS' cases: a tile's splits in several clusters, at the case's fields."""
    fields = ("split_k", "rs_cluster_ctas", "rs_block_m", "rs_block_n", "rs_ctas_per_sm", "stages")
    cases = [(c, (True, *v)) for c, v in CLUSTER_GROUPS]
    return _split_kernels(device, cases, ("rs_cluster_split", *fields))


@pytest.fixture(scope="module")
def scatter_kernels(device):
    """SCATTER's cases summed by all splits at once (index True) and by the last split (False),
    at the case's fields."""
    fields = ("split_k", "rs_block_m", "rs_block_n", "rs_ctas_per_sm", "stages")
    return {
        scatter: _split_kernels(
            device, [(c, (scatter, *v)) for c, v in SCATTER], ("rs_split_scatter", *fields)
        )
        for scatter in (True, False)
    }


@pytest.fixture(scope="module")
def two_ctas_kernels(device):
    """TWO_CTAS's cases: the heuristic's narrow tile, registers split for two CTAs per SM."""
    return _split_kernels(device, TWO_CTAS, ("split_k", "rs_ctas_per_sm", "stages"))


@pytest.mark.parametrize(
    "case", [c for c, _ in SMALL_M], ids=[f"{c.id}-split{s}" for c, (s,) in SMALL_M]
)
def test_small_m_split_k_matches_reference(case: Case, device, small_m_kernels):
    """The narrow tiles (wgmma n16 / n32 / n64) and split-K's workspace reduction: uneven splits,
    K tails inside a split, one split (no workspace)."""
    config, kernel = small_m_kernels[(case.id, case.seed)]
    # 48 rows at M = 33-48 (heuristics.TILE48_MAX_M)
    assert config.weights_in_registers and config.rs_block_m == next(
        b for b in (16, 32, 48, 64) if b >= case.m
    )
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case", [c for c, _ in MID_M], ids=[f"{c.id}-split{s}-m{b}-st{st}" for c, (s, b, st) in MID_M]
)
def test_mid_m_split_k_matches_reference(case: Case, device, mid_m_kernels):
    """Several 64-, 96- or 128-row token tiles (M tails in the last), each K-split, as the cost
    model picks them from M = 65 (96 rows from M = 512); 48-row tiles (the MoE blocks of ~32 rows
    per expert) split and unsplit."""
    config, kernel = mid_m_kernels[(case.id, case.seed)]
    assert config.weights_in_registers and config.smem_bytes <= device.caps().smem_per_block
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case", [c for c, _ in WIDE_M], ids=[f"{c.id}-split{s}-m{b}" for c, (s, b, _) in WIDE_M]
)
def test_wide_token_tiles_match_reference(case: Case, device, wide_m_kernels):
    """160- and 176-row token tiles (wgmma m64n160 / m64n176 with register A): every format, M
    and N tails, several M tiles, splits (the 176-row split reduction's 4-float4 batches)."""
    config, kernel = wide_m_kernels[(case.id, case.seed)]
    assert config.rs_block_m in (160, 176)
    assert config.smem_bytes <= device.caps().smem_per_block
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case", [c for c, _ in STREAM], ids=[f"{c.id}-m{b}" for c, (b, _) in STREAM]
)
def test_stream_k_matches_reference(case: Case, device, stream_kernels):
    """Persistent CTAs sharing the (tile, K step) iterations: tiles split over up to 66 CTAs,
    summed by the last to arrive, whole tiles straight to the epilogue, M / N / K tails, the ring
    running on across segments, the epilogue staged in parts."""
    config, kernel = stream_kernels[(case.id, case.seed)]
    assert config.rs_stream_k and kernel.resident > 0
    assert config.smem_bytes <= device.caps().smem_per_block
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case", [c for c, _ in TWO_CTAS], ids=[f"{c.id}-split{s}" for c, (s, _, _) in TWO_CTAS]
)
def test_two_ctas_per_sm_match_reference(case: Case, device, two_ctas_kernels):
    """The narrow tiles with 104 registers per consumer thread and 24 for the producer
    (setmaxnreg), so that two CTAs share an SM: every format, K tails, splits."""
    config, kernel = two_ctas_kernels[(case.id, case.seed)]
    assert config.rs_ctas_per_sm == 2 and config.rs_block_m <= 32
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case",
    [c for c, _ in NARROW_N],
    ids=[f"{c.id}-split{s}-m{b}-ctas{t}" for c, (s, b, t, _) in NARROW_N],
)
def test_128_column_tiles_match_reference(case: Case, device, narrow_n_kernels):
    """One consumer warpgroup over 128 weight columns (its warps' layout columns and pair halves
    from Place), two CTAs per SM at token tiles of 32-176 rows: every format, M / N / K tails, N
    tails past the tile's first layout column, splits."""
    config, kernel = narrow_n_kernels[(case.id, case.seed)]
    assert config.block_n == 128 and config.threads == 256
    assert config.fits_smem(device.caps())
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case", [c for c, _ in NARROW_N_STREAM], ids=[f"{c.id}-m{b}" for c, (b, _) in NARROW_N_STREAM]
)
def test_128_column_stream_k_matches_reference(case: Case, device, narrow_n_stream_kernels):
    """Stream-K over 128-column tiles with two persistent CTAs per SM: the grid is every CTA the
    device holds (twice the SMs), partial tiles summed across up to 128 CTAs."""
    config, kernel = narrow_n_stream_kernels[(case.id, case.seed)]
    assert config.rs_stream_k and config.block_n == 128 and config.rs_ctas_per_sm == 2
    sms = device.caps().sm_count
    assert sms is None or kernel.resident == 2 * sms
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case",
    [c for c, _ in CLUSTER_SPLIT],
    ids=[f"{c.id}-split{s}-m{b}-n{n}" for c, (s, b, n, _, _) in CLUSTER_SPLIT],
)
def test_cluster_split_k_matches_reference(case: Case, device, cluster_split_kernels):
    """A tile's K splits as one cluster summing over distributed shared memory, each CTA storing
    its share of the rows: even and uneven splits and row shares, 2 to 8 splits, both tile
    widths, M / N / K tails, a split K cuts to fewer CTAs."""
    config, kernel = cluster_split_kernels[(case.id, case.seed)]
    assert config.rs_cluster_split and kernel.launcher.cluster_z_from_grid
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case",
    [c for c, _ in CLUSTER_GROUPS],
    ids=[f"{c.id}-split{s}-of{g}-m{b}-n{n}" for c, (s, g, b, n, _, _) in CLUSTER_GROUPS],
)
def test_cluster_groups_split_k_matches_reference(case: Case, device, cluster_group_kernels):
    """A tile's K splits in several clusters (rs_cluster_ctas), each summing over distributed
    shared memory, their row shares then summed through the workspace: 2 to 16 splits in clusters
    of 2, 3 or 4, even and uneven row shares, M / N / K tails, a split K cuts to one with no
    common divisor (clusters of one CTA, the workspace alone)."""
    config, kernel = cluster_group_kernels[(case.id, case.seed)]
    assert config.rs_cluster_split and config.rs_cluster_ctas
    assert kernel.launcher.cluster_z_divisor == config.rs_cluster_ctas
    _check(case, device, config, kernel)


@pytest.mark.parametrize(
    "case",
    [c for c, _ in SCATTER],
    ids=[f"{c.id}-split{s}-m{b}-n{n}" for c, (s, b, n, _, _) in SCATTER],
)
def test_split_scatter_matches_reference_and_the_last_split_sum(
    case: Case, device, scatter_kernels
):
    """A tile's K splits each summing and storing a share of its rows inside M once all have
    stored their partial tiles: even and uneven shares, splits with no rows, 16 splits, M / N / K
    tails, a split K cuts. The same sums in the same order as the workspace form's last split:
    the output matches it bit for bit. A grid larger than the device holds at once sums the
    workspace form's way (a split waiting for one that cannot start would hang)."""
    config, kernel = scatter_kernels[True][(case.id, case.seed)]
    plain_config, plain = scatter_kernels[False][(case.id, case.seed)]
    assert config.rs_split_scatter and not plain_config.rs_split_scatter
    assert kernel.scatter_ctas > 0 and plain.scatter_ctas == 0
    out = _check(case, device, config, kernel)
    torch.testing.assert_close(out, _check(case, device, plain_config, plain), rtol=0, atol=0)


@pytest.mark.parametrize("form", ["split", "stream", "cluster", "cluster_groups", "scatter"])
def test_split_k_replays_in_a_graph_and_resets_its_counters(device, form):
    """A split-K (or stream-K) launch leaves the tile counters at zero: graph replays and eager
    calls after them keep matching the first eager result, bit for bit (cluster split-K, which
    has no counters, too: its clusters launch in the graph as eagerly; several clusters per tile
    sum through the workspace in a fixed order, whichever arrives last; splits that sum a share
    each wait on the counter, which must be back at zero for the next launch's wait)."""
    from humming_core.numerics import quantize_weight
    from humming_cuda.kernels.wna16_wgmma import FAMILY

    case, split = next((c, s) for c, (s,) in SMALL_M if s >= 3)
    fields = {"split_k": split, **UNCLUSTERED} if form == "split" else STREAM_FIELDS
    if form == "cluster":  # one cluster per tile, whatever cluster size the routed config has
        fields = {"split_k": split, **UNCLUSTERED, "rs_cluster_split": True}
    if form == "cluster_groups":  # 16 splits in clusters of 4: the workspace and its counters
        case, split = next((c, s) for c, (s,) in SMALL_M if s == 16)
        fields = {"split_k": split, "rs_cluster_split": True, "rs_cluster_ctas": 4}
        # its 64-row 256-column tile (M = 47 routes to the 128-column stream-K plan)
        fields |= {"rs_stream_k": False, "rs_block_m": 64, "rs_block_n": 256, "rs_ctas_per_sm": 1}
    if form == "scatter":  # the counters count arrivals and departures, the last zeroes them
        fields = {"split_k": split, **UNCLUSTERED, "rs_split_scatter": True}
    ((config, kernel),) = build_kernels(device, FAMILY, [(case, 0)], fields)
    gen = torch.Generator(device="cuda").manual_seed(case.seed)
    bias = torch.randn(case.n, device="cuda", generator=gen) if case.spec.epilogue.bias else None
    cw = quantize_weight(random_weight(case, "cuda"), case.spec, bias=bias)
    weights = device.weight_layout(case.spec, config).pack(cw, "cuda")
    act = TORCH_DTYPES[case.spec.act.dtype.name]
    x = torch.randn(case.m, case.k, device="cuda", generator=gen).to(act)
    out = torch.empty(case.m, case.n, dtype=TORCH_DTYPES[case.spec.output_dtype], device="cuda")
    kernel(x=x, out=out, **weights)
    first = out.clone()
    replay_in_graph(kernel, x, out, weights)
    torch.testing.assert_close(out, first, rtol=0, atol=0)
    for _ in range(3):
        out.zero_()
        kernel(x=x, out=out, **weights)
        torch.testing.assert_close(out, first, rtol=0, atol=0)


def test_device_routes_large_m_here_and_replays_in_a_graph(device):
    from humming_core.device import GemmProblem
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.spec import presets

    spec = presets.W4A16_G128
    gen = torch.Generator().manual_seed(7)
    cw = quantize_weight((torch.randn(1536, 512, generator=gen) * 0.05).cuda(), spec)
    decode = device.candidates(spec, GemmProblem(n=1536, k=512, m=4, act_dtype="fp16"))[0]
    assert decode.family == "wna16_decode"
    mid = device.candidates(spec, GemmProblem(n=1536, k=512, m=16, act_dtype="fp16"))[0]
    assert (mid.family, mid.tokens) == ("wna16_decode", 16)
    small = device.candidates(spec, GemmProblem(n=1536, k=512, m=32, act_dtype="fp16"))[0]
    assert (small.family, small.rs_block_m) == ("wna16_wgmma", 32)
    # 132 tiles of 128x128, one wave: the shared-memory form
    one_wave = device.candidates(spec, GemmProblem(n=4224, k=4096, m=512, act_dtype="fp16"))[0]
    assert (one_wave.family, one_wave.weights_in_registers) == ("wna16_wgmma", False)
    config = device.candidates(spec, GemmProblem(n=1536, k=512, m=1030, act_dtype="fp16"))[0]
    assert config.family == "wna16_wgmma"
    kernel = device.load(device.compile(device.render(spec, config)))
    weights = device.weight_layout(spec, config).pack(cw, "cuda")
    x = torch.randn(1030, 512, generator=gen).to(torch.float16).cuda()
    out = torch.empty(1030, 1536, dtype=torch.float16, device="cuda")
    replay_in_graph(kernel, x, out, weights)
    ref = reference_gemm(x, cw)
    assert ((out.double() - ref.double()).abs() <= error_bound(x, cw, ref)).all()


def test_user_api_switches_families_per_m_on_one_packed_copy(device):
    """PreparedGemm: M <= 16 runs wna16_decode (two n8 token blocks from M = 9), larger M this
    family's register form (narrow tiles, split-K where the grid is small), all from the same
    packed weights."""
    from humming_core.numerics import quantize_weight, reference_gemm
    from humming_core.ops import PreparedGemm
    from humming_core.spec import presets

    spec = presets.GPTQ_INT4
    gen = torch.Generator().manual_seed(3)
    cw = quantize_weight((torch.randn(1536, 640, generator=gen) * 0.05).cuda(), spec)
    layer = PreparedGemm(cw, device)
    families = {c.family for c in layer.configs.values()}
    assert families == {"wna16_decode", "wna16_wgmma"}, families
    for m in (5, 12, 40, 200, 1030):
        x = torch.randn(m, 640, generator=gen).to(torch.float16).cuda()
        out = layer.run(x)
        ref = reference_gemm(x, cw)
        assert ((out.double() - ref.double()).abs() <= error_bound(x, cw, ref)).all(), f"M={m}"
        # the second call takes the prepared call's quick path (kernels/*/call.py)
        assert torch.equal(layer.run(x), out), f"M={m}"


@pytest.mark.parametrize("m", [48, 200])
def test_pdl_chain_reads_each_input_after_its_producer(device, m):
    """The register-A form's producer issues codes and scales before griddepcontrol.wait and x
    after it; the consumers wait before their epilogue (split-K workspace, output)."""
    config = check_pdl_chain(device, m)
    assert config.family == "wna16_wgmma" and config.weights_in_registers and config.pdl, config
