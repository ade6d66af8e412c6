"""PreparedMoe builds its device's routing alignment when the layer is built (PreparesMoeAlign), so
fused_moe compiles nothing on its first call; devices without the step are left alone."""

from __future__ import annotations

import torch

from humming_core.device import PreparesMoeAlign
from humming_core.device.reference import ReferenceDevice
from humming_core.numerics import quantize_weight
from humming_core.ops import ROUTING_ID_DTYPES, PreparedGemm, PreparedMoe, fused_moe
from humming_core.spec import W4A16_G128


class PreparingDevice(ReferenceDevice):
    """The reference device, recording every ahead-of-time alignment build it is asked for."""

    def __init__(self) -> None:
        self.prepared: list[tuple] = []

    def prepare_moe_align(self, id_dtypes):
        self.prepared.append(tuple(id_dtypes))


def _moe(n: int, k: int, glu: bool):
    epilogue = {"glu": "silu_mul"} if glu else {}
    spec = W4A16_G128.replace(layout="moe", epilogue=epilogue)
    return quantize_weight(torch.randn(4, n, k) * 0.1, spec)


def test_layer_construction_prepares_both_routing_id_dtypes():
    assert (torch.int32, torch.int64) == ROUTING_ID_DTYPES  # vLLM's ids and torch.topk's
    device = PreparingDevice()
    assert isinstance(device, PreparesMoeAlign)
    w13 = PreparedMoe(_moe(64, 32, glu=True), device=device)
    assert device.prepared == [ROUTING_ID_DTYPES]
    w2 = PreparedMoe(_moe(32, 32, glu=False), device=device)
    assert device.prepared == [ROUTING_ID_DTYPES] * 2
    ids = torch.tensor([[0, 3], [1, 2]], dtype=torch.int32)
    out = fused_moe(torch.randn(2, 32).half(), torch.rand(2, 2), ids, w13, w2)
    assert out.shape == (2, 32) and len(device.prepared) == 2, "a forward pass prepared again"


def test_dense_layers_and_devices_without_the_step_prepare_nothing():
    assert not isinstance(ReferenceDevice(), PreparesMoeAlign)
    PreparedMoe(_moe(32, 32, glu=False), device=ReferenceDevice(), buckets=(1,))
    device = PreparingDevice()
    PreparedGemm(quantize_weight(torch.randn(32, 32) * 0.1, W4A16_G128), device=device)
    assert device.prepared == []
