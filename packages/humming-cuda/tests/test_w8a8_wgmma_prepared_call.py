"""The W8A8 / W4A8 wgmma launch path without a GPU (fake_launch): a prepared call
(kernels/w8a8_wgmma/call.py) launches the quantizer and the GEMM with exactly the parameters and
grid the full check computes — q's tensor map with the box rows of each M, a persistent config's
resident grid, split-K's workspace grown with M — and refuses wrong x and out with the full
check's error.

Tensor maps are encoded by the CUDA driver, which a CPU machine lacks: `FakeMaps` stands in for
the kernel's map cache with a "map" that records the operand's pointer, rows, row bytes, row
stride in bytes, box rows and form."""

from __future__ import annotations

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

from humming_core.numerics import quantize_weight
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.w4a8_wgmma import FAMILY as W4A8
from humming_cuda.kernels.w4a8_wgmma.bind import W4a8WgmmaKernel
from humming_cuda.kernels.w4a8_wgmma.config import W4a8WgmmaConfig
from humming_cuda.kernels.w8a8_wgmma import FAMILY as W8A8
from humming_cuda.kernels.w8a8_wgmma.bind import W8a8WgmmaKernel
from humming_cuda.kernels.w8a8_wgmma.config import W8a8WgmmaConfig
from humming_cuda.kernels.w8a8_wgmma.tma import BOX_ROWS, TensorMapParam

SM90 = caps_for_arch("sm_90a")
N, K = 512, 1024


class FakeMaps:
    def get(self, t, what, packed=False, box_rows=BOX_ROWS) -> TensorMapParam:
        rows, k = t.shape
        size = t.element_size()
        return self.of(t.data_ptr(), rows, k * size, t.stride(0) * size, what, packed, box_rows)

    def of(self, address, rows, row_bytes, row_stride, what, packed=False, box_rows=BOX_ROWS):
        return TensorMapParam(address, rows, row_bytes, row_stride, box_rows, packed, *[0] * 10)


@pytest.fixture(autouse=True)
def fake_quantizer(monkeypatch):
    fake_act_quantizer(monkeypatch)


@pytest.fixture(autouse=True)
def cpu_workspace(monkeypatch):
    return fake_split_workspace(monkeypatch)


CONFIGS = {
    "persistent": (presets.W8A8_FP8, W8a8WgmmaConfig(arch="sm_90a", stages=4, persistent=True)),
    "block128_split": (presets.FP8_BLOCK128, W8a8WgmmaConfig(arch="sm_90a", split_k=3)),
    "w4a8_32_tokens": (
        presets.W4A8_FP8,
        W4a8WgmmaConfig(arch="sm_90a", stages=6, rs_block_m=32, rs_ctas_per_sm=2, split_k=2),
    ),
}


def make(name: str):
    spec, config = CONFIGS[name]
    family, kind = (W4A8, W4a8WgmmaKernel) if spec is presets.W4A8_FP8 else (W8A8, W8a8WgmmaKernel)
    kernel = kind(FakeFunction(), spec, config)
    kernel.launcher = Recorder(kernel.launcher.ctypes)
    kernel.maps = FakeMaps()
    cw = quantize_weight(torch.randn(N, K, generator=torch.Generator().manual_seed(3)), spec)
    packed = family.weight_layout(spec, config, SM90).pack(cw, "cpu")
    return kernel, {name: cuda(t) for name, t in packed.items()}


def operands(m: int, dtype=torch.bfloat16):
    return cuda(torch.randn(m, K).to(dtype)), cuda(torch.zeros(m, N, dtype=torch.bfloat16))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_prepared_calls_launch_what_the_full_check_computes(name):
    kernel, weights = make(name)
    call = kernel.prepare(**weights)
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda *a: full_checks.append(1) or checked_call(*a)
    names = kernel.signature.names
    a_scales = names.index("a_scales")
    for m in (200, 40, 300, 17):  # the first call builds the templates, the rest patch them
        x, out = operands(m)
        call(x, out)
        grid, params, _, quantize = kernel.checked({"x": x, "out": out, **weights})
        q_names = quantize.signature.names
        quant = quant_launches(kernel)[-1]
        gemm = kernel.launcher.launches[-1]
        # the GEMM's map is of this call's q (pointer, M rows, K, its box rows for this M), and
        # it reads this call's scales
        q_ptr = quant[3][q_names.index("q")]
        assert gemm[3][0][:6] == (q_ptr, m, K, K, kernel.a_box_rows(m), 0)
        assert gemm[3][a_scales] == quant[3][q_names.index("scales")]
        # q and its scales in one buffer, laid out as the full check's
        offset = kernel.quantizer.fmt.buffer_layout(m, K)[1]
        assert gemm[3][a_scales] - q_ptr == offset
        full_q, full_scales = (quantize.params[q_names.index(n)] for n in ("q", "scales"))
        assert full_scales - full_q == offset and params[0][0] == full_q  # the map of that q
        expected = [tuple(params[0]), tuple(params[1]), *params[2:]]
        expected[0], expected[a_scales] = gemm[3][0], gemm[3][a_scales]
        assert gemm == (grid, (kernel.config.threads, 1, 1), kernel.smem, expected)
        assert quant[3][q_names.index("x")] == x.data_ptr()
    assert len(full_checks) == 1  # later calls took the quick path
    assert len(kernel.launcher.launches) == len(quant_launches(kernel)) == 4
    call(*operands(0))  # M = 0: nothing to launch
    assert len(kernel.launcher.launches) == 4


def test_persistent_grid_is_the_resident_ctas_or_the_tiles():
    kernel, weights = make("persistent")
    call = kernel.prepare(**weights)
    for m in (1024, 40, 4096):  # 32 tiles, 4 tiles, 128 tiles, all under 132 SMs; then 132
        call(*operands(m))
        assert kernel.launcher.launches[-1][0] == (min(132, 4 * -(-m // 128)), 1, 1)
    call(*operands(8192))
    assert kernel.launcher.launches[-1][0] == (132, 1, 1)


def test_split_k_workspace_is_patched_and_grown(cpu_workspace):
    kernel, weights = make("block128_split")
    call = kernel.prepare(**weights)
    names = kernel.signature.names
    for m in (40, 200, 1000):
        call(*operands(m))
        grid, _, _, params = kernel.launcher.launches[-1]
        ws, ct = cpu_workspace[-1]
        assert grid == (N // 128, -(-m // 128), 3)
        assert params[names.index("workspace")] == ws.data_ptr()
        assert params[names.index("counters")] == ct.data_ptr()
        assert ws.numel() >= grid[0] * grid[1] * 3 * 128 * 128


@pytest.mark.parametrize(
    ("make_bad", "message"),
    [
        (lambda x, o: (cuda(torch.zeros(4, K)), o), r"takes float16 or bfloat16 input"),
        (lambda x, o: (x, cuda(torch.zeros(5, N, dtype=torch.bfloat16))), r"'out'"),
        (lambda x, o: (x, cuda(torch.zeros(4, N, dtype=torch.float16))), r"'out': expected dtype"),
        (lambda x, o: (x.as_subclass(torch.Tensor), o), r"cuda:0 .* got one on cpu"),
    ],
)
def test_wrong_x_and_out_are_refused_after_the_template(make_bad, message):
    kernel, weights = make("persistent")
    assert_refused_after_template(kernel, weights, lambda: operands(4), make_bad, message)
