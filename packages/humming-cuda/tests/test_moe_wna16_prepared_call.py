"""The MoE WnA16 launch path without a GPU (fake_launch): a prepared call (one layer's expert
weights bound to a kernel, humming_cuda.kernels.moe_wna16.call) launches exactly the parameters
and grid the full check computes, writes nothing but the launch (PreparedMoe.run zeroes unrouted
rows), launches with PDL only when told the routing is ready and the decode form can overlap, and
refuses every wrong x, out, routing tensor or router weight with the full check's error."""

from __future__ import annotations

import pytest
import torch
from fake_launch import FakeFunction, Recorder, cuda

from humming_core.spec import preset
from humming_cuda.kernels.moe_wna16 import bind
from humming_cuda.kernels.moe_wna16.config import MoeWna16Config

E, N, K, TOPK = 8, 128, 256, 2
SPEC = preset("W4A16_G128").replace(layout="moe")


def make_kernel() -> bind.MoeWna16Kernel:
    kernel = bind.MoeWna16Kernel(FakeFunction(), SPEC, MoeWna16Config(arch="sm_90a"))
    kernel.launcher = Recorder(kernel.signature.ctypes)
    return kernel


def packed() -> dict[str, torch.Tensor]:
    return {
        "qweight": cuda(torch.zeros(E, N // 64, K // 16, 128, dtype=torch.int32)),
        "scales": cuda(torch.zeros(E, K // 128, N, dtype=torch.float16)),
        "global_scale": cuda(torch.ones(E)),
    }


def operands(m: int, block: int, router: bool = True) -> dict:
    """x, out (filled with ones: the call must zero it) and a routing of m tokens."""
    rows = m * TOPK
    length = rows + E * (block - 1)
    call = {
        "x": cuda(torch.zeros(m, K, dtype=torch.float16)),
        "out": cuda(torch.ones(rows, N, dtype=torch.float16)),
        "sorted_token_ids": cuda(torch.zeros(length, dtype=torch.int32)),
        "expert_ids": cuda(torch.zeros(-(-length // block), dtype=torch.int32)),
        "num_tokens_post_padded": cuda(torch.zeros(1, dtype=torch.int32)),
        "top_k": TOPK,
        "block_size": block,
    }
    if router:
        call["topk_weights"] = cuda(torch.rand(m, TOPK, dtype=torch.float16), kept=True)
    return call


def expected(kernel: bind.MoeWna16Kernel, call: dict, weights: dict) -> tuple:
    """(grid, block, smem, parameters) of the full path for `call`."""
    dims, params = kernel.checked({**call, **weights})
    cfg = kernel.config
    grid = (-(-dims["N"] // cfg.block_n), -(-dims["LEN"] // cfg.block_m), 1)
    return grid, (cfg.threads, 1, 1), kernel.smem, params


def test_prepared_calls_launch_what_the_full_check_computes():
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    block = kernel.config.block_m
    for m, router in ((3, True), (1, False), (20, True), (3, False)):
        args = operands(m, block, router)
        call(**args)
        assert (args["out"] == 1).all()  # the launch alone writes out: no fill (PreparedMoe.run's)
        launched = kernel.launcher.launches[-1]
        want = expected(kernel, args, weights)
        # the router weights are flattened to fp32 per call: compare all but their pointer
        at = kernel.signature.names.index("topk_weights")
        assert launched[:3] == want[:3]
        assert launched[3][:at] + launched[3][at + 1 :] == want[3][:at] + want[3][at + 1 :]
        assert (launched[3][at] == 0) == (not router)
    assert call.template is not None and len(kernel.launcher.launches) == 4


def test_the_fast_path_patches_a_template_instead_of_checking_again(monkeypatch):
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    call(**operands(2, kernel.config.block_m))

    def refuse(values):
        raise AssertionError("the full check ran for a call the quick check takes")

    monkeypatch.setattr(kernel, "checked", refuse)
    call(**operands(5, kernel.config.block_m))
    assert len(kernel.launcher.launches) == 2


def _swap(name: str, value) -> object:
    return lambda args: {**args, name: value(args)}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_swap("x", lambda a: cuda(torch.zeros(3, K))), r"'x': expected dtype float16, got float32"),
        (_swap("x", lambda a: cuda(torch.zeros(3, K + 64, dtype=torch.float16))), r"packed weights hold 128x256 .* K=320"),
        (_swap("out", lambda a: cuda(torch.zeros(7, N, dtype=torch.float16))), r"'out': expected shape \(6, 128\)"),
        (_swap("out", lambda a: cuda(torch.zeros(6, N, dtype=torch.bfloat16))), r"'out': expected dtype float16, got bfloat16"),
        (_swap("out", lambda a: cuda(torch.zeros(N, 6, dtype=torch.float16).T)), r"'out': expected a 2-D tensor with innermost stride 1"),
        (_swap("x", lambda a: cuda(torch.zeros(3, K + 8, dtype=torch.float16)[:, 1 : K + 1])), r"'x': expected a data pointer aligned to 16 bytes"),
        (_swap("sorted_token_ids", lambda a: cuda(a["sorted_token_ids"].long())), r"'sorted_token_ids': expected dtype int32, got int64"),
        (_swap("expert_ids", lambda a: cuda(a["expert_ids"][:1].clone())), r"expert_ids has 1 entries, expected one per block"),
        (_swap("num_tokens_post_padded", lambda a: cuda(torch.zeros(2, dtype=torch.int32))), r"'num_tokens_post_padded': expected shape \(1,\)"),
        (_swap("block_size", lambda a: a["block_size"] * 2), r"block_size=.* but this kernel's config has block_m"),
        (_swap("x", lambda a: a["x"].as_subclass(torch.Tensor)), r"'x': expected a tensor on cuda:0 .* got one on cpu"),
        (_swap("expert_ids", lambda a: a["expert_ids"].as_subclass(torch.Tensor)), r"'expert_ids': expected a tensor on cuda:0 .* got one on cpu"),
        (_swap("topk_weights", lambda a: cuda(torch.rand(3, TOPK + 1), kept=True)), r"topk_weights.*expected shape \(6,\)"),
    ],
)  # fmt: skip
def test_every_wrong_argument_is_refused_after_the_template_exists(change, message):
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    call(**operands(3, kernel.config.block_m))
    assert call.template is not None
    with pytest.raises(ValueError, match=message):
        call(**change(operands(3, kernel.config.block_m)))
    assert len(kernel.launcher.launches) == 1


def test_no_tokens_launch_nothing():
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    call(**operands(2, kernel.config.block_m))
    call(**operands(0, kernel.config.block_m))
    assert len(kernel.launcher.launches) == 1


@pytest.mark.parametrize(
    ("arch", "tokens", "pdl"),
    [("sm_90a", 8, True), ("sm_90a", 0, False), ("sm_89", 8, False)],
    ids=["decode-sm90a", "k-loop-sm90a", "decode-sm89"],
)
def test_the_decode_form_takes_routing_ready_per_call_and_launches_with_pdl_on_sm90(
    arch, tokens, pdl
):
    """The decode form's last parameter is routing_ready, patched per call (the full check and
    the fast path agree); it launches with PDL on sm_90+. The dense K loop has no such parameter."""
    kernel = bind.MoeWna16Kernel(FakeFunction(), SPEC, MoeWna16Config(arch=arch, tokens=tokens))
    assert kernel.launcher.pdl == pdl
    assert (kernel.signature.names[-1] == "routing_ready") == bool(tokens)
    kernel.launcher = Recorder(kernel.signature.ctypes)
    weights, block = packed(), kernel.config.block_m
    call = kernel.prepare(**weights)
    for ready in (False, True, False, True):
        args = operands(2, block)
        call(**args, routing_ready=ready)
        launched = kernel.launcher.launches[-1]
        assert launched[:3] == expected(kernel, {**args, "routing_ready": ready}, weights)[:3]
        if tokens:
            assert launched[3][-1] == int(ready)
    assert len(kernel.launcher.launches) == 4


def test_fp32_router_weights_are_read_in_place_and_others_converted(monkeypatch):
    """Contiguous fp32 router weights [M, top_k] are what the kernel reads (their flat view has
    their address): the fast path launches the full check's parameters, their pointer included,
    with no conversion; fp16 or strided ones are converted to a new fp32 vector as before."""
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    block = kernel.config.block_m
    call(**operands(2, block))  # the template
    at = kernel.signature.names.index("topk_weights")
    fp32 = operands(3, block)
    fp32["topk_weights"] = cuda(torch.rand(3, TOPK), kept=True)
    checked = kernel.checked
    monkeypatch.setattr(kernel, "checked", lambda values: pytest.fail("the full check ran"))
    call(**fp32)
    launched = kernel.launcher.launches[-1]
    assert launched == expected_with(checked, kernel, fp32, weights)
    assert launched[3][at] == fp32["topk_weights"].data_ptr()
    for router in (
        cuda(torch.rand(3, TOPK, dtype=torch.float16), kept=True),
        cuda(torch.rand(TOPK, 3), kept=True).T,  # fp32, not contiguous
    ):
        args = {**operands(3, block), "topk_weights": router}
        call(**args)
        launched = kernel.launcher.launches[-1]
        want = expected_with(checked, kernel, args, weights)
        assert launched[:3] == want[:3]
        assert launched[3][:at] + launched[3][at + 1 :] == want[3][:at] + want[3][at + 1 :]
        assert launched[3][at] not in (0, router.data_ptr())
    assert len(kernel.launcher.launches) == 4


def expected_with(checked, kernel, call: dict, weights: dict) -> tuple:
    """expected() with the kernel's own full check `checked` (the test replaced the attribute)."""
    dims, params = checked({**call, **weights})
    cfg = kernel.config
    grid = (-(-dims["N"] // cfg.block_n), -(-dims["LEN"] // cfg.block_m), 1)
    return grid, (cfg.threads, 1, 1), kernel.smem, params


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_swap("topk_weights", lambda a: cuda(torch.rand(3, TOPK + 1), kept=True)), r"topk_weights.*expected shape \(6,\)"),
        (_swap("topk_weights", lambda a: torch.rand(3, TOPK)), r"'topk_weights': expected a tensor on cuda:0 .* got one on cpu"),
        (_swap("sorted_token_ids", lambda a: cuda(torch.zeros(2 * a["sorted_token_ids"].numel(), dtype=torch.int32))[::2]), r"'sorted_token_ids'"),
        (_swap("num_tokens_post_padded", lambda a: torch.zeros(1, dtype=torch.int32)), r"'num_tokens_post_padded': expected a tensor on cuda:0 .* got one on cpu"),
        (_swap("top_k", lambda a: 3), r"'topk_weights': expected shape \(9,\)"),
    ],
)  # fmt: skip
def test_wrong_fp32_router_weights_and_routing_are_refused_after_the_template_exists(
    change, message
):
    """The quick check of each argument the fast path reads in place (fp32 router weights, the
    routing vectors) sends a wrong one to the full check, which names it; nothing launches."""
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    good = {
        **operands(3, kernel.config.block_m),
        "topk_weights": cuda(torch.rand(3, TOPK), kept=True),
    }
    call(**good)
    assert call.template is not None
    with pytest.raises(ValueError, match=message):
        call(**change(good))
    assert len(kernel.launcher.launches) == 1
