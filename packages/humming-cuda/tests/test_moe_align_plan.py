"""moe_align on CPU: launch plans (chunks, warps, shared memory) and the rendered sources."""

from __future__ import annotations

import pytest
import torch

from humming_cuda.kernels.moe_align import PHASES, kernel_name, plan_align, render
from humming_cuda.kernels.moe_align.plan import (
    FUSED_MAX_NUMEL,
    MAX_EXPERTS,
    MAX_THREADS,
    SMEM_BUDGET,
)


@pytest.mark.parametrize("numel", [0, 1, 8, 31, 33, 4096, 4097, 65536, 1 << 20])
@pytest.mark.parametrize("num_experts", [1, 8, 64, 256, 257, 1024, MAX_EXPERTS])
def test_plan_covers_every_entry_within_the_limits(numel, num_experts):
    plan = plan_align(numel, num_experts)
    assert plan.fused == (numel <= FUSED_MAX_NUMEL)
    assert plan.chunk % 32 == 0 and plan.chunk >= 32
    assert plan.num_chunks * plan.chunk >= numel > (plan.num_chunks - 1) * plan.chunk or numel == 0
    assert plan.warps >= 1 and plan.threads <= MAX_THREADS
    assert plan.smem == 4 * num_experts * plan.warps <= SMEM_BUDGET
    assert plan.workspace == plan.num_chunks * num_experts + num_experts + 1
    if plan.fused:
        assert plan.grid == 1 and plan.scan_threads == plan.threads
    else:
        # every chunk has a warp somewhere in the grid, and the scan CTA is a whole number of warps
        assert plan.grid * plan.warps >= plan.num_chunks
        assert plan.scan_threads % 32 == 0 and 32 <= plan.scan_threads <= MAX_THREADS


def test_large_batches_are_split_into_bounded_chunks():
    # E=256, top-8, M=8192: the scan walks at most ~128 chunk rows per expert
    plan = plan_align(8192 * 8, 256)
    assert not plan.fused and plan.num_chunks <= 128 and plan.grid > 1


def test_plan_refuses_what_the_kernel_cannot_hold():
    with pytest.raises(ValueError, match=f"1..{MAX_EXPERTS} experts"):
        plan_align(16, MAX_EXPERTS + 1)
    with pytest.raises(ValueError, match="num_experts=0"):
        plan_align(16, 0)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_each_source_holds_one_phase_entry(dtype):
    for phase in PHASES:
        source = render(phase, dtype, "sm_90a")
        assert source.name == kernel_name(phase, dtype)
        assert source.code.count("HUMMING_MOE_ALIGN_ENTRY(") == 1
        assert f"humming::moe_align::{phase.upper()}" in source.code
        assert ("long long" in source.code) == (dtype == torch.int64)
        assert source.arch == "sm_90a" and source.headers
    names = {kernel_name(p, d) for p in PHASES for d in (torch.int32, torch.int64)}
    assert len(names) == 2 * len(PHASES)


def test_render_rejects_unsupported_ids_and_phases():
    with pytest.raises(ValueError, match="allowed: int32, int64"):
        render("fused", torch.int16, "sm_90a")
    with pytest.raises(ValueError, match="unknown phase"):
        render("sort", torch.int32, "sm_90a")


def test_prebuild_covers_every_phase_of_every_id_dtype_once():
    from humming_cuda.kernels.moe_align import prebuild_sources

    dtypes = (torch.int32, torch.int64, torch.int32)
    sources = prebuild_sources("sm_90a", dtypes)
    want = [kernel_name(p, d) for d in (torch.int32, torch.int64) for p in PHASES]
    assert [s.name for s in sources] == want
    assert {s.arch for s in sources} == {"sm_90a"}


class _Caps:
    arch = "sm_90a"


class _Device:
    def caps(self, index):
        return _Caps()


def test_prepare_builds_missing_dtypes_in_one_parallel_build(monkeypatch):
    """The plan CudaDevice.prepare_moe_align runs: one build_many over every missing kernel, each
    loaded once; later calls (moe_align's lookups included) build nothing."""
    from humming_cuda.kernels import moe_align as ma

    builds, loads = [], []
    monkeypatch.setattr(ma, "_KERNELS", {})
    monkeypatch.setattr(ma, "build_many", lambda dev, srcs: builds.append(srcs) or list(srcs))
    monkeypatch.setattr(ma.loader, "load", lambda art, index: loads.append(art.name) or art)
    monkeypatch.setattr(ma, "MoeAlignKernel", lambda functions, dtype: (dtype, dict(functions)))
    device = _Device()
    got = ma.moe_align_kernels(device, 0, (torch.int32, torch.int64))
    assert len(builds) == 1 and [s.name for s in builds[0]] == loads
    assert loads == [kernel_name(p, d) for d in (torch.int32, torch.int64) for p in PHASES]
    assert got[torch.int64][0] == torch.int64
    assert ma.moe_align_kernel(device, 0, torch.int32) is got[torch.int32]
    ma.moe_align_kernels(device, 0, (torch.int64, torch.int32))
    assert len(builds) == 1, "a prepared dtype was built again"
    ma.moe_align_kernels(device, 1, (torch.int32,))  # another GPU: its own build
    assert len(builds) == 2 and len(builds[1]) == len(PHASES)


def test_cuda_device_prepares_its_moe_align():
    from humming_core.device import PreparesMoeAlign, SupportsMoeAlign
    from humming_cuda.device import CudaDevice

    device = CudaDevice.for_arch("sm_90a")
    assert isinstance(device, SupportsMoeAlign) and isinstance(device, PreparesMoeAlign)
