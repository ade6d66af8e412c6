"""`humming_core.ops.gemm`: the dense quantized GEMM, as a torch custom op.

The op takes the prepared layer by id so torch.compile traces it as one opaque node (a fake
implementation gives the output's shape and dtype) instead of breaking the graph. Dispatching a
custom op costs tens of microseconds in eager mode, more than the rest of the call, so eager
calls on plain tensors run the layer directly (`run_layer`); anything that traces or intercepts
(dynamo, export, fake or functional tensors, dispatch and function modes, autograd) gets the op.
"""

from __future__ import annotations

import weakref

import torch

from ..packing import CanonicalWeight
from .layer import PreparedGemm, layer_by_id


@torch.library.custom_op("humming::gemm", mutates_args=())
def _gemm_op(x: torch.Tensor, layer_id: int) -> torch.Tensor:
    return layer_by_id(layer_id).run(x)


@_gemm_op.register_fake
def _gemm_fake(x: torch.Tensor, layer_id: int) -> torch.Tensor:
    layer = layer_by_id(layer_id)
    return x.new_empty((*x.shape[:-1], layer.n_out), dtype=layer.out_dtype)


def _traced(x: torch.Tensor) -> bool:
    """Whether this call must go through the op: dynamo first (it folds is_compiling to True and
    never traces the rest), then tensor subclasses, autograd, and active torch modes."""
    return (
        torch.compiler.is_compiling()
        or type(x) is not torch.Tensor
        or x.requires_grad
        or torch._C._len_torch_dispatch_stack() > 0
        or torch._C._is_torch_function_mode_enabled()
    )


def run_layer(x: torch.Tensor, layer: PreparedGemm) -> torch.Tensor:
    """The layer's GEMM on x: directly in plain eager mode, as the `humming::gemm` op otherwise."""
    if _traced(x):
        return _gemm_op(x, layer.id)
    return layer.run(x)


_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def prepare(weight: CanonicalWeight | PreparedGemm, device: str | None = None) -> PreparedGemm:
    """Bind a canonical weight to a device, packing it and building all its kernels now."""
    if isinstance(weight, PreparedGemm):
        return weight
    if not isinstance(weight, CanonicalWeight):
        raise TypeError(f"expected a CanonicalWeight or PreparedGemm, got {type(weight).__name__}")
    if weight.is_moe:
        raise ValueError(
            "this weight has an expert dimension: use humming_core.ops.moe_gemm / fused_moe"
        )
    return PreparedGemm(weight, device)


def gemm(x: torch.Tensor, weight: CanonicalWeight | PreparedGemm) -> torch.Tensor:
    """out[..., N] = epilogue(x[..., K] @ dequant(weight)^T (+ the weight's bias, if it has one)).

    A `CanonicalWeight` is prepared on first use (kernels compile then) and remembered; prepare it
    up front with `prepare()` or use `humming_core.nn.QuantLinear` to keep compilation out of the
    forward pass.
    """
    if isinstance(weight, CanonicalWeight):
        layer = _PREPARED.get(weight)
        if layer is None:
            layer = _PREPARED[weight] = prepare(weight)
    else:
        layer = prepare(weight)
    return run_layer(x, layer)
