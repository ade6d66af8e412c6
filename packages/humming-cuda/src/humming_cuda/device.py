"""CudaDevice: humming's NVIDIA device (the Device protocol of humming_core.device).

The device itself knows no quantization format: spec-specific steps go to the first registered
kernel family (humming_cuda.kernels.FAMILIES) that supports the spec. Generic steps (capabilities,
compile, load) are its own.

How a loaded cubin finds its family, spec and config again: `render` puts them (JSON) in the
source's meta under "binding"; the compile cache hands every request its own source meta back in
`artifact.meta["source"]`, so configs that render identical code (e.g. differing only in a
run-time split-K factor) share one compiled binary, and each is bound with its own config.
"""

from __future__ import annotations

import dataclasses

from humming_core.device import Artifact, DeviceCaps, GemmProblem, Kernel, KernelSource, Support
from humming_core.env import ENV
from humming_core.spec import QuantSpec

from . import compiler, loader
from .caps import caps_for_arch
from .headers import humming_include_root
from .kernels import FAMILIES, KernelConfig, KernelFamily, WeightLayout, family_named


class CudaDevice:
    name = "cuda"

    def __init__(self, arch: str | None = None) -> None:
        self._arch = arch
        self._detected: dict[int, DeviceCaps] = {}

    @classmethod
    def for_arch(cls, arch: str) -> CudaDevice:
        """A device bound to another arch's row: renders and compiles for it without a GPU."""
        caps_for_arch(arch)  # fail early, with the list of known arches
        return cls(arch=arch)

    @property
    def torch_device(self):
        """Where core packs a layer's weights: the caller's current CUDA device."""
        import torch

        return torch.device("cuda", torch.cuda.current_device())

    # ---- capabilities -------------------------------------------------------------------------
    def caps(self, index: int | None = None) -> DeviceCaps:
        if self._arch is not None:
            return caps_for_arch(self._arch)
        if index is None:
            import torch

            index = torch.cuda.current_device()
        if index not in self._detected:
            from .detect import detect

            self._detected[index] = detect(index)
        return self._detected[index]

    def fingerprint(self) -> str:
        return compiler.fingerprint()

    # ---- spec-specific steps, delegated to kernel families ------------------------------------
    def _family_for(self, spec: QuantSpec, problem: GemmProblem) -> tuple[KernelFamily | None, str]:
        caps = self.caps()
        if not FAMILIES:
            return (
                None,
                "no cuda kernel family is registered (humming_cuda.kernels.FAMILIES is empty)",
            )
        reasons = []
        supporting = []
        allow_unverified = ENV.HUMMING_UNVERIFIED_KERNELS
        for family in FAMILIES:
            unverified = getattr(family, "unverified_reason", lambda spec: "")(spec)
            if unverified and not allow_unverified:
                # Written and compile-tested, but never run on a GPU: never a silent default.
                reasons.append(
                    f"{family.name}: {unverified} (set HUMMING_UNVERIFIED_KERNELS=1 to use it "
                    "anyway)"
                )
                continue
            support = family.supports(spec, problem, caps)
            if not support:
                reasons.append(f"{family.name}: {support.reason}")
                continue
            prefers = getattr(family, "prefers", None)
            if prefers is None or prefers(spec, problem, caps):
                return family, ""
            supporting.append(family)
        if supporting:
            # Every family able to run it would rather leave it to another: the first still runs it.
            return supporting[0], ""
        return None, f"no cuda kernel family supports this spec on {caps.arch}: " + "; ".join(
            reasons
        )

    def check(self, spec: QuantSpec, problem: GemmProblem) -> Support:
        family, reason = self._family_for(spec, problem)
        return Support.yes() if family is not None else Support.no(reason)

    def candidates(self, spec: QuantSpec, problem: GemmProblem) -> list[KernelConfig]:
        family, reason = self._family_for(spec, problem)
        if family is None:
            raise ValueError(reason)
        return family.candidates(spec, problem, self.caps())

    def weight_layout(self, spec: QuantSpec, config: KernelConfig) -> WeightLayout:
        return family_named(config.family).weight_layout(spec, config, self.caps())

    def render(self, spec: QuantSpec, config: KernelConfig) -> KernelSource:
        family = family_named(config.family)
        source = family.render(spec, config, self.caps())
        binding = {
            "family": family.name,
            "spec": spec.model_dump(mode="json"),
            "config": config.model_dump(mode="json"),
        }
        # humming's own header tree is always on the include path, so it always enters the key
        headers = tuple(dict.fromkeys((str(humming_include_root()), *map(str, source.headers))))
        return dataclasses.replace(
            source, headers=headers, meta={**source.meta, "binding": binding}
        )

    # ---- generic steps ------------------------------------------------------------------------
    def compile(self, source: KernelSource) -> Artifact:
        return compiler.compile_source(source)

    def load(self, artifact: Artifact) -> Kernel:
        binding = artifact.meta.get("source", {}).get("binding")
        if binding is None:
            raise ValueError(
                f"artifact {artifact.name!r} carries no family/spec/config binding: its source was "
                "not rendered by CudaDevice.render (or the artifact did not come from "
                "humming_core.jit.get_or_build); load it with humming_cuda.loader.load and bind it "
                "with its family yourself"
            )
        caps = self.caps()
        built_for = artifact.meta.get("arch")
        if built_for != caps.arch:
            raise ValueError(
                f"artifact {artifact.name!r} was compiled for {built_for} but this GPU is "
                f"{caps.arch} ({caps.name}): render and compile it with this device"
            )
        family = family_named(binding["family"])
        spec = QuantSpec.model_validate(binding["spec"])
        config = family.config_type.model_validate(binding["config"])
        function = loader.load(artifact)
        return family.bind(function, spec, config, caps)

    # ---- routing ------------------------------------------------------------------------------
    def moe_align(
        self,
        topk_ids,
        block_size: int,
        num_experts: int,
        expert_map=None,
        ignore_invalid_experts: bool = False,
        pad_sorted_ids: bool = False,
        zero_rows=None,
    ):
        """vLLM's moe_align_block_size on the ids' GPU (humming_core.numerics.moe.moe_align's
        contract, position for position) with no host synchronisation; see kernels.moe_align."""
        from .kernels.moe_align import moe_align_kernel

        if not topk_ids.is_cuda:
            raise ValueError(
                f"CudaDevice.moe_align: topk_ids is on {topk_ids.device}; move it to a CUDA device "
                "or use humming_core.numerics.moe.moe_align for CPU tensors"
            )
        kernel = moe_align_kernel(self, topk_ids.device.index, topk_ids.dtype)
        return kernel(
            topk_ids,
            block_size,
            num_experts,
            expert_map,
            ignore_invalid_experts,
            pad_sorted_ids,
            zero_rows,
        )

    def prepare_moe_align(self, id_dtypes: tuple) -> None:
        """Build the moe_align kernels for topk_ids of each dtype on the current GPU now
        (humming_core.device.PreparesMoeAlign; called when a MoE layer is built)."""
        import torch

        from .kernels.moe_align import moe_align_kernels

        moe_align_kernels(self, torch.cuda.current_device(), tuple(id_dtypes))

    def __repr__(self) -> str:
        bound = f"arch={self._arch!r}" if self._arch else "detected"
        return f"CudaDevice({bound})"
