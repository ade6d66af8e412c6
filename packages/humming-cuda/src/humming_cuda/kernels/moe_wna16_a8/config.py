"""MoE W4A8 configuration: one of the WnA16 MoE kernels' configs (moe_wna16's, decode form
included, or moe_wna16_wgmma's) run on the exact 16-bit codes of the quantized activations, or
moe_wna16_wgmma's e4m3 form (`inner.e4m3`) on the 8-bit codes themselves."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import KernelConfig
from ..moe_wna16.config import MoeWna16Config
from ..moe_wna16_wgmma.config import MoeWna16WgmmaConfig


class MoeWna16A8Config(KernelConfig):
    """`inner`: the WnA16 MoE kernel's config; its block_m is the routing block size."""

    family: Literal["moe_wna16_a8"] = "moe_wna16_a8"
    arch: str
    inner: MoeWna16Config | MoeWna16WgmmaConfig = Field(discriminator="family")

    @property
    def block_m(self) -> int:
        return self.inner.block_m

    @property
    def threads(self) -> int:
        return self.inner.threads
