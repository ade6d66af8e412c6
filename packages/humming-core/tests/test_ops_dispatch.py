"""Which path a dense GEMM call takes: eager calls on plain tensors run the layer directly (the
custom op's dispatch costs more than the rest of the call); tracing, modes, subclasses and autograd
go through `humming::gemm`. And PreparedGemm's per-bucket calls with the weights bound."""

from __future__ import annotations

import importlib

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from humming_core.device import get_device
from humming_core.nn import QuantLinear
from humming_core.numerics import quantize_weight, reference_gemm
from humming_core.ops import M_BUCKETS, gemm, prepare
from humming_core.spec import W4A16_G128

REF = get_device("reference")
# `humming_core.ops.gemm` names the function; the module is where the op lives
gemm_module = importlib.import_module("humming_core.ops.gemm")


@pytest.fixture(scope="module")
def layer():
    torch.manual_seed(0)
    return prepare(quantize_weight(torch.randn(64, 128) * 0.1, W4A16_G128), REF)


@pytest.fixture
def op_calls(monkeypatch):
    """Counts calls of the custom op (and still runs it)."""
    calls = []
    real = gemm_module._gemm_op

    def counting(x, layer_id):
        calls.append(layer_id)
        return real(x, layer_id)

    monkeypatch.setattr(gemm_module, "_gemm_op", counting)
    return calls


class PassthroughFunctions(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class Passthrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_plain_eager_calls_skip_the_op(layer, op_calls):
    x = torch.randn(3, 128).half()
    linear = QuantLinear.from_canonical(
        quantize_weight(torch.randn(32, 128), W4A16_G128), "reference"
    )
    torch.testing.assert_close(gemm(x, layer), layer.run(x), rtol=0, atol=0)
    linear(x)
    assert op_calls == []


@pytest.mark.parametrize(
    "situation", ["requires_grad", "subclass", "dispatch_mode", "function_mode"]
)
def test_traced_or_intercepted_calls_use_the_op(layer, op_calls, situation):
    x = torch.randn(3, 128).half()
    want = layer.run(x)
    if situation == "requires_grad":
        got = gemm(x.float().requires_grad_().half(), layer)
    elif situation == "subclass":
        got = gemm(torch.nn.Parameter(x, requires_grad=False), layer)
    elif situation == "dispatch_mode":
        with Passthrough():
            got = gemm(x, layer)
    else:
        with PassthroughFunctions():
            got = gemm(x, layer)
    assert op_calls == [layer.id]
    torch.testing.assert_close(got.detach(), want, rtol=0, atol=0)


def test_compiled_calls_use_the_op(layer, op_calls):
    x = torch.randn(5, 128).half()
    fn = torch.compile(lambda t: gemm(t, layer) + 1, fullgraph=True, backend="eager")
    torch.testing.assert_close(fn(x), layer.run(x) + 1, rtol=0, atol=0)
    assert op_calls  # dynamo traced the op (an eager run would not have called it)


def test_every_bucket_has_a_call_and_large_m_uses_the_last(layer):
    assert len(layer._calls) == len(M_BUCKETS) + 1 and layer._calls[-1] is layer._calls[-2]
    cw = quantize_weight(torch.randn(64, 128) * 0.1, W4A16_G128)
    fresh = prepare(cw, REF)
    for m in (1, 3, M_BUCKETS[-1] + 5):
        x = torch.randn(m, 128).half()
        torch.testing.assert_close(fresh.run(x), reference_gemm(x, cw), rtol=0, atol=0)


def test_out_is_returned_as_given_and_leading_dims_kept(layer):
    x = torch.randn(2, 3, 128).half()
    out = torch.empty(2, 3, 64, dtype=torch.float16)
    assert layer.run(x, out=out).data_ptr() == out.data_ptr()
    flat_out = torch.empty(6, 64, dtype=torch.float16)
    assert layer.run(x.reshape(6, 128), out=flat_out) is flat_out
    torch.testing.assert_close(flat_out.view(2, 3, 64), out, rtol=0, atol=0)
