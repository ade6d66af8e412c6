"""The WnA16 launch path without a GPU: a prepared call (one layer's weights bound to a kernel)
launches exactly the parameters the full check computes, and refuses every wrong x and out.

`OnCuda` tensors are CPU tensors that report cuda:0, so the checks run as on a GPU; the launcher
is replaced by a recorder that reads the parameter block back through its void*[] the way the
driver does. A kernel accepts a K or N smaller than its packed weights hold (it computes that
part); a layer refuses such x itself (humming_core.ops.PreparedGemm, tested with the reference
device).
"""

from __future__ import annotations

import pytest
import torch
from fake_launch import (
    FakeFunction,
    Recorder,
    assert_refused_after_template,
    cuda,
    fp16_operands,
    wna16_packed,
)

from humming_core.spec import W4A16_G128
from humming_cuda.kernels import split_k
from humming_cuda.kernels.wna16 import bind
from humming_cuda.kernels.wna16.config import Wna16Config

N, K, GROUP = 128, 256, 128


def make_kernel(split_k: int = 1) -> bind.Wna16Kernel:
    config = Wna16Config(arch="sm_90a", split_k=split_k)
    kernel = bind.Wna16Kernel(FakeFunction(), W4A16_G128, config)
    kernel.launcher = Recorder(kernel.signature.ctypes)
    return kernel


def packed() -> dict[str, torch.Tensor]:
    return wna16_packed(N, K, GROUP)


def operands(m: int) -> tuple[torch.Tensor, torch.Tensor]:
    return fp16_operands(m, N, K)


def test_prepared_calls_launch_what_the_full_check_computes():
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    for m in (1, 5, 40, 1):  # the first call builds the template, the rest patch it
        x, out = operands(m)
        call(x, out)
        grid, params, _ = kernel.checked({"x": x, "out": out, **weights})
        launched = kernel.launcher.launches[-1]
        assert launched == (grid, (kernel.config.threads, 1, 1), kernel.smem, params)
    assert call.template is not None and len(kernel.launcher.launches) == 4
    wide = cuda(torch.zeros(3, 2 * K, dtype=torch.float16)[:, :K])  # a row slice: lda = 2K
    call(wide, operands(3)[1])
    assert kernel.launcher.launches[-1][3][kernel.signature.names.index("lda")] == 2 * K
    call(*operands(0))  # M = 0: nothing to launch
    assert len(kernel.launcher.launches) == 5


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda x, o: (cuda(torch.zeros(4, K)), o), r"'x': expected dtype float16, got float32"),
        (lambda x, o: (cuda(torch.zeros(4, K + 64, dtype=torch.float16)), o), r"packed weights hold 128x256 .* needs 128x320"),
        (lambda x, o: (x, cuda(torch.zeros(5, N, dtype=torch.float16))), r"'out': expected shape \(4, N\) \(dim 0 is M=4\), got shape \(5, 128\)"),
        (lambda x, o: (x, cuda(torch.zeros(4, N, dtype=torch.bfloat16))), r"'out': expected dtype float16, got bfloat16"),
        (lambda x, o: (cuda(torch.zeros(K, 4, dtype=torch.float16).T), o), r"'x': expected innermost stride 1"),
        (lambda x, o: (x, cuda(torch.zeros(N, 4, dtype=torch.float16).T)), r"'out': expected a 2-D tensor with innermost stride 1"),
        (lambda x, o: (cuda(torch.zeros(4, K + 8, dtype=torch.float16)[:, 1 : K + 1]), o), r"'x': expected a data pointer aligned to 16 bytes"),
        (lambda x, o: (cuda(torch.zeros(4, K + 4, dtype=torch.float16)[:, :K]), o), r"'x': expected a row stride that is a multiple of 16 bytes"),
        (lambda x, o: (x, cuda(torch.zeros(4 * N + 1, dtype=torch.float16)[1:].view(4, N))), r"'out': expected a data pointer aligned to 4 bytes"),
        (lambda x, o: (x.as_subclass(torch.Tensor), o), r"'x': expected a tensor on cuda:0 .* got one on cpu"),
        (lambda x, o: (x, o.as_subclass(torch.Tensor)), r"'out': expected a tensor on cuda:0 .* got one on cpu"),
        (lambda x, o: (cuda(torch.zeros(2, 2, K, dtype=torch.float16)), o), r"'x': expected 2 dims \(M, K\)"),
        (lambda x, o: ([[0.0] * K] * 4, o), r"'x': expected a torch.Tensor, got list"),
    ],
)  # fmt: skip
def test_every_wrong_x_or_out_is_refused_after_the_template_exists(make, message):
    assert_refused_after_template(make_kernel(), packed(), lambda: operands(4), make, message)


def test_extra_keywords_go_to_the_full_check():
    kernel, weights = make_kernel(), packed()
    call = kernel.prepare(**weights)
    call(*operands(2))
    with pytest.raises(ValueError, match=r"unexpected argument\(s\) \['act_scale'\]"):
        call(*operands(2), act_scale=cuda(torch.ones(1)))


def test_split_k_workspace_is_patched_and_grown(monkeypatch):
    handed_out = []

    def get(device, floats, tiles):
        pair = (cuda(torch.zeros(floats)), cuda(torch.zeros(tiles, dtype=torch.int32)))
        handed_out.append(pair)
        return pair

    monkeypatch.setattr(split_k.SPLIT_K_BUFFERS, "get", get)
    kernel, weights = make_kernel(split_k=2), packed()
    call = kernel.prepare(**weights)
    names = kernel.signature.names
    for m in (1, 16, 200):
        x, out = operands(m)
        call(x, out)
        grid, _, _, params = kernel.launcher.launches[-1]
        assert grid[2] == 2 and grid[1] == -(-m // kernel.config.block_m)
        ws, ct = handed_out[-1]
        assert params[names.index("workspace")] == ws.data_ptr()
        assert params[names.index("counters")] == ct.data_ptr()
        assert ws.numel() >= grid[0] * grid[1] * 2 * kernel.config.block_m * kernel.config.block_n
        assert ct.numel() >= grid[0] * grid[1]
    assert call.ws_rows == -(-200 // kernel.config.block_m)
