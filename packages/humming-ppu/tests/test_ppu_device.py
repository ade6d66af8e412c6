"""PpuDevice on the CPU: check's rejections, PPU candidates, render and the compile path end to end
through the fake SDK compiler (conftest), and load's refusal without a PPU; WnA16 for 16-bit
activations, W8A8 / W4A8 for int8 ones. PpuEmulationDevice's choices for an sm_90a row."""

from __future__ import annotations

import pytest

from humming_core.device import DeviceNotAvailable, GemmProblem
from humming_core.spec import QuantSpec, presets
from humming_cuda.headers import humming_include_root
from humming_cuda.kernels.wna16 import FAMILY
from humming_ppu.caps import MODELS
from humming_ppu.device import DEFAULT_PPU_SMS, PpuDevice, tuning_caps
from humming_ppu.elf import read_device_binary
from humming_ppu.emulation import PpuEmulationDevice
from humming_ppu.layout import PpuW8a8Layout, PpuWna16Layout
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
        (presets.W8A8_INT8, GemmProblem(n=4096, k=4104, m=1), "w8a8 on 810E: K=4104"),
        (presets.W4A8_FP8, PROBLEM, "PPU has no fp8 MMA"),
        (QuantSpec(weight=presets.FP8_BLOCK128.weight, act={"dtype": "bf16"}), PROBLEM, "'block'"),
        (_with(presets.W4A16_G128, weight={"zero_point": "int"}), PROBLEM, "use uint4"),
    ],
    ids=[
        "n%8",
        "fp8-act",
        "fp4-act",
        "int4-act",
        "int8-k%16",
        "w4a8-fp8",
        "block-scales",
        "int-zero",
    ],
)
def test_check_rejects_with_a_reason(unverified, spec, problem, words):
    support = PpuDevice(E810).check(spec, problem)
    assert not support and words in support.reason, support.reason


def test_check_accepts_wna16(unverified):
    for name in ("W4A16_G128", "W8A16", "MXFP4", "FP8_CHANNEL", "GPTQ_INT4"):
        assert PpuDevice(E810).check(getattr(presets, name), PROBLEM), name


@pytest.mark.parametrize("name", ["W8A8_INT8", "W4A8_INT8"])
def test_int8_activations_run_the_w8a8_family(unverified, name):
    spec = presets.preset(name)
    device = PpuDevice(E810)
    problem = GemmProblem(n=4096, k=4096, m=64, act_dtype="int8")
    assert device.check(spec, problem)
    cfg = device.candidates(spec, problem)[0]
    assert (cfg.family, cfg.arch) == ("w8a8", "ppu_10")
    # no programmatic dependent launch on the PPU: the w8a8 bind hands its quantizer this flag
    assert cfg.pdl is False
    assert isinstance(device.weight_layout(spec, cfg), PpuW8a8Layout)
    source = device.render(spec, cfg)
    assert source.code.startswith("#define HUMMING_DIALECT 1\n")
    assert source.meta["binding"]["family"] == "w8a8"


def test_w8a8_render_compile_through_the_sdk_compiler(unverified, fake_sdk):
    _, calls = fake_sdk
    device = PpuDevice(M890)
    spec = presets.W8A8_INT8
    cfg = device.candidates(spec, PROBLEM)[0]
    source = device.render(spec, cfg)
    artifact = device.compile(source)
    argv = calls()[-1]
    assert {"-arch=ppu_15", "-DUSE_PPU=1", "-ppu-mbar-yield-analysis=false"} <= set(argv)
    entries = read_device_binary(artifact.binary).entries
    # the GEMM and the module's own activation quantizers, in one PPU binary
    assert {source.name, f"{source.name}_quant_fp16", f"{source.name}_quant_bf16"} <= set(entries)
    with pytest.raises(DeviceNotAvailable, match="no PPU runtime here"):
        device.load(artifact)


def test_emulation_renders_both_families_in_its_dialect():
    device = PpuEmulationDevice(arch="sm_90a")
    for spec, family in ((presets.W4A16_G128, "wna16"), (presets.W4A8_INT8, "w8a8")):
        problem = GemmProblem(n=4096, k=4096, m=16, act_dtype=spec.act.dtype.name)
        cfg = device.candidates(spec, problem)[0]
        source = device.render(spec, cfg)
        assert source.code.startswith("#define HUMMING_DIALECT 2\n") and cfg.family == family
        assert source.meta["binding"]["family"] == family and source.arch == "sm_90a"
    support = device.check(presets.W8A8_FP8, PROBLEM)
    assert not support and "PPU has no fp8 MMA" in support.reason


def test_candidates_use_the_ppu_sm_count(unverified):
    assert tuning_caps(M890.caps).sm_count == DEFAULT_PPU_SMS and M890.caps.sm_count == 0
    device = PpuDevice(M890)
    cfg = device.candidates(presets.W4A16_G128, PROBLEM)[0]
    assert cfg.arch == "ppu_15"
    # 32 N tiles of 128 at M=1: split K to fill about 2 CTAs per SM of 20 SMs (the decode floor of
    # 2), not of the H200's 132 (8, capped at 4 by the 16 K iterations).
    h200 = FAMILY.candidates(presets.W4A16_G128, PROBLEM, M890.caps)[0]
    assert (cfg.split_k, h200.split_k) == (2, 4)


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
