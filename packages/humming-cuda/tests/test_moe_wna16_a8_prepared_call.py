"""The MoE W4A8 launch path without a GPU (fake_launch): a prepared call (one layer's expert weights
bound to a MoeWna16A8Kernel, humming_cuda.kernels.moe_wna16_a8.call) launches the quantizer and
then the inner WnA16 MoE kernel with exactly the parameters the kernel's fully checked call
computes, the GEMM reading the codes and scales that call's quantizer writes, for every inner
form (moe_wna16's decode form and K loop, moe_wna16_wgmma on bf16 codes and its e4m3 form with
the rows' exponents). Later calls check neither the weights nor the quantizer's arguments again,
pass routing_ready to the decode form, take the full check for another x dtype, and refuse wrong
arguments with the full check's error before launching anything."""

from __future__ import annotations

import functools

import pytest
import torch
from fake_launch import FakeFunction, Recorder, cuda, fake_act_quantizer, quant_launches
from moe_cases import moe_spec

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_weight
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.common_bind import OUT_DTYPES
from humming_cuda.kernels.moe_wna16_a8 import FAMILY, MoeWna16A8Kernel
from humming_cuda.kernels.moe_wna16_a8.call import MoeWna16A8Call

SM90 = caps_for_arch("sm_90a")
E, N, K, TOPK = 4, 256, 256, 2  # N: w13's gate and up columns; out has N // 2
MXFP4_A8 = moe_spec(presets.MXFP4_A8, glu="silu_mul")
MXINT4_I8 = moe_spec(
    presets.MXINT4.replace(act={"dtype": "int8", "quant": "dynamic", "granularity": "token"}),
    glu="silu_mul",
)
# form: (spec, routed rows of the bucket whose first config it is, (inner family, e4m3, decode))
FORMS = {
    "decode": (MXFP4_A8, 8, ("moe_wna16", False, True)),
    "k-loop": (MXINT4_I8, 2048, ("moe_wna16", False, False)),
    "wgmma": (MXINT4_I8, 65536, ("moe_wna16_wgmma", False, False)),
    "e4m3": (MXFP4_A8, 65536, ("moe_wna16_wgmma", True, False)),
}


@pytest.fixture(autouse=True)
def fake_quantizer(monkeypatch):
    fake_act_quantizer(monkeypatch)


def make(form: str) -> tuple[MoeWna16A8Kernel, dict[str, torch.Tensor]]:
    """The kernel of `form` on the fake GPU, its GEMM launches recorded, and an E x N x K layer
    packed by the family's layout (row_exp included for MXFP4, whichever the inner form)."""
    spec, rows, inner = FORMS[form]
    problem = GemmProblem(n=1536, k=2048, m=rows, num_experts=128)
    config = FAMILY.candidates(spec, problem, SM90)[0]
    kernel = MoeWna16A8Kernel(FakeFunction(), spec, config)
    assert (config.inner.family, kernel.e4m3, kernel.inner.decode) == inner
    kernel.inner.launcher = Recorder(kernel.inner.signature.ctypes)
    packed = _packed(spec, config)
    return kernel, {name: cuda(t) for name, t in packed.items()}


@functools.cache
def _packed(spec, config) -> dict[str, torch.Tensor]:
    """The layer packed once per spec and config (quantizing and packing take most of a test's
    time); every test reads the weights only."""
    weights = torch.randn(E, N, K, generator=torch.Generator().manual_seed(5)) * 0.02
    return FAMILY.weight_layout(spec, config, SM90).pack(quantize_weight(weights, spec), "cpu")


def operands(
    kernel: MoeWna16A8Kernel, m: int, router: bool = True, dtype=torch.bfloat16, pad: int = 0
) -> dict:
    """x (the first K columns of `pad` wider rows), out and a routing of m tokens aligned to the
    kernel's block."""
    block, rows = kernel.config.block_m, m * TOPK
    length = rows + E * (block - 1)
    call = {
        "x": cuda(torch.randn(m, K + pad).to(dtype)[:, :K]),
        "out": cuda(torch.zeros(rows, N // 2, dtype=OUT_DTYPES[kernel.inner.fmt.out])),
        "sorted_token_ids": cuda(torch.zeros(length, dtype=torch.int32)),
        "expert_ids": cuda(torch.zeros(-(-length // block), dtype=torch.int32)),
        "num_tokens_post_padded": cuda(torch.zeros(1, dtype=torch.int32)),
        "top_k": TOPK,
        "block_size": block,
    }
    if router:
        call["topk_weights"] = cuda(torch.rand(m, TOPK, dtype=torch.float16), kept=True)
    return call


def last_launches(kernel: MoeWna16A8Kernel) -> tuple[tuple, tuple]:
    """(the quantizer's, the GEMM's) last recorded launch, each with its parameters by name."""
    quant, gemm = quant_launches(kernel)[-1], kernel.inner.launcher.launches[-1]
    q_names = kernel.quantizer._by_dtype[torch.bfloat16][1].names
    named = lambda launch, names: (*launch[:3], dict(zip(names, launch[3], strict=True)))  # noqa: E731
    return named(quant, q_names), named(gemm, kernel.inner.signature.names)


# per call: fresh buffers (q and the scales, the flattened router weights)
_PER_CALL = {"q", "scales", "x", "a_scales", "topk_weights"}


def _fixed(params: dict) -> dict:
    return {name: value for name, value in params.items() if name not in _PER_CALL}


@pytest.mark.parametrize("form", list(FORMS))
def test_prepared_calls_launch_what_the_full_check_computes(form):
    kernel, weights = make(form)
    call = kernel.prepare(**weights)
    assert isinstance(call, MoeWna16A8Call) and call.overlaps_routing
    assert ("row_exp" in call.packed) == kernel.e4m3  # the layout packs it for every MXFP4 form
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda values: full_checks.append(1) or checked_call(values)
    fmt = kernel.quantizer.fmt
    calls = ((3, True, False, 0), (1, False, True, 0), (20, True, True, 64))
    for i, (m, router, ready, pad) in enumerate(calls):
        args = operands(kernel, m, router, pad=pad)
        call(**args, routing_ready=ready)
        quant, gemm = last_launches(kernel)
        kernel(**args, **weights, routing_ready=ready)  # the fully checked path, same arguments
        full_quant, full_gemm = last_launches(kernel)
        assert quant[:3] == full_quant[:3] and gemm[:3] == full_gemm[:3]
        assert _fixed(quant[3]) == _fixed(full_quant[3])
        assert _fixed(gemm[3]) == _fixed(full_gemm[3])
        assert quant[3]["x"] == args["x"].data_ptr() and quant[3]["M"] == m
        assert quant[3]["lda"] == K + pad  # x's rows; the codes are dense
        for q, g in ((quant[3], gemm[3]), (full_quant[3], full_gemm[3])):
            # the GEMM reads the codes and scales this call's quantizer writes, laid out alike
            assert (g["x"], g["a_scales"]) == (q["q"], q["scales"])
            assert q["scales"] - q["q"] == fmt.buffer_layout(m, K)[1]
            assert (g["topk_weights"] != 0) == router
        assert gemm[3]["lda"] == K and gemm[3]["out"] == args["out"].data_ptr()
        if kernel.e4m3:
            assert gemm[3]["row_exp"] == weights["row_exp"].data_ptr()
        if kernel.inner.decode:
            assert gemm[3]["routing_ready"] == int(ready)
        if i:  # the quick path: this thread and stream's reused buffer, held by the call
            assert call._held.buffer.data_ptr() == quant[3]["q"]
    assert len(full_checks) == 1  # the first call's only
    assert len(quant_launches(kernel)) == len(kernel.inner.launcher.launches) == 6


@pytest.mark.parametrize("form", ["decode", "e4m3"])
def test_the_fast_path_checks_neither_weights_nor_quantizer_arguments(form, monkeypatch):
    kernel, weights = make(form)
    call = kernel.prepare(**weights)
    call(**operands(kernel, 2))

    def refuse(*args, **kwargs):
        raise AssertionError("a full check ran for a call the quick check takes")

    for owner, name in (
        (kernel, "quantize_checked"),
        (kernel.quantizer, "checked"),
        (kernel.inner, "checked"),
        (kernel.inner.signature, "bind"),
    ):
        monkeypatch.setattr(owner, name, refuse)
    for m in (5, 1, 9):  # another M, out, routing and router weights each call
        call(**operands(kernel, m))
        quant, gemm = last_launches(kernel)
        assert quant[3]["M"] == m and gemm[3]["numel"] == m * TOPK
    assert len(quant_launches(kernel)) == len(kernel.inner.launcher.launches) == 4


def test_another_x_dtype_takes_the_full_check_and_the_template_stays():
    kernel, weights = make("decode")
    call = kernel.prepare(**weights)
    call(**operands(kernel, 4))  # the templates are bf16 x's
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda values: full_checks.append(1) or checked_call(values)
    call(**operands(kernel, 4, dtype=torch.float16))
    assert full_checks == [1] and len(quant_launches(kernel, torch.float16)) == 1
    call(**operands(kernel, 4))
    assert full_checks == [1] and len(quant_launches(kernel)) == 2


def test_no_tokens_launch_nothing():
    kernel, weights = make("decode")
    call = kernel.prepare(**weights)
    call(**operands(kernel, 2))
    call(**operands(kernel, 0))
    assert len(quant_launches(kernel)) == len(kernel.inner.launcher.launches) == 1


def test_the_e4m3_form_needs_row_exp_at_prepare():
    kernel, weights = make("e4m3")
    weights.pop("row_exp")
    with pytest.raises(ValueError, match="argument 'row_exp' is missing"):
        kernel.prepare(**weights)


def _swap(name: str, value) -> object:
    return lambda args: {**args, name: value(args)}


def _bf16(*shape) -> torch.Tensor:
    return torch.zeros(*shape, dtype=torch.bfloat16)


@pytest.mark.parametrize("form", ["decode", "e4m3"])
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_swap("x", lambda a: cuda(torch.zeros(3, K))), r"takes float16 or bfloat16 input"),
        (_swap("x", lambda a: cuda(_bf16(3 * K))), r"'x': expected a 2-D tensor"),
        (_swap("x", lambda a: cuda(_bf16(3, K - 8))), r"K % 16 == 0"),
        (_swap("x", lambda a: cuda(_bf16(3, K + 64))), r"packed weights hold 256x256 .* K=320"),
        (_swap("x", lambda a: cuda(_bf16(3, K + 8)[:, 1 : K + 1])), r"'x': expected a data pointer aligned to 16 bytes"),
        (_swap("x", lambda a: a["x"].as_subclass(torch.Tensor)), r"'x': expected a tensor on cuda:0 .* got one on cpu"),
        (_swap("out", lambda a: cuda(_bf16(7, N // 2))), r"'out': expected shape \(6, 128\)"),
        (_swap("out", lambda a: cuda(torch.zeros(6, N // 2))), r"'out': expected dtype bfloat16, got float32"),
        (_swap("sorted_token_ids", lambda a: cuda(a["sorted_token_ids"].long())), r"'sorted_token_ids': expected dtype int32, got int64"),
        (_swap("expert_ids", lambda a: cuda(a["expert_ids"][:1].clone())), r"expert_ids has 1 entries, expected one per block"),
        (_swap("block_size", lambda a: a["block_size"] * 2), r"block_size=.* but this kernel's config has block_m"),
        (_swap("topk_weights", lambda a: cuda(torch.rand(3, TOPK + 1), kept=True)), r"topk_weights.*expected shape \(6,\)"),
    ],
)  # fmt: skip
def test_every_wrong_argument_is_refused_after_the_template_exists(form, change, message):
    kernel, weights = make(form)
    call = kernel.prepare(**weights)
    call(**operands(kernel, 3))
    assert call.template is not None
    with pytest.raises(ValueError, match=message):
        call(**change(operands(kernel, 3)))
    # refused before either launch
    assert len(quant_launches(kernel)) == len(kernel.inner.launcher.launches) == 1
