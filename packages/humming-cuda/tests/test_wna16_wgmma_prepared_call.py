"""The WnA16-wgmma launch path without a GPU (fake_launch): a prepared call (one layer's weights
bound to a kernel, humming_cuda.kernels.wna16_wgmma.call) launches exactly the parameters and
grid the full check computes — x's tensor map included — grows split-K's workspace with M, and
refuses every wrong x and out with the full check's error.

Tensor maps are encoded by the CUDA driver, which a CPU machine lacks: `FakeMaps` stands in for
the kernel's map cache with a "map" that records x's pointer, rows, K and row stride.
"""

from __future__ import annotations

import pytest
import torch
from fake_launch import (
    FakeFunction,
    Recorder,
    assert_refused_after_template,
    cuda,
    fake_split_workspace,
    fp16_operands,
    wna16_packed,
)

from humming_core.spec import W4A16_G128
from humming_cuda.kernels.w8a8_wgmma.tma import TensorMapParam
from humming_cuda.kernels.wna16_wgmma import bind
from humming_cuda.kernels.wna16_wgmma.config import WgmmaWna16Config

N, K, GROUP = 512, 1024, 128


class FakeMaps:
    def get(self, x: torch.Tensor, what: str) -> TensorMapParam:
        return TensorMapParam(x.data_ptr(), x.shape[0], x.shape[1], x.stride(0), *[0] * 12)


def make_kernel(**fields) -> bind.WgmmaWna16Kernel:
    config = WgmmaWna16Config(
        **{"arch": "sm_90a", "stages": 8, "weights_in_registers": True, **fields}
    )
    kernel = bind.WgmmaWna16Kernel(FakeFunction(), W4A16_G128, config)
    kernel.launcher = Recorder(kernel.launcher.ctypes)
    kernel.maps = FakeMaps()
    return kernel


def packed() -> dict[str, torch.Tensor]:
    return wna16_packed(N, K, GROUP)


def operands(m: int) -> tuple[torch.Tensor, torch.Tensor]:
    return fp16_operands(m, N, K)


@pytest.fixture(autouse=True)
def cpu_workspace(monkeypatch):
    return fake_split_workspace(monkeypatch)


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"rs_block_m": 16, "split_k": 3},
        {"rs_stream_k": True, "stages": 4},
        {"rs_block_m": 16, "split_k": 3, "rs_cluster_split": True},
        {"rs_block_m": 16, "split_k": 4, "rs_cluster_split": True, "rs_cluster_ctas": 2},
    ],
)
def test_prepared_calls_launch_what_the_full_check_computes(fields):
    kernel, weights = make_kernel(**fields), packed()
    call = kernel.prepare(**weights)
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda *a: full_checks.append(1) or checked_call(*a)
    block = (kernel.config.threads, 1, 1)
    for m in (1, 5, 40, 300, 1):  # the first call builds the template, the rest patch it
        x, out = operands(m)
        call(x, out)
        grid, params, _ = kernel.checked({"x": x, "out": out, **weights})
        launched = kernel.launcher.launches[-1]
        assert launched == (grid, block, kernel.config.smem_bytes, [tuple(params[0]), *params[1:]])
        assert launched[3][0][:4] == (x.data_ptr(), m, K, K)  # x's own tensor map
    assert call.template is not None and len(kernel.launcher.launches) == 5
    assert len(full_checks) == 1  # later calls took the quick path
    assert launched[0][2] == kernel.config.split_k
    call(*operands(0))  # M = 0: nothing to launch
    assert len(kernel.launcher.launches) == 5


@pytest.mark.parametrize(
    "clusters", [{}, {"rs_cluster_split": True, "rs_cluster_ctas": 2}], ids=["workspace", "of2"]
)
def test_split_k_workspace_is_patched_and_grown(cpu_workspace, clusters):
    """Split-K's workspace and counters reach the full check's launch and the quick path's,
    grown with M; splits in clusters of 2 (rs_cluster_ctas) sum their rows' shares through it
    too, with a counter per tile and cluster rank."""
    handed_out = cpu_workspace
    kernel, weights = make_kernel(rs_block_m=32, split_k=4, **clusters), packed()
    call = kernel.prepare(**weights)
    names = kernel.signature.names
    cfg = kernel.config
    for m in (20, 32, 200):
        call(*operands(m))
        grid, _, _, params = kernel.launcher.launches[-1]
        assert grid == (N // 256, -(-m // 32), 4)
        ws, ct = handed_out[-1]
        assert params[names.index("workspace")] == ws.data_ptr()
        assert params[names.index("counters")] == ct.data_ptr()
        assert params[names.index("iters_per_split")] == 4  # 16 steps of 64 over 4 splits
        assert ws.numel() >= grid[0] * grid[1] * 4 * cfg.block_m * cfg.block_n
        assert ct.numel() >= grid[0] * grid[1] * (2 if clusters else 1)
    assert call.ws_rows == -(-200 // 32) and call.uses_workspace
    assert len(handed_out) == 2  # the full check's, then one growth (M = 200)


def test_cluster_split_k_takes_no_workspace(cpu_workspace):
    """Cluster split-K sums a tile's splits over distributed shared memory: the grid keeps its
    splits in z (the launcher's clusters follow it) and no workspace or counters are handed out,
    in the full check or on the quick path."""
    handed_out = cpu_workspace
    kernel, weights = make_kernel(rs_block_m=32, split_k=4, rs_cluster_split=True), packed()
    call = kernel.prepare(**weights)
    names = kernel.signature.names
    for m in (20, 32, 200):
        call(*operands(m))
        grid, _, _, params = kernel.launcher.launches[-1]
        assert grid == (N // 256, -(-m // 32), 4)
        assert params[names.index("workspace")] == 0 and params[names.index("counters")] == 0
        assert params[names.index("iters_per_split")] == 4
    assert handed_out == [] and not call.uses_workspace


def test_clusters_of_fewer_splits_launch_as_a_common_divisor():
    """Splits in clusters of rs_cluster_ctas: the launcher's clusters are gcd(split, 2) (a K
    that cuts the split to 3 launches clusters of one CTA, the workspace then summing whole
    tiles); with one cluster per tile they are the whole split (no workspace)."""
    kernel = make_kernel(rs_block_m=32, split_k=4, rs_cluster_split=True, rs_cluster_ctas=2)
    real = bind.WgmmaWna16Kernel(FakeFunction(), W4A16_G128, kernel.config).launcher
    assert real.cluster_z_from_grid and real.cluster_z_divisor == 2
    assert [kernel.cluster_ctas(s) for s in (4, 3, 2, 1)] == [2, 1, 2, 1]
    whole = make_kernel(rs_block_m=32, split_k=4, rs_cluster_split=True)
    assert [whole.cluster_ctas(s) for s in (4, 3)] == [4, 3]


def test_split_scatter_passes_the_resident_ctas_and_the_plain_split_passes_none(
    cpu_workspace, monkeypatch
):
    """rs_split_scatter's splits wait for each other only when the whole grid is resident at
    once: the launch passes the CTAs the device holds (FakeFunction: 132), which the kernel
    compares with its grid; every other form, and every form under HUMMING_SPLIT_SCATTER=0,
    passes 0 (never wait). Eager and prepared calls launch the same value, with the workspace for
    every split."""
    names = None
    for scatter, env, expected in ((True, "1", 132), (False, "1", 0), (True, "0", 0)):
        monkeypatch.setenv("HUMMING_SPLIT_SCATTER", env)
        kernel, weights = make_kernel(rs_block_m=32, split_k=4, rs_split_scatter=scatter), packed()
        names = kernel.signature.names
        call = kernel.prepare(**weights)
        for m in (17, 100):
            x, out = operands(m)
            kernel(x=x, out=out, **weights)
            call(x, out)
            (grid, _, _, eager), (_, _, _, prepared) = kernel.launcher.launches[-2:]
            assert grid[2] == 4 and eager == prepared
            assert eager[names.index("resident")] == expected
            assert eager[names.index("workspace")] != 0


def test_stream_k_launches_the_resident_ctas_with_a_workspace_fixed_per_device(cpu_workspace):
    """Persistent stream-K: at most one CTA per SM (FakeFunction: 132) and per (tile, K step)
    iteration, one row of them; two partial tiles and a counter per CTA, the same buffers for
    every M (held by the call)."""
    handed_out = cpu_workspace
    kernel, weights = make_kernel(rs_stream_k=True, stages=4), packed()
    call = kernel.prepare(**weights)
    names = kernel.signature.names
    cfg = kernel.config
    steps = K // 64
    for m in (17, 128, 129, 1000, 3000):
        call(*operands(m))
        grid, _, _, params = kernel.launcher.launches[-1]
        iterations = (N // 256) * -(-m // 128) * steps
        assert grid == (min(132, iterations), 1, 1)
        ws, ct = handed_out[-1]
        assert params[names.index("workspace")] == ws.data_ptr()
        assert params[names.index("counters")] == ct.data_ptr()
        assert ws.numel() >= 132 * 2 * cfg.block_m * cfg.block_n and ct.numel() >= 132
    assert len(handed_out) == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda x, o: (cuda(torch.zeros(4, K)), o), r"'x': expected dtype float16, got float32"),
        (lambda x, o: (x, cuda(torch.zeros(5, N, dtype=torch.float16))), r"'out': expected shape \(4, N\) \(dim 0 is M=4\), got shape \(5, 512\)"),
        (lambda x, o: (x, cuda(torch.zeros(4, N, dtype=torch.bfloat16))), r"'out': expected dtype float16, got bfloat16"),
        (lambda x, o: (x, cuda(torch.zeros(N, 4, dtype=torch.float16).T)), r"expected x \[M, K\] and out \[M, N\] with innermost stride 1"),
        (lambda x, o: (cuda(torch.zeros(4, K + 8, dtype=torch.float16)[:, 1 : K + 1]), o), r"'x': expected a data pointer aligned to 16 bytes"),
        (lambda x, o: (cuda(torch.zeros(4, K + 4, dtype=torch.float16)[:, :K]), o), r"'x': expected a row stride that is a multiple of 16 bytes"),
        (lambda x, o: (x, cuda(torch.zeros(4 * N + 1, dtype=torch.float16)[1:].view(4, N))), r"'out': expected a data pointer aligned to 4 bytes"),
        (lambda x, o: (x.as_subclass(torch.Tensor), o), r"'x': expected a tensor on cuda:0 .* got one on cpu"),
        (lambda x, o: (x, o.as_subclass(torch.Tensor)), r"'out': expected a tensor on cuda:0 .* got one on cpu"),
    ],
)  # fmt: skip
def test_every_wrong_x_or_out_is_refused_after_the_template_exists(make, message):
    assert_refused_after_template(
        make_kernel(rs_block_m=16, split_k=2), packed(), lambda: operands(4), make, message
    )
