"""The `reference` device: runs every spec with the exact torch numerics, on CPU or any torch device.

It implements the full device contract so that dispatch, caching and the user API are exercised on
machines without an accelerator; its "compiled kernel" is the spec itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict

from .. import __version__
from ..packing import CanonicalWeight
from ..spec import QuantSpec
from .protocol import API_VERSION, Artifact, DeviceCaps, GemmProblem, KernelSource, Support


class ReferenceConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = "reference"


class CanonicalLayout:
    """The reference device computes straight from the canonical form."""

    identity = "canonical"

    def pack(
        self, cw: CanonicalWeight, device: torch.device | str | None = None
    ) -> dict[str, torch.Tensor]:
        cw = cw.to(device) if device is not None else cw
        packed = {"qweight": cw.qweight, "scales": cw.scales}
        if cw.zeros is not None:
            packed["zeros"] = cw.zeros
        if cw.global_scale is not None:
            packed["global_scale"] = cw.global_scale
        if cw.bias is not None:
            packed["bias"] = cw.bias
        return packed


@dataclass
class ReferenceKernel:
    """Dense or MoE GEMM straight from the canonical tensors with the exact numerics."""

    name: str
    spec: QuantSpec

    def __call__(
        self,
        *,
        x: torch.Tensor,
        out: torch.Tensor,
        act_scale: torch.Tensor | None = None,
        **tensors: torch.Tensor,
    ) -> torch.Tensor:
        from ..numerics import reference_gemm
        from ..numerics.moe import reference_moe_gemm

        cw = CanonicalWeight(
            spec=self.spec,
            n=tensors["qweight"].shape[-2],
            k=x.shape[-1] // self.spec.act.x_columns,  # x: [gate | up] with an input GLU
            qweight=tensors.pop("qweight"),
            scales=tensors.pop("scales"),
            zeros=tensors.pop("zeros", None),
            global_scale=tensors.pop("global_scale", None),
            bias=tensors.pop("bias", None),
        )
        if self.spec.layout == "moe":
            result = reference_moe_gemm(
                x,
                cw,
                tensors["sorted_token_ids"],
                tensors["expert_ids"],
                tensors["num_tokens_post_padded"],
                tensors["top_k"],
                tensors.get("topk_weights"),
                block_size=tensors["block_size"],
                act_scale_static=act_scale,
            )
        else:
            result = reference_gemm(x, cw, act_scale_static=act_scale)
        out.copy_(result)
        return out


class ReferenceDevice:
    name = "reference"
    persistent_cache = False  # nothing is compiled: skip the disk cache

    def caps(self, index: int = 0) -> DeviceCaps:
        return DeviceCaps(
            device="reference",
            arch="torch",
            name=f"torch {torch.__version__} (exact numerics)",
            features=["all-specs"],
            notes="exact fp32 reference; slow, for tests and CPU machines",
        )

    def fingerprint(self) -> str:
        return f"reference/{__version__}/torch-{torch.__version__}"

    def check(self, spec: QuantSpec, problem: GemmProblem) -> Support:
        return Support.yes()

    def candidates(self, spec: QuantSpec, problem: GemmProblem) -> list[ReferenceConfig]:
        return [ReferenceConfig()]

    def weight_layout(self, spec: QuantSpec, config: Any) -> CanonicalLayout:
        return CanonicalLayout()

    def render(self, spec: QuantSpec, config: Any) -> KernelSource:
        return KernelSource(name="reference_gemm", code=spec.to_json(), arch="torch")

    def compile(self, source: KernelSource) -> Artifact:
        return Artifact(binary=source.code.encode(), name=source.name)

    def load(self, artifact: Artifact) -> ReferenceKernel:
        return ReferenceKernel(name=artifact.name, spec=QuantSpec.from_json(artifact.binary))

    def for_arch(self, arch: str) -> ReferenceDevice:
        return self

    def moe_align(
        self,
        topk_ids: torch.Tensor,
        block_size: int,
        num_experts: int,
        expert_map: torch.Tensor | None = None,
        ignore_invalid_experts: bool = False,
        pad_sorted_ids: bool = False,
        zero_rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The reference numerics themselves (they read the expert counts back to the host)."""
        from ..numerics.moe import moe_align

        return moe_align(
            topk_ids,
            block_size,
            num_experts,
            expert_map,
            ignore_invalid_experts,
            pad_sorted_ids,
            zero_rows,
        )


class ReferencePlugin:
    name = "reference"
    priority = 0
    api_version = API_VERSION
    probe_reason = ""

    def probe(self) -> bool:
        return True

    def load(self) -> ReferenceDevice:
        return ReferenceDevice()


PLUGIN = ReferencePlugin()
