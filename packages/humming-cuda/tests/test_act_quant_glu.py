"""The fused input GLU of the activation quantizer (ActSpec.input_glu) without a GPU: the GLU
entries compile with NVRTC for every arch the quantized-activation families run on, plain
quantizer units keep their text and names, and a W8A8 / W4A8 layer's calls (fake launches) take
x = [gate | up] with 2K columns: the quantizer reads x with its row stride and writes K columns,
the GEMM runs K, later calls take the quick path, and a K-column x is refused naming the form.
GPU checks of the values: test_input_glu_cuda.py."""

from __future__ import annotations

import pytest
import torch
from fake_launch import FakeFunction, Recorder, cuda, fake_act_quantizer, quant_launches

from humming_core.device import GemmProblem
from humming_core.numerics import quantize_weight
from humming_core.spec import ActSpec, presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.act_quant import GLU_CODES, ActQuantFormat, render_source

GLUS = list(GLU_CODES)
SM90 = caps_for_arch("sm_90a")
N, K = 256, 512


def _act(code="e4m3", gran="token", glu="silu_mul"):
    quant = "static" if gran == "tensor" else "dynamic"
    size = 128 if gran == "group" else None
    return ActSpec(dtype=code, quant=quant, granularity=gran, group_size=size, input_glu=glu)


def test_plain_units_keep_their_text_and_glu_units_name_the_gate():
    plain = ActQuantFormat.from_spec(_act(glu="none"))
    assert repr(plain) == "ActQuantFormat(code='e4m3', mode='token', group=0, wide=False)"
    assert "HUMMING_ACT_QUANT_ENTRY(humming_x_quant_fp16, half, 1, 0, 8)\n" in plain.entries(
        "humming_x"
    )
    fused = ActQuantFormat.from_spec(_act(code="int8", gran="group", glu="gelu_tanh_mul"))
    assert repr(fused).endswith("glu='gelu_tanh_mul')")
    text = fused.entries("humming_x")
    assert "HUMMING_ACT_QUANT_GLU_ENTRY(humming_x_quant_bf16, nv_bfloat16, 0, 1, 128, 4)" in text
    assert fused.x_columns == 2 and plain.x_columns == 1
    names = {render_source(f, "sm_90a").meta["base"] for f in (plain, fused)}
    assert len(names) == 2  # a fused unit never shares a plain one's kernel names
    with pytest.raises(ValueError, match="not wide, not interleaved"):
        ActQuantFormat.from_spec(_act(glu="silu_mul"), interleave=True)


@pytest.mark.compile
@pytest.mark.parametrize("glu", GLUS)
@pytest.mark.parametrize(
    ("code", "gran", "arch"),
    [
        ("int8", "token", "sm_75"),
        ("int8", "group", "sm_80"),
        ("e4m3", "tensor", "sm_89"),
        ("e4m3", "token", "sm_90a"),
        ("e4m3", "group", "sm_100a"),
        ("int8", "token", "sm_120a"),
    ],
)
def test_glu_units_compile(glu, code, gran, arch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    from humming_cuda.compiler import compile_source

    source = render_source(ActQuantFormat.from_spec(_act(code, gran, glu)), arch)
    assert "HUMMING_ACT_QUANT_GLU_ENTRY" in source.code
    assert compile_source(source).binary


@pytest.mark.compile
@pytest.mark.parametrize(
    ("name", "arch", "m", "family"),
    [
        ("W8A8_FP8", "sm_90a", 1, "w8a8"),
        ("W8A8_FP8", "sm_90a", 256, "w8a8_wgmma"),
        ("W4A8_FP8", "sm_90a", 4096, "w4a8_wgmma"),
        ("W4A8_FP8", "sm_90a", 1, "w4a8_decode"),
        ("FP8_BLOCK128", "sm_89", 64, "w8a8"),
        ("W8A8_INT8", "sm_80", 64, "w8a8"),
    ],
)
def test_every_quantized_activation_family_builds_the_fused_quantizer(name, arch, m, family):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    from humming_cuda.compiler import compile_source
    from humming_cuda.device import CudaDevice

    spec = presets.preset(name)
    spec = spec.replace(act=spec.act.model_copy(update={"input_glu": "gelu_mul"}))
    device = CudaDevice.for_arch(arch)
    config = device.candidates(spec, GemmProblem(n=4096, k=4096, m=m))[0]
    assert config.family == family
    source = device.render(spec, config)
    assert source.code.count("HUMMING_ACT_QUANT_GLU_ENTRY(") == 2  # fp16 and bf16 input
    assert compile_source(source).binary


class FakeMaps:
    """The W8A8-wgmma kernel's tensor maps as (address, rows, row bytes, row stride)."""

    def get(self, t, what, packed=False, box_rows=128):
        rows, k = t.shape
        return self.of(
            t.data_ptr(), rows, k * t.element_size(), t.stride(0) * t.element_size(), what
        )

    def of(self, address, rows, row_bytes, row_stride, what, packed=False, box_rows=128):
        from humming_cuda.kernels.w8a8_wgmma.tma import TensorMapParam

        return TensorMapParam(address, rows, row_bytes, row_stride, box_rows, packed, *[0] * 10)


def _glu_spec(name: str):
    spec = presets.preset(name)
    return spec.replace(act=spec.act.model_copy(update={"input_glu": "silu_mul"}))


def _kernel(form: str):
    """A fake-launched kernel of `form` for a W8A8-fp8 / W4A8-fp8 layer with an input GLU, and
    its packed weights on the fake cuda:0."""
    from humming_cuda.kernels import w8a8, w8a8_wgmma
    from humming_cuda.kernels.w8a8.bind import W8a8Kernel
    from humming_cuda.kernels.w8a8_wgmma.bind import W8a8WgmmaKernel
    from humming_cuda.kernels.w8a8_wgmma.config import W8a8WgmmaConfig

    if form == "mma":
        spec = _glu_spec("W4A8_FP8")
        family = w8a8.FAMILY
        config = family.candidates(spec, GemmProblem(n=N, k=K, m=1), SM90)[0]
        kernel = W8a8Kernel(FakeFunction(), spec, config)
    else:
        spec, family = _glu_spec("W8A8_FP8"), w8a8_wgmma.FAMILY
        kernel = W8a8WgmmaKernel(FakeFunction(), spec, W8a8WgmmaConfig(arch="sm_90a", stages=4))
        kernel.maps = FakeMaps()
    kernel.launcher = Recorder(kernel.launcher.ctypes)
    cw = quantize_weight(torch.randn(N, K, generator=torch.Generator().manual_seed(5)), spec)
    packed = family.weight_layout(spec, config if form == "mma" else kernel.config, SM90)
    return kernel, {k: cuda(t) for k, t in packed.pack(cw, "cpu").items()}


@pytest.mark.parametrize("form", ["mma", "wgmma"])
def test_calls_take_gate_and_up_columns(monkeypatch, form):
    fake_act_quantizer(monkeypatch)
    kernel, weights = _kernel(form)
    call = kernel.prepare(**weights)
    full_checks = []
    checked_call = call._checked_call
    call._checked_call = lambda *a: full_checks.append(1) or checked_call(*a)
    for m in (3, 40, 3):
        # a wider buffer viewed as [gate | up]: the quantizer reads x with its own row stride
        x = cuda(torch.randn(m, 2 * K + 64).to(torch.bfloat16)[:, : 2 * K])
        out = cuda(torch.zeros(m, N, dtype=torch.bfloat16))
        call(x, out)
        q_names = kernel.quantizer._by_dtype[torch.bfloat16][1].names
        quant = quant_launches(kernel)[-1][3]
        assert quant[q_names.index("x")] == x.data_ptr()
        assert quant[q_names.index("K")] == K and quant[q_names.index("lda")] == 2 * K + 64
        gemm = kernel.launcher.launches[-1][3]
        names = kernel.signature.names
        assert gemm[names.index("K")] == K and gemm[names.index("M")] == m
    assert len(full_checks) == 1  # the later calls took the quick path
    x = cuda(torch.randn(3, K).to(torch.bfloat16))
    with pytest.raises(ValueError, match=r"\[gate \| up\], 2K columns \(an even number\)"):
        call(cuda(torch.randn(3, 2 * K - 1).to(torch.bfloat16)), cuda(torch.zeros(3, N)))
    with pytest.raises(ValueError, match="K") as refused:
        call(x, cuda(torch.zeros(3, N, dtype=torch.bfloat16)))  # K columns: gate only
    print(refused.value)
