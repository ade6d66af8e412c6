"""Launcher's cuLaunchKernelEx path without a GPU: the driver call is recorded, not made. A launch
with attributes (PDL here) goes out with a config of its own grid, block, shared memory and stream,
made once per such launch and shared by every thread (a cached config is never written again)."""

from __future__ import annotations

import threading

import pytest
from cuda.bindings import driver

from humming_cuda import launch

PDL = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
CLUSTER = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION


class Function:
    symbol = "humming_test"
    device_index = 0
    handle = 0


@pytest.fixture
def issued(monkeypatch):
    """(config, its fields when issued) of every cuLaunchKernelEx call."""
    calls = []

    class Driver:
        def __getattr__(self, name):
            return getattr(driver, name)

        @staticmethod
        def cuLaunchKernelEx(config, handle, address, extra):
            fields = (
                (config.gridDimX, config.gridDimY, config.gridDimZ),
                (config.blockDimX, config.blockDimY, config.blockDimZ),
                config.sharedMemBytes,
                int(config.hStream),
                [int(attr.id) for attr in config.attrs[: config.numAttrs]],
                [
                    (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z)
                    for attr in config.attrs[: config.numAttrs]
                    if int(attr.id) == int(CLUSTER)
                ],
            )
            calls.append((config, fields))
            return (launch._SUCCESS,)

    monkeypatch.setattr(launch, "driver", Driver())
    monkeypatch.setenv("HUMMING_PDL", "1")
    return calls


def test_configs_per_grid_and_stream_shared_by_threads(issued):
    launcher = launch.Launcher(Function(), [], pdl=True)
    block = (128, 1, 1)
    launches = [((4, 1, 1), 0x10), ((4, 1, 1), 0x20), ((8, 2, 1), 0x10), ((4, 1, 1), 0x10)]
    for grid, stream in launches:
        launcher.launch(grid, block, 1024, 0, stream)
    thread = threading.Thread(target=lambda: launcher.launch((4, 1, 1), block, 1024, 0, 0x20))
    thread.start(), thread.join()
    for (grid, stream), (_, fields) in zip([*launches, ((4, 1, 1), 0x20)], issued, strict=True):
        assert fields == (grid, block, 1024, stream, [int(PDL)], [])
    configs = [config for config, _ in issued]
    assert len({id(c) for c in configs[:3]}) == 3  # another stream or grid: another config
    assert configs[3] is configs[0]  # the same launch again: the same config, unchanged
    assert configs[4] is configs[1]  # and from another thread


def test_cache_is_bounded(issued, monkeypatch):
    monkeypatch.setattr(launch, "_MAX_CONFIGS", 4)
    launcher = launch.Launcher(Function(), [], pdl=True)
    for stream in range(1, 10):
        launcher.launch((1, 1, 1), (32, 1, 1), 0, 0, stream)
    assert len(launcher._configs) <= 4
    assert [fields[3] for _, fields in issued] == list(range(1, 10))


def test_clusters_follow_the_grids_z_for_split_k(issued, monkeypatch):
    """cluster_z_from_grid (cluster split-K): every launch's clusters are (1, 1, grid z), the
    tile's splits; a grid of one split launches without clusters (cuLaunchKernel, no config)."""
    plain = []
    monkeypatch.setattr(
        launch.driver,
        "cuLaunchKernel",
        lambda *args: plain.append(args[1:4]) or (launch._SUCCESS,),
        raising=False,
    )
    launcher = launch.Launcher(Function(), [], cluster_z_from_grid=True)
    block = (384, 1, 1)
    for grid in [(24, 1, 4), (24, 2, 5), (24, 1, 4), (24, 1, 1)]:
        launcher.launch(grid, block, 2048, 0, 0x10)
    assert [fields[0] for _, fields in issued] == [(24, 1, 4), (24, 2, 5), (24, 1, 4)]
    assert [fields[5] for _, fields in issued] == [[(1, 1, 4)], [(1, 1, 5)], [(1, 1, 4)]]
    assert issued[2][0] is issued[0][0]  # the same launch again: the same config
    assert plain == [(24, 1, 1)]
    with pytest.raises(ValueError, match="not both"):
        launch.Launcher(Function(), [], cluster=(1, 1, 2), cluster_z_from_grid=True)


def test_clusters_of_a_divisor_of_the_grids_z(issued):
    """cluster_z_divisor (several clusters of a tile's splits): clusters of gcd(grid z, divisor);
    a grid whose z has none in common launches with no cluster attribute; the divisor alone is
    refused."""
    launcher = launch.Launcher(Function(), [], cluster_z_from_grid=True, cluster_z_divisor=4)
    for grid in [(24, 1, 8), (24, 1, 6), (24, 1, 16), (24, 1, 3)]:
        launcher.launch(grid, (256, 1, 1), 2048, 0, 0x10)
    assert [fields[5] for _, fields in issued] == [[(1, 1, 4)], [(1, 1, 2)], [(1, 1, 4)], []]
    with pytest.raises(ValueError, match="cluster_z_divisor"):
        launch.Launcher(Function(), [], cluster_z_divisor=2)
