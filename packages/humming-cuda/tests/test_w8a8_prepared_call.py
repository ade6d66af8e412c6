"""The W8A8 / W4A8 launch path without a GPU (fake_launch): a prepared call (kernels/w8a8/call.py)
launches the quantizer and the GEMM with exactly the parameters the full check computes, the
GEMM reading the q and scales buffers that call's quantizer writes, grows split-K's workspace
with M, takes the full check for another x dtype or an act_scale, and refuses wrong x and out
with the full check's error."""

from __future__ import annotations

import threading
import weakref

import pytest
import torch
from fake_launch import (
    FakeFunction,
    Recorder,
    assert_refused_after_template,
    cuda,
    fake_act_quantizer,
    fake_split_workspace,
    quant_launches,
)

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_weight
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.w8a8 import FAMILY
from humming_cuda.kernels.w8a8.bind import W8a8Kernel

SM90 = caps_for_arch("sm_90a")
N, K = 512, 1024


@pytest.fixture(autouse=True)
def fake_quantizer(monkeypatch):
    fake_act_quantizer(monkeypatch)


@pytest.fixture(autouse=True)
def cpu_workspace(monkeypatch):
    return fake_split_workspace(monkeypatch)


def make(spec, m: int = 1) -> tuple[W8a8Kernel, dict[str, torch.Tensor]]:
    config = FAMILY.candidates(spec, GemmProblem(n=N, k=K, m=m), SM90)[0]
    kernel = W8a8Kernel(FakeFunction(), spec, config)
    kernel.launcher = Recorder(kernel.signature.ctypes)
    cw = quantize_weight(torch.randn(N, K, generator=torch.Generator().manual_seed(3)), spec)
    packed = FAMILY.weight_layout(spec, config, SM90).pack(cw, "cpu")
    return kernel, {name: cuda(t) for name, t in packed.items()}


def operands(m: int, dtype=torch.bfloat16, out_dtype=torch.bfloat16):
    x = cuda(torch.randn(m, K).to(dtype))
    return x, cuda(torch.zeros(m, N, dtype=out_dtype))


@pytest.mark.parametrize("name", ["W4A8_FP8", "W8A8_FP8"])
def test_prepared_calls_launch_what_the_full_check_computes(name):
    spec = presets.preset(name)
    kernel, weights = make(spec)
    call = kernel.prepare(**weights)
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda *a: full_checks.append(1) or checked_call(*a)
    names = kernel.signature.names
    a, a_scales = names.index("a"), names.index("a_scales")
    # the first call builds the templates, the rest patch them
    buffers = []
    for i, m in enumerate((1, 5, 16, 1)):
        x, out = operands(m)
        call(x, out)
        grid, params, _, quantize = kernel.checked({"x": x, "out": out, **weights})
        q_names = quantize.signature.names
        q, scales = q_names.index("q"), q_names.index("scales")
        quant = quant_launches(kernel)[-1]
        gemm = kernel.launcher.launches[-1]
        # the GEMM reads what this call's quantizer writes (fresh buffers, as the full check's)
        assert (gemm[3][a], gemm[3][a_scales]) == (quant[3][q], quant[3][scales])
        # one buffer, q first and the scales after it, laid out as the full check lays them out,
        # and (prepared calls) this thread and stream's buffer, held by the call
        size, offset = kernel.quantizer.fmt.buffer_layout(m, K)
        assert quant[3][scales] - quant[3][q] == offset
        assert quantize.params[scales] - quantize.params[q] == offset
        if i:
            held = call._held.buffer
            assert held.data_ptr() == quant[3][q] and held.numel() >= size
            buffers.append(held)
        expected = list(params)
        expected[a], expected[a_scales] = gemm[3][a], gemm[3][a_scales]
        block = (kernel.config.threads, 1, 1)
        assert gemm == (grid, block, kernel.config.smem_bytes, expected)
        expected_quant = list(quantize.params)
        expected_quant[q], expected_quant[scales] = quant[3][q], quant[3][scales]
        assert quant == (quantize.grid, (256, 1, 1), 0, expected_quant)
        assert quant[3][q_names.index("x")] == x.data_ptr()
    assert len(full_checks) == 1  # later calls took the quick path
    # grown for M = 5 and 16, reused for the M = 1 after them
    assert buffers[0] is not buffers[1] and buffers[2] is buffers[1]
    assert len(kernel.launcher.launches) == len(quant_launches(kernel)) == 4
    call(*operands(0))  # M = 0: nothing to launch
    assert len(kernel.launcher.launches) == 4 and len(quant_launches(kernel)) == 4


def test_split_k_workspace_is_patched_and_grown(cpu_workspace):
    kernel, weights = make(presets.W4A8_FP8)
    assert kernel.config.split_k > 1  # 4 column tiles of 128 on 132 SMs
    call = kernel.prepare(**weights)
    names = kernel.signature.names
    for m in (1, 16, 40):
        call(*operands(m))
        grid, _, _, params = kernel.launcher.launches[-1]
        ws, ct = cpu_workspace[-1]
        assert grid[2] > 1
        assert params[names.index("workspace")] == ws.data_ptr()
        assert params[names.index("counters")] == ct.data_ptr()
        assert ws.numel() >= grid[0] * grid[1] * grid[2] * kernel.config.block_m * 128


def test_q_and_scales_are_this_threads_buffer_for_the_stream(monkeypatch):
    """The buffer the GEMM reads is alive when the GEMM is enqueued (a split-K workspace may be
    allocated between the two launches) and is this thread's for the current stream
    (act_quant/scratch.py): reused by the next call there, another on another thread or stream;
    under CUDA-graph capture a fresh one per call, held by the call until this thread's next
    call."""
    from humming_cuda import launch
    from humming_cuda.kernels.act_quant import scratch

    kernel, weights = make(presets.W4A8_FP8)
    assert kernel.config.split_k > 1
    call = kernel.prepare(**weights)
    call(*operands(4))  # the template
    record, at_gemm = kernel.launcher.launch, []

    def launch_gemm(grid, block, smem, address, stream=None):
        at_gemm.append(call._held.buffer.data_ptr())
        record(grid, block, smem, address, stream)

    kernel.launcher.launch = launch_gemm
    a = kernel.signature.names.index("a")
    call(*operands(16))
    assert at_gemm[-1] == kernel.launcher.launches[-1][3][a]
    mine = call._held.buffer
    other = threading.Thread(target=lambda: call(*operands(8)))
    other.start(), other.join()
    assert kernel.launcher.launches[-1][3][a] != mine.data_ptr()  # the other thread's own
    call(*operands(16))
    assert call._held.buffer is mine and at_gemm[-1] == mine.data_ptr()  # reused
    monkeypatch.setattr(launch, "current_stream", lambda index: 0xABC)
    call(*operands(16))
    assert at_gemm[-1] != mine.data_ptr()  # another stream, another buffer
    monkeypatch.setattr(scratch, "_capturing", lambda: True)
    call(*operands(16))
    held = weakref.ref(call._held.buffer)
    assert held().data_ptr() == at_gemm[-1] == kernel.launcher.launches[-1][3][a]
    assert held() is not scratch._BUFFERS.by_stream.get((None, 0xABC))
    call(*operands(16))
    assert held() is None  # a captured call's buffer: released by this thread's next call


def test_another_dtype_or_a_static_scale_takes_the_full_check():
    kernel, weights = make(presets.W4A8_FP8)
    call = kernel.prepare(**weights)
    call(*operands(4))
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda *a: full_checks.append(1) or checked_call(*a)
    call(*operands(4, dtype=torch.float16))  # the templates are bf16 x's
    assert full_checks == [1] and len(quant_launches(kernel, torch.float16)) == 1
    with pytest.raises(ValueError, match="takes no static scale"):
        call(*operands(4), act_scale=cuda(torch.ones(1)))


@pytest.mark.parametrize(
    ("make_bad", "message"),
    [
        (lambda x, o: (cuda(torch.zeros(4, K)), o), r"takes float16 or bfloat16 input"),
        (lambda x, o: (cuda(torch.zeros(4, K - 8, dtype=torch.bfloat16)), o), r"K % 16 == 0"),
        (lambda x, o: (x, cuda(torch.zeros(5, N, dtype=torch.bfloat16))), r"'out'"),
        (lambda x, o: (x, cuda(torch.zeros(4, N, dtype=torch.float16))), r"'out': expected dtype"),
        (lambda x, o: (x.as_subclass(torch.Tensor), o), r"cuda:0 .* got one on cpu"),
    ],
)
def test_wrong_x_and_out_are_refused_after_the_template(make_bad, message):
    kernel, weights = make(presets.W4A8_FP8)
    assert_refused_after_template(kernel, weights, lambda: operands(4), make_bad, message)


@pytest.mark.parametrize("name", ["W4A8_FP8", "MXFP4_A8"])
def test_decode_kernel_calls_launch_with_its_specs_shared_memory(name):
    """w4a8_decode (a W8a8Kernel) launches, checked and prepared alike, with the shared memory of
    its spec's stages (scale tiles sized by the weight group, not the config's bound) and with
    iters_per_split counted in stages of `slabs` slabs."""
    from humming_cuda.kernels.w4a8_decode import FAMILY as DECODE
    from humming_cuda.kernels.w4a8_decode import W4a8DecodeKernel

    spec = presets.preset(name)
    config = DECODE.candidates(spec, GemmProblem(n=N, k=K, m=1), SM90)[0]
    kernel = W4a8DecodeKernel(FakeFunction(), spec, config)
    kernel.launcher = Recorder(kernel.signature.ctypes)
    group = spec.weight.scale.group_size
    assert kernel.smem == config.stages * config.stage_bytes(group)
    assert (kernel.smem < config.smem_bytes) == (group > 32)
    cw = quantize_weight(torch.randn(N, K, generator=torch.Generator().manual_seed(3)), spec)
    packed = DECODE.weight_layout(spec, config, SM90).pack(cw, "cpu")
    weights = {n: cuda(t) for n, t in packed.items()}
    call = kernel.prepare(**weights)
    for _ in range(3):  # the full check, then the prepared path twice
        call(*operands(1))
    ips = kernel.signature.names.index("iters_per_split")
    stages = -(-K // (128 * config.slabs))
    for grid, _, smem, params in kernel.launcher.launches:
        assert smem == kernel.smem
        assert grid == (N // config.block_n, 1, config.split_k)
        assert params[ips] == -(-stages // config.split_k)
    assert len(kernel.launcher.launches) == 3
