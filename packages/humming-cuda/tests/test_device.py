"""CudaDevice without a GPU: family delegation, reasons, render binding, plugin probe, compile report."""

from __future__ import annotations

from typing import Literal

import pytest

from humming_core.device import Device, GemmProblem, KernelSource, Support
from humming_core.spec import preset
from humming_cuda import kernels
from humming_cuda.device import CudaDevice
from humming_cuda.headers import humming_include_root
from humming_cuda.kernels import KernelConfig

SPEC = preset("W4A16_G128")
PROBLEM = GemmProblem(n=256, k=512, m=8)


class ToyConfig(KernelConfig):
    family: Literal["toy"] = "toy"
    tile: int = 64


class ToyFamily:
    """A family that supports only int4 weights and renders a trivial kernel."""

    name = "toy"
    config_type = ToyConfig

    def supports(self, spec, problem, caps):
        if spec.weight.dtype.name != "int4":
            return Support.no(f"weight dtype {spec.weight.dtype.name} is not int4")
        return Support.yes()

    def candidates(self, spec, problem, caps):
        return [ToyConfig(tile=128), ToyConfig(tile=64)]

    def weight_layout(self, spec, config, caps):
        return ("toy-layout", config.tile)

    def render(self, spec, config, caps):
        code = f'extern "C" __global__ void toy(float* o) {{ o[threadIdx.x] = {config.tile}; }}\n'
        return KernelSource(name="toy", code=code, arch=caps.arch, meta={"by": "toy"})

    def bind(self, function, spec, config, caps):
        raise AssertionError("not reached without a GPU")


class Refuser(ToyFamily):
    name = "refuser"

    def supports(self, spec, problem, caps):
        return Support.no("refuses everything")


@pytest.fixture
def families(monkeypatch):
    registered: list = []
    monkeypatch.setattr(kernels, "FAMILIES", registered)
    monkeypatch.setattr("humming_cuda.device.FAMILIES", registered)
    return registered


def test_device_satisfies_the_protocol():
    device = CudaDevice.for_arch("sm_90a")
    assert isinstance(device, Device) and device.name == "cuda"
    assert device.caps().arch == "sm_90a" and repr(device) == "CudaDevice(arch='sm_90a')"


def test_check_names_every_refusing_family(families):
    device = CudaDevice.for_arch("sm_80")
    assert "no cuda kernel family is registered" in device.check(SPEC, PROBLEM).reason
    families.append(Refuser())
    support = device.check(SPEC, PROBLEM)
    assert (
        not support
        and "on sm_80" in support.reason
        and "refuser: refuses everything" in support.reason
    )
    with pytest.raises(ValueError, match="refuses everything"):
        device.candidates(SPEC, PROBLEM)
    families.append(ToyFamily())
    assert device.check(SPEC, PROBLEM)
    assert device.candidates(SPEC, PROBLEM) == [ToyConfig(tile=128), ToyConfig(tile=64)]
    assert device.weight_layout(SPEC, ToyConfig()) == ("toy-layout", 64)


def test_render_adds_binding_and_our_header_root(families):
    families.append(ToyFamily())
    source = CudaDevice.for_arch("sm_89").render(SPEC, ToyConfig(tile=32))
    assert source.arch == "sm_89" and "= 32;" in source.code
    assert source.headers[0] == str(humming_include_root())  # our headers always enter the key
    binding = source.meta["binding"]
    assert binding["family"] == "toy" and binding["config"] == {"family": "toy", "tile": 32}
    assert binding["spec"] == SPEC.model_dump(mode="json") and source.meta["by"] == "toy"


def test_unknown_family_in_a_config_is_named(families):
    families.append(ToyFamily())

    class Stray(KernelConfig):
        family: Literal["stray"] = "stray"

    with pytest.raises(
        KeyError, match="no cuda kernel family named 'stray': registered families are toy"
    ):
        CudaDevice.for_arch("sm_90a").render(SPEC, Stray())


@pytest.mark.compile
def test_compile_report_for_another_arch(families, tmp_path, monkeypatch):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    from humming_core.jit import compile_report

    monkeypatch.setenv("HUMMING_CACHE_DIR", str(tmp_path))
    families.append(ToyFamily())
    device = CudaDevice.for_arch("sm_100a")
    report = compile_report(device, SPEC, PROBLEM)
    assert report["arch"] == "sm_100a" and report["family"] == "toy" and report["kernel"] == "toy"
    assert report["config"] == {"family": "toy", "tile": 128} and report["candidates"] == 2
    assert report["registers"] > 0 and report["spill_stores"] == 0 and report["binary_bytes"] > 0
    assert report["compiled_now"] and len(report["cache_key"]) == 64
    again = compile_report(device, SPEC, PROBLEM, config=ToyConfig(tile=128))
    assert not again["compiled_now"] and again["cache_key"] == report["cache_key"]
    with pytest.raises(ValueError, match="weight dtype e2m1 is not int4"):
        compile_report(device, preset("MXFP4"), PROBLEM)


def test_plugin_probe_never_raises_and_says_why():
    from humming_cuda.plugin import PLUGIN, CudaPlugin

    assert PLUGIN.name == "cuda" and PLUGIN.priority == 100
    ok = PLUGIN.probe()
    assert ok or PLUGIN.probe_reason  # here (no GPU): a reason such as "torch has no CUDA"

    class Broken(CudaPlugin):
        @staticmethod
        def _refusal():
            raise RuntimeError("boom")

    broken = Broken()
    assert (
        broken.probe() is False and "cuda probe failed: RuntimeError: boom" in broken.probe_reason
    )
