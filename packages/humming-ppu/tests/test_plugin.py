"""The ppu plugin's probe (device names simulated through torch) and its place in the registry."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points

import pytest
import torch

from humming_core.device import DeviceNotAvailable, Registry
from humming_core.device.reference import PLUGIN as REFERENCE
from humming_ppu.device import PpuDevice
from humming_ppu.plugin import PLUGIN, PpuPlugin, is_ppu_name


def _torch_sees(monkeypatch, name: str | None, error: Exception | None = None) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: name is not None or error is not None)

    def device_name(index: int = 0) -> str:
        if error is not None:
            raise error
        assert index == 0
        return name

    monkeypatch.setattr(torch.cuda, "get_device_name", device_name)


@pytest.mark.parametrize("name", ["PPU-ZW810E", "ZW810E", "ppu-zw-m890p", "ZW-M890P"])
def test_probe_accepts_ppu_names(monkeypatch, name):
    _torch_sees(monkeypatch, name)
    plugin = PpuPlugin()
    assert plugin.probe() is True
    assert plugin.probe_reason == ""
    assert plugin.device_name == name


def test_probe_rejects_nvidia_gpu_with_its_name(monkeypatch):
    _torch_sees(monkeypatch, "NVIDIA H200")
    plugin = PpuPlugin()
    assert plugin.probe() is False
    assert plugin.probe_reason.startswith("device 0 is 'NVIDIA H200', not a PPU")


def test_probe_without_cuda_device(monkeypatch):
    _torch_sees(monkeypatch, None)
    plugin = PpuPlugin()
    assert plugin.probe() is False
    assert plugin.probe_reason.startswith("no torch CUDA device")


def test_probe_never_raises(monkeypatch):
    _torch_sees(monkeypatch, None, error=RuntimeError("driver version is insufficient"))
    plugin = PpuPlugin()
    assert plugin.probe() is False
    assert "driver version is insufficient" in plugin.probe_reason


def test_probe_on_this_machine_says_why():
    plugin = PpuPlugin()
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device; the no-device answer is simulated above")
    assert plugin.probe() is False
    assert plugin.probe_reason.startswith("no torch CUDA device")


def test_name_rule():
    assert is_ppu_name(" PPU-ZW810E ")
    assert not is_ppu_name("NVIDIA A100-SXM4-80GB")
    assert not is_ppu_name("Tesla ZW")  # the prefix, not a substring, decides


def test_plugin_contract_and_entry_point():
    assert (PLUGIN.name, PLUGIN.priority) == ("ppu", 200)
    assert PLUGIN.priority > 100  # above cuda, which a PPU reporting sm_80 could otherwise claim
    eps = {ep.name: ep.value for ep in entry_points(group="humming.devices")}
    assert eps.get("ppu") == "humming_ppu.plugin:PLUGIN"


@dataclass
class _EP:
    name: str
    target: object

    def load(self):
        return self.target


def test_registry_reports_probe_reason(monkeypatch):
    _torch_sees(monkeypatch, "NVIDIA H200")
    monkeypatch.delenv("HUMMING_DEVICE", raising=False)
    reg = Registry([_EP("ppu", PpuPlugin()), _EP("reference", REFERENCE)])
    ppu = reg.status()[0]
    assert (ppu.name, ppu.available) == ("ppu", False)
    assert "not a PPU" in ppu.reason
    assert reg.active_name() == "reference"


def test_found_ppu_wins_and_loads_a_ppu_device(monkeypatch):
    _torch_sees(monkeypatch, "PPU-ZW810E")
    monkeypatch.delenv("HUMMING_DEVICE", raising=False)
    reg = Registry([_EP("reference", REFERENCE), _EP("ppu", PpuPlugin())])
    assert reg.active_name() == "ppu"
    device = reg.active()
    assert isinstance(device, PpuDevice) and device.on_ppu
    assert (device.model.key, device.caps().sm_count) == ("810E", 20)


def test_load_without_a_ppu_refuses(monkeypatch):
    _torch_sees(monkeypatch, "NVIDIA H200")
    with pytest.raises(DeviceNotAvailable, match="not a PPU"):
        PpuPlugin().load()
