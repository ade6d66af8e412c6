"""PreparedLayer.config_for: the config of the kernel a call of so many rows runs, in the
layer's own buckets (an expert-stacked layer's go past the dense M buckets, to 65536 routed rows)."""

from __future__ import annotations

import torch

from humming_core.device.reference import ReferenceConfig, ReferenceDevice
from humming_core.numerics import quantize_weight
from humming_core.ops import MOE_BUCKETS, PreparedGemm, PreparedMoe
from humming_core.spec import W4A16_G128


class PerBucketDevice(ReferenceDevice):
    """The reference device with one config per M, named for it."""

    def candidates(self, spec, problem):
        return [ReferenceConfig(name=f"m{problem.m}")]


def test_moe_layer_reports_the_config_of_its_own_buckets():
    spec = W4A16_G128.replace(layout="moe")
    cw = quantize_weight(torch.randn(4, 32, 32) * 0.1, spec)
    layer = PreparedMoe(cw, device=PerBucketDevice(), buckets=(8, 16384, 65536))
    assert 16384 in MOE_BUCKETS
    names = {rows: layer.config_for(rows).name for rows in (1, 8, 9, 16384, 16385, 10**6)}
    assert names == {
        1: "m8",
        8: "m8",
        9: "m16384",
        16384: "m16384",
        16385: "m65536",
        10**6: "m65536",
    }
    assert layer.block_size(16384) == PreparedMoe.DEFAULT_BLOCK  # no block_m in this config


def test_dense_layer_reports_the_config_of_its_bucket():
    cw = quantize_weight(torch.randn(32, 32) * 0.1, W4A16_G128)
    layer = PreparedGemm(cw, device=PerBucketDevice(), buckets=(1, 16, 256))
    assert [layer.config_for(m).name for m in (1, 2, 16, 17, 4096)] == [
        "m1",
        "m16",
        "m16",
        "m256",
        "m256",
    ]
