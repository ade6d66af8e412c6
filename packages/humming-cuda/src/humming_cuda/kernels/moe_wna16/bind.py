"""Bind a loaded MoE WnA16 function: argument checks, output zeroing, grid, launch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from humming_core.spec import QuantSpec

from ...args import ScalarArg, Signature, TensorArg
from ...caps import caps_for_arch
from ...launch import Launcher
from ..moe_bind import check_routing, flatten_topk_weights, launch_blocks
from ..wna16.bind import layout_args
from ..wna16.config import KernelFormat
from .config import MoeWna16Config, smem_bytes

if TYPE_CHECKING:
    from .call import MoeWna16Call

_OUT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
# (parameter, dim) of the entry's scalars, in its order
SCALARS = (
    ("N", "N"),
    ("n_out", "NOUT"),
    ("K", "K"),
    ("lda", "LDA"),
    ("ldc", "LDC"),
    ("n_pad", "NP"),
    ("k_tiles", "KT"),
    ("groups", "G"),
    ("top_k", "TOPK"),
    ("numel", "NUMEL"),
    ("num_ids", "LEN"),
    ("num_experts", "E"),
)


def signature(
    fmt: KernelFormat,
    name: str,
    scalars: tuple[tuple[str, str], ...] = SCALARS,
    routing_ready: bool = False,
) -> Signature:
    """Parameters in the order of HUMMING_MOE_WNA16_ENTRY (include/humming/kernel/moe_wna16.cuh);
    another MoE WnA16 entry with the same pointers passes its own `scalars`. `a_scales`: per-token
    activation scales, read only by kernels with a row-scaled epilogue policy (moe_wna16_a8).
    `routing_ready`: the decode entry's last parameter (kernel/moe_wna16_decode.cuh)."""
    i32 = torch.int32
    ready = (ScalarArg("routing_ready", "int32"),) if routing_ready else ()
    return Signature(
        *layout_args(fmt, experts=("E",)),
        TensorArg("topk_weights", torch.float32, ("NUMEL",), optional=True, align=4),
        TensorArg("sorted_token_ids", i32, ("LEN",), align=4),
        TensorArg("expert_ids", i32, ("BLOCKS",), align=4),
        TensorArg("num_tokens_post_padded", i32, (1,), align=4),
        TensorArg("out", _OUT[fmt.out], ("NUMEL", "NOUT"), layout="strided", align=4),
        *(ScalarArg(n, "int32", dim=d) for n, d in scalars),
        TensorArg("a_scales", torch.float32, ("M",), optional=True, align=4),
        *ready,
        kernel=name,
    )


class MoeWna16Kernel:
    """`kernel(x=, out=, sorted_token_ids=, expert_ids=, num_tokens_post_padded=, top_k=,
    block_size=, topk_weights=None, **packed)`: see humming_core.ops.moe.PreparedMoe.run.

    `block_size` must be the config's block_m (one CTA row is one alignment block). Rows of `out`
    that no block routes are left as they are (PreparedMoe.run zeroes them when they are read)."""

    def __init__(self, function: Any, spec: QuantSpec, config: MoeWna16Config) -> None:
        self.fmt = KernelFormat.from_spec(spec)
        self.glu = spec.epilogue.glu != "none"
        self.config = config
        # The decode form takes routing_ready and, on sm_90+, launches with PDL
        # (kernel/moe_wna16_decode.cuh): it waits for the previous kernel itself.
        self.decode = bool(getattr(config, "tokens", 0))
        self.name = function.symbol
        self.function = function
        self.signature = self._signature()
        pdl = self.decode and caps_for_arch(config.arch).has("pdl")
        self.launcher = Launcher(function, self.signature.ctypes, pdl=pdl)
        self.smem = self._smem_bytes()
        function.reserve_smem(self.smem)
        self.ctas = self._persistent_ctas()

    def _persistent_ctas(self) -> int:
        """A persistent kernel's grid (CTAs resident at once); 0: one CTA per tile."""
        return 0

    # The entry's parameters and shared memory: what a MoE WnA16 kernel with this call contract
    # and another entry (moe_wna16_wgmma) overrides.
    def _signature(self) -> Signature:
        return signature(self.fmt, self.name, routing_ready=self.decode)

    def _smem_bytes(self) -> int:
        return smem_bytes(self.fmt, self.config)

    def _check_call(self, values: dict[str, Any]) -> None:
        out = values["out"]
        check_routing(self.name, self.config.block_m, values)
        if out.dim() != 2 or out.stride(-1) != 1:
            raise ValueError(
                f"{self.name}: argument 'out': expected a 2-D tensor with innermost stride 1, got "
                f"shape {tuple(out.shape)} strides {tuple(out.stride())}"
            )

    def _dims(self, values: dict[str, Any]) -> dict[str, int]:
        x, out, qw = values["x"], values["out"], values["qweight"]
        nt, kt = qw.shape[1], qw.shape[2]
        n_out = out.shape[1]
        packed_n = nt * 64 if self.glu else n_out
        if nt * 64 < (2 * n_out if self.glu else n_out) or kt * 16 < x.shape[1]:
            raise ValueError(
                f"{self.name}: packed weights hold {nt * 64}x{kt * 16} (N x K, padded) but the call "
                f"needs {n_out} output columns and K={x.shape[1]}: pack this layer with this "
                "family's layout"
            )
        scales = values.get("scales")
        return {
            "N": packed_n,
            "NOUT": n_out,
            "LDA": x.stride(0),
            "LDC": out.stride(0),
            "NP": nt * 64,
            "G": scales.shape[1] if scales is not None else 0,
            "TOPK": values["top_k"],
            "NUMEL": x.shape[0] * values["top_k"],
            "C": 1 if self.fmt.epi_scale == "tensor" else nt * 64,
        }

    def checked(self, values: dict[str, Any]) -> tuple[dict[str, int], list]:
        """Check every argument: (dims, parameters in order). Raises naming what is wrong."""
        values = dict(values)
        ready = values.pop("routing_ready", False)
        self._check_call(values)
        flatten_topk_weights(values)
        dims = self._dims(values)
        launch = {k: v for k, v in values.items() if k not in ("top_k", "block_size")}
        if self.decode:
            launch["routing_ready"] = int(bool(ready))
        return self.signature.bind(launch, dims, self.function.device_index)

    def __call__(self, **values: Any) -> None:
        dims, params = self.checked(values)
        launch_blocks(
            self, values["out"], dims["N"], dims["LEN"], lambda: params, self.smem, self.ctas
        )

    def prepare(self, **packed: torch.Tensor) -> MoeWna16Call:
        from .call import MoeWna16Call

        return MoeWna16Call(self, packed)
