"""The epilogue against hand-written formulas (Python math on each element)."""

from __future__ import annotations

import math

import pytest
import torch

from humming_core.numerics.epilogue import apply_epilogue
from humming_core.spec import EpilogueSpec


def _acc(m: int = 3, n: int = 8) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    acc = torch.randn(m, n, generator=g) * 4
    acc[0, :4] = torch.tensor([-9.0, 9.0, 7.0, -7.5])  # around the swiglu limits
    return acc


def _map(acc: torch.Tensor, fn) -> torch.Tensor:
    return torch.tensor([[fn(float(v)) for v in row] for row in acc.tolist()])


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


FORMULAS = {
    "none": lambda v: v,
    "relu": lambda v: max(v, 0.0),
    "silu": lambda v: v * _sigmoid(v),
    "gelu": lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))),
    "gelu_tanh": lambda v: (
        0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))
    ),
}


@pytest.mark.parametrize("activation", sorted(FORMULAS))
def test_activations(activation):
    acc = _acc()
    out = apply_epilogue(acc, EpilogueSpec(activation=activation))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, _map(acc, FORMULAS[activation]), rtol=1e-6, atol=1e-6)


def _gate_up(acc: torch.Tensor, layout: str):
    n = acc.shape[1]
    if layout == "split":
        return acc[:, : n // 2], acc[:, n // 2 :]
    return acc[:, 0::2], acc[:, 1::2]


@pytest.mark.parametrize("layout", ["split", "interleaved"])
@pytest.mark.parametrize(
    ("glu", "gate_fn"), [("silu_mul", "silu"), ("gelu_mul", "gelu"), ("gelu_tanh_mul", "gelu_tanh")]
)
def test_glu(layout, glu, gate_fn):
    acc = _acc()
    out = apply_epilogue(acc, EpilogueSpec(glu=glu, glu_layout=layout))
    gate, up = _gate_up(acc, layout)
    expected = _map(gate, FORMULAS[gate_fn]) * up
    assert out.shape == (3, 4)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", ["split", "interleaved"])
def test_swiglu_oai_matches_gpt_oss(layout):
    acc = _acc()
    epi = EpilogueSpec(glu="swiglu_oai", glu_layout=layout, swiglu_limit=7.0, swiglu_alpha=1.702)
    out = apply_epilogue(acc, epi)
    gate, up = _gate_up(acc, layout)

    def one(g: float, u: float) -> float:
        g = min(g, 7.0)
        u = max(min(u, 7.0), -7.0)
        return (u + 1.0) * g * _sigmoid(1.702 * g)

    expected = torch.tensor(
        [
            [one(g, u) for g, u in zip(gr, ur, strict=True)]
            for gr, ur in zip(gate.tolist(), up.tolist(), strict=True)
        ]
    )
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)


def test_bias_is_added_before_the_activation():
    acc = torch.tensor([[-1.0, 2.0]])
    bias = torch.tensor([3.0, -5.0])
    out = apply_epilogue(acc, EpilogueSpec(bias=True, activation="relu"), bias=bias)
    assert out.tolist() == [[2.0, 0.0]]  # relu(acc + bias), not relu(acc) + bias = [3, -3]


def test_row_weight_and_output_dtype():
    acc = _acc(m=4, n=6)
    w = torch.tensor([0.5, 1.0, 2.0, 0.0])
    epi = EpilogueSpec(activation="silu", out_dtype="bf16")
    out = apply_epilogue(acc, epi, row_weight=w)
    assert out.dtype == torch.bfloat16
    expected = (_map(acc, FORMULAS["silu"]) * w.reshape(4, 1)).to(torch.bfloat16)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert apply_epilogue(acc, EpilogueSpec(), out_dtype="fp16").dtype == torch.float16


def test_missing_inputs_are_reported():
    acc = _acc()
    with pytest.raises(ValueError, match="no bias was given"):
        apply_epilogue(acc, EpilogueSpec(bias=True))
    with pytest.raises(ValueError, match="no row weight"):
        apply_epilogue(acc, EpilogueSpec(topk_weight=True))
    with pytest.raises(ValueError, match="even N"):
        apply_epilogue(acc[:, :5], EpilogueSpec(glu="silu_mul"))
    with pytest.raises(ValueError, match="bias has 3 entries"):
        apply_epilogue(acc, EpilogueSpec(bias=True), bias=torch.zeros(3))
