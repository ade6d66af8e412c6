"""The user API end to end on the reference device: prepare, gemm custom op, QuantLinear, errors."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from humming_core.device import get_device
from humming_core.nn import QuantLinear
from humming_core.numerics import quantize_weight, reference_gemm
from humming_core.ops import M_BUCKETS, PreparedGemm, bucket_of, gemm, prepare
from humming_core.spec import W4A16_G128
from humming_core.testing.conformance import cases, run_case

REF = get_device("reference")


def test_bucket_of():
    assert bucket_of(1) == 1 and bucket_of(3) == 4 and bucket_of(100) == 128
    assert bucket_of(10**6) == M_BUCKETS[-1]


def test_reference_layer_builds_one_kernel_for_all_buckets():
    cw = quantize_weight(torch.randn(64, 128), W4A16_G128)
    layer = PreparedGemm(cw, REF)
    assert layer.num_kernels == 1
    assert set(layer.kernels) == set(M_BUCKETS)


def test_gemm_matches_reference_and_keeps_leading_dims():
    torch.manual_seed(0)
    cw = quantize_weight(torch.randn(96, 256) * 0.1, W4A16_G128)
    x = torch.randn(2, 3, 256).to(torch.float16)
    layer = prepare(cw, REF)
    out = gemm(x, layer)
    assert out.shape == (2, 3, 96) and out.dtype == torch.float16
    torch.testing.assert_close(
        out.reshape(6, 96), reference_gemm(x.reshape(6, 256), cw), rtol=0, atol=0
    )


def test_gemm_traces_under_torch_compile():
    cw = quantize_weight(torch.randn(64, 128) * 0.1, W4A16_G128)
    layer = prepare(cw, REF)
    x = torch.randn(5, 128).to(torch.float16)
    fn = torch.compile(lambda t: gemm(t, layer) * 2, fullgraph=True, backend="eager")
    torch.testing.assert_close(fn(x), gemm(x, layer) * 2, rtol=0, atol=0)


def test_bias_must_match_the_spec():
    cw = quantize_weight(torch.randn(64, 128), W4A16_G128)
    with pytest.raises(ValueError, match=r"has bias but its spec says epilogue\.bias=False"):
        PreparedGemm(dataclasses.replace(cw, bias=torch.zeros(64, dtype=torch.float16)), REF)


def test_quant_linear_from_float_with_bias():
    torch.manual_seed(1)
    w, b = torch.randn(48, 128) * 0.1, torch.randn(48).to(torch.float16)
    layer = QuantLinear.from_float(w, W4A16_G128, bias=b, device="reference")
    x = torch.randn(4, 128).to(torch.float16)
    cw = quantize_weight(w, W4A16_G128)
    ref = reference_gemm(x, cw, bias=b)
    torch.testing.assert_close(layer(x), ref, rtol=0, atol=0)
    assert "int4" in repr(layer) and "reference" in repr(layer)


def test_bad_inputs_are_refused_clearly():
    cw = quantize_weight(torch.randn(64, 128), W4A16_G128)
    layer = prepare(cw, REF)
    with pytest.raises(ValueError, match="K=128"):
        layer.run(torch.randn(2, 64).to(torch.float16))
    with pytest.raises(ValueError, match=r"torch\.float16 activations"):
        layer.run(torch.randn(2, 128).to(torch.bfloat16))
    with pytest.raises(ValueError, match="out must be"):
        layer.run(torch.randn(2, 128).to(torch.float16), out=torch.empty(2, 64))


@pytest.mark.parametrize("case", cases(shapes=((3, 64, 256),)), ids=lambda c: c.id)
def test_conformance_suite_on_reference(case):
    result = run_case(case, REF)
    assert result.ok, (
        f"{case.id}: worst error/bound {result.worst:.3g}, unwritten {result.unwritten}"
    )
