"""PpuDevice on the CPU: check's rejections, PPU candidates, render and the compile path end to end
through the fake SDK compiler (conftest), and load's refusal without a PPU."""

from __future__ import annotations

import pytest

from humming_core.device import DeviceNotAvailable, GemmProblem
from humming_core.spec import QuantSpec, presets
from humming_cuda.headers import humming_include_root
from humming_cuda.kernels.wna16 import FAMILY
from humming_ppu.caps import MODELS
from humming_ppu.device import DEFAULT_PPU_SMS, PpuDevice, tuning_caps
from humming_ppu.elf import read_device_binary
from humming_ppu.layout import PpuWna16Layout
from humming_ppu.toolchain import PpuToolchain

pytestmark = pytest.mark.cpu
E810, M890 = MODELS
PROBLEM = GemmProblem(n=4096, k=4096, m=1)


@pytest.fixture
def unverified(monkeypatch):
    monkeypatch.setenv("HUMMING_UNVERIFIED_KERNELS", "1")


def _with(spec: QuantSpec, **changes) -> QuantSpec:
    data = spec.model_dump(mode="json")
    for key, value in changes.items():
        data[key] = {**data[key], **value}
    return QuantSpec.model_validate(data)


def test_check_requires_opting_in_to_unverified_kernels(monkeypatch):
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    support = PpuDevice(E810).check(presets.W4A16_G128, PROBLEM)
    assert not support and "HUMMING_UNVERIFIED_KERNELS=1" in support.reason


@pytest.mark.parametrize(
    ("spec", "problem", "words"),
    [
        (presets.W4A16_G128, GemmProblem(n=4100, k=4096, m=1), "multiple of 8"),
        (presets.W8A8_FP8, PROBLEM, "PPU has no fp8 MMA"),
        (presets.W4A4_NVFP4, PROBLEM, "PPU has no fp4"),
        (presets.W4A4_INT4, PROBLEM, "PPU has no int4 MMA"),
        (presets.W8A8_INT8, PROBLEM, "wna16 on 810E: act.dtype='int8' is quantized"),
        (QuantSpec(weight=presets.FP8_BLOCK128.weight, act={"dtype": "bf16"}), PROBLEM, "'block'"),
        (_with(presets.W4A16_G128, weight={"zero_point": "int"}), PROBLEM, "use uint4"),
    ],
    ids=["n%8", "fp8-act", "fp4-act", "int4-act", "int8-act-family", "block-scales", "int-zero"],
)
def test_check_rejects_with_a_reason(unverified, spec, problem, words):
    support = PpuDevice(E810).check(spec, problem)
    assert not support and words in support.reason, support.reason


def test_check_accepts_wna16(unverified):
    for name in ("W4A16_G128", "W8A16", "MXFP4", "FP8_CHANNEL", "GPTQ_INT4"):
        assert PpuDevice(E810).check(getattr(presets, name), PROBLEM), name


def test_candidates_use_the_ppu_sm_count(unverified):
    assert tuning_caps(M890.caps).sm_count == DEFAULT_PPU_SMS and M890.caps.sm_count == 0
    device = PpuDevice(M890)
    cfg = device.candidates(presets.W4A16_G128, PROBLEM)[0]
    assert cfg.arch == "ppu_15"
    # 64 N tiles at M=1: split K to about 4 CTAs per SM of 20 SMs, not of the H200's 132.
    h200 = FAMILY.candidates(presets.W4A16_G128, PROBLEM, M890.caps)[0]
    assert (cfg.split_k, h200.split_k) == (1, 8)


def test_weight_layout_is_the_permuted_wna16_layout(unverified):
    device = PpuDevice(E810)
    cfg = device.candidates(presets.W4A16_G128, PROBLEM)[0]
    layout = device.weight_layout(presets.W4A16_G128, cfg)
    assert isinstance(layout, PpuWna16Layout) and layout.scales_before_mma


def test_render_compile_through_the_sdk_compiler(unverified, fake_sdk):
    root, calls = fake_sdk
    device = PpuDevice(E810)
    cfg = device.candidates(presets.W4A16_G128, PROBLEM)[0]
    source = device.render(presets.W4A16_G128, cfg)
    assert source.code.startswith("#define HUMMING_DIALECT 1\n") and source.arch == "ppu_10"
    assert source.meta["binding"]["family"] == "wna16"
    assert "fake PPU SDK" in device.fingerprint()
    artifact = device.compile(source)
    argv = calls()[-1]
    assert device.toolchain.compiler == root / "CUDA_SDK" / "bin" / "hgcc"
    assert argv[0].endswith("kernel.cu")  # the recorded argv starts after the program
    assert {"-arch=ppu_10", "-DUSE_PPU=1", f"-I{humming_include_root()}"} <= set(argv)
    binary = read_device_binary(artifact.binary)
    assert binary.machine == "ppu" and source.name in binary.entries
    assert artifact.meta["source"]["binding"]["config"]["arch"] == "ppu_10"
    with pytest.raises(DeviceNotAvailable, match="no PPU runtime here"):
        device.load(artifact)


def test_compile_error_reaches_the_caller(unverified, fake_sdk, monkeypatch):
    device = PpuDevice(E810, toolchain=PpuToolchain.locate())
    cfg = device.candidates(presets.W8A16, PROBLEM)[0]
    monkeypatch.setenv("FAKE_HGCC_FAIL", "1")
    with pytest.raises(Exception, match="ppu_mma"):
        device.compile(device.render(presets.W8A16, cfg))
