"""ActSpec.input_glu: the quantizer's input is the previous layer's [gate | up] output and the GLU
is applied before quantizing — the spec's rules, and the reference (numerics.act.glu_input,
quantize_act, reference_gemm) that the kernels are checked against."""

from __future__ import annotations

import math

import pytest
import torch

from humming_core.numerics import quantize_act, quantize_weight, reference_gemm
from humming_core.numerics.act import glu_input
from humming_core.numerics.quant import dequantize_weight
from humming_core.spec import ActSpec, presets

GATES = {
    "silu_mul": lambda g: g * torch.sigmoid(g),
    "gelu_mul": lambda g: 0.5 * g * (1 + torch.erf(g / math.sqrt(2))),
    "gelu_tanh_mul": lambda g: (
        0.5 * g * (1 + torch.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g**3)))
    ),
}


def _act(glu: str, dtype: str = "e4m3", gran: str = "token") -> ActSpec:
    return ActSpec(
        dtype=dtype,
        quant="dynamic",
        granularity=gran,
        group_size=128 if gran == "group" else None,
        input_glu=glu,
    )


def _x(m: int, k2: int, dtype=torch.bfloat16) -> torch.Tensor:
    return (torch.randn(m, k2, generator=torch.Generator().manual_seed(m + k2)) * 3).to(dtype)


@pytest.mark.parametrize("glu", list(GATES))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_glu_input_is_the_gate_activation_times_up_rounded_once(glu, dtype):
    x = _x(5, 256, dtype)
    y = glu_input(x, _act(glu))
    gate, up = x[:, :128].double(), x[:, 128:].double()
    exact = GATES[glu](gate) * up
    assert y.dtype == dtype and y.shape == (5, 128)
    # one rounding of the fp32 result to the 16-bit type (half an ulp of it), after the fp32
    # evaluation's error: a few ulp of |gate * up| (the gate factor 1 + erf / 1 + tanh / sigmoid
    # is computed to about 2^-24 absolute, which is relative only where it is not small)
    ulp = 2.0 ** (-10 if dtype == torch.float16 else -7)
    bound = exact.abs() * ulp / 2 + (gate * up).abs() * 2.0**-21 + 2.0**-30
    assert ((y.double() - exact).abs() <= bound).all()
    # a swapped layout (up first) or another gate would not be
    assert not torch.equal(y, (GATES[glu](x[:, 128:].float()) * x[:, :128].float()).to(dtype))


def test_quantize_act_quantizes_the_glu_output():
    act = _act("silu_mul", gran="group")
    x = _x(3, 512)
    plain = act.model_copy(update={"input_glu": "none"})
    values, scales = quantize_act(x, act)
    expected_values, expected_scales = quantize_act(glu_input(x, act), plain)
    assert values.shape == (3, 256) and scales.shape == (3, 2)
    assert torch.equal(values, expected_values) and torch.equal(scales, expected_scales)


def test_reference_gemm_takes_gate_and_up_columns():
    spec = presets.W8A8_FP8.replace(act=_act("gelu_tanh_mul"))
    cw = quantize_weight(torch.randn(64, 128, generator=torch.Generator().manual_seed(1)), spec)
    x = _x(4, 256)
    plain = spec.replace(act=spec.act.model_copy(update={"input_glu": "none"}))
    values, scales = quantize_act(glu_input(x, spec.act), plain.act)
    expected = (values * scales) @ dequantize_weight(cw).T
    assert torch.equal(reference_gemm(x, cw), expected.to(torch.bfloat16))
    with pytest.raises(ValueError, match=r"\[gate \| up\] = 2K = 256"):
        reference_gemm(x[:, :128], cw)
    with pytest.raises(ValueError, match=r"x must be \[M, 2K\]"):
        glu_input(x[:, :255], spec.act)


def test_spec_rules_name_what_is_allowed():
    with pytest.raises(ValueError, match="int8 / e4m3 activations"):
        ActSpec(input_glu="silu_mul")  # 16-bit activations: run the GLU before the layer
    with pytest.raises(ValueError, match="int8 / e4m3 activations"):
        ActSpec(
            dtype="e2m1", quant="dynamic", granularity="group", group_size=32, input_glu="silu_mul"
        )
    with pytest.raises(ValueError, match="w13's epilogue"):
        presets.W8A8_FP8.replace(act=_act("silu_mul"), layout="moe")
    with pytest.raises(ValueError):
        _act("swiglu_oai")  # gpt-oss's clamped SwiGLU is a MoE epilogue, not an input GLU
    assert _act("silu_mul", dtype="int8").input_glu == "silu_mul"


def test_layers_take_gate_and_up_on_the_reference_device():
    from humming_core.nn import QuantLinear

    spec = presets.W8A8_FP8.replace(act=_act("silu_mul"))
    w = torch.randn(64, 128, generator=torch.Generator().manual_seed(2))
    layer = QuantLinear.from_float(w, spec, device="reference")
    assert layer.in_features == 256 and "input_glu=silu_mul" in repr(layer)
    x = _x(6, 256).reshape(2, 3, 256)  # leading dims are flattened and restored
    y = layer(x)
    assert y.shape == (2, 3, 64)
    assert torch.equal(
        y.reshape(6, 64), reference_gemm(x.reshape(6, 256), quantize_weight(w, spec))
    )
    with pytest.raises(ValueError, match=r"x takes \[gate \| up\] = 256"):
        layer(_x(6, 128))
