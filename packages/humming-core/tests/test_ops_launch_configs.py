"""A layer binds every M bucket's kernel with that bucket's own config, also when configs render
the same code: a launch setting (a split-K count, say) is not part of the source, so kernels must
not be shared by source. Equal code still compiles once."""

from __future__ import annotations

import pytest
import torch

from humming_core.device import Artifact, KernelSource
from humming_core.device.reference import ReferenceConfig, ReferenceDevice
from humming_core.numerics import quantize_weight
from humming_core.ops import PreparedGemm
from humming_core.spec import W4A16_G128


class SplitConfig(ReferenceConfig):
    split: int = 1


class LaunchSettingDevice(ReferenceDevice):
    """The reference device with a config whose `split` depends on M but not the rendered code;
    kernels remember the config they were loaded with."""

    def __init__(self, persistent_cache: bool) -> None:
        self.persistent_cache = persistent_cache
        self.compiled: list[str] = []

    def candidates(self, spec, problem):
        return [SplitConfig(split=4 if problem.m <= 16 else 1)]

    def render(self, spec, config) -> KernelSource:
        return KernelSource(
            name="same_code", code=spec.to_json(), arch="torch", meta={"config": config}
        )

    def compile(self, source: KernelSource) -> Artifact:
        self.compiled.append(source.code)
        return Artifact(binary=source.code.encode(), name=source.name, meta={"source": source.meta})

    def load(self, artifact: Artifact):
        kernel = super().load(artifact)
        kernel.loaded_config = artifact.meta["source"]["config"]
        return kernel


@pytest.mark.parametrize("persistent_cache", [False, True])
def test_buckets_with_equal_code_keep_their_own_launch_settings(persistent_cache, monkeypatch):
    from humming_core.jit import clear_memo

    monkeypatch.setenv("HUMMING_DISABLE_DISK_CACHE", "1")
    clear_memo()
    device = LaunchSettingDevice(persistent_cache)
    layer = PreparedGemm(quantize_weight(torch.randn(32, 64) * 0.1, W4A16_G128), device=device)
    for bucket, kernel in layer.kernels.items():
        assert kernel.loaded_config == layer.configs[bucket], bucket
        assert kernel.loaded_config.split == (4 if bucket <= 16 else 1)
    assert layer.num_kernels == 2  # one kernel per distinct config
    # through the JIT cache the equal code compiles once; a device without it compiles per config
    assert len(device.compiled) == (1 if persistent_cache else 2)
    x = torch.randn(3, 64).half()
    torch.testing.assert_close(layer.run(x), layer.run(x))
