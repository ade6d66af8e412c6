"""Device registry: priority order, HUMMING_DEVICE override, broken plugins skipped with a reason."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest

from humming_core.device import API_VERSION, DeviceNotAvailable, Registry, get_device
from humming_core.device.reference import ReferenceDevice


@dataclass
class FakeEP:
    """Duck-typed importlib.metadata.EntryPoint."""

    name: str
    target: Any

    def load(self):
        if isinstance(self.target, Exception):
            raise self.target
        return self.target


class FakePlugin:
    api_version = API_VERSION

    def __init__(self, name, priority, available=True, reason="", raises=None):
        self.name, self.priority, self._available, self.probe_reason, self._raises = (
            name,
            priority,
            available,
            reason,
            raises,
        )
        self.loads = 0

    def probe(self):
        if self._raises:
            raise self._raises
        return self._available

    def load(self):
        self.loads += 1
        device = ReferenceDevice()
        device.name = self.name
        return device


def test_priority_order_and_first_available_wins():
    reg = Registry(
        [
            FakeEP("low", FakePlugin("low", 1)),
            FakeEP("high", FakePlugin("high", 50, available=False, reason="no chip")),
            FakeEP("mid", FakePlugin("mid", 10)),
        ]
    )
    assert reg.names() == ["high", "mid", "low"]
    assert reg.active_name() == "mid"
    assert reg.active().name == "mid"
    high = reg.status()[0]
    assert not high.available and high.reason == "no chip"


def test_env_override(monkeypatch):
    reg = Registry([FakeEP("a", FakePlugin("a", 10)), FakeEP("b", FakePlugin("b", 5))])
    monkeypatch.setenv("HUMMING_DEVICE", "b")
    assert reg.active().name == "b"
    monkeypatch.setenv("HUMMING_DEVICE", "nope")
    with pytest.raises(
        DeviceNotAvailable, match=r"no device plugin named 'nope'.*installed are a, b"
    ):
        reg.active()


def test_override_to_unavailable_device_says_why(monkeypatch):
    reg = Registry([FakeEP("gpu", FakePlugin("gpu", 10, available=False, reason="no GPU found"))])
    monkeypatch.setenv("HUMMING_DEVICE", "gpu")
    with pytest.raises(DeviceNotAvailable, match="no GPU found"):
        reg.active()


def test_broken_plugins_are_logged_and_skipped(caplog):
    bad_probe = FakePlugin("flaky", 90, raises=OSError("driver exploded"))
    old_api = FakePlugin("old", 80)
    old_api.api_version = 0
    reg = Registry(
        [
            FakeEP("broken", ImportError("no module named vendor_sdk")),
            FakeEP("flaky", bad_probe),
            FakeEP("old", old_api),
            FakeEP("ok", FakePlugin("ok", 1)),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="humming_core.device"):
        assert reg.active_name() == "ok"
    reasons = {s.name: s.reason for s in reg.status()}
    assert "import failed: ImportError: no module named vendor_sdk" in reasons["broken"]
    assert "probe raised OSError: driver exploded" in reasons["flaky"]
    assert "api_version 0" in reasons["old"]
    assert "vendor_sdk" in caplog.text and "driver exploded" in caplog.text


def test_device_loaded_once():
    plugin = FakePlugin("x", 1)
    reg = Registry([FakeEP("x", plugin)])
    assert reg.get("x") is reg.get("x")
    assert plugin.loads == 1


def test_installed_reference_plugin_is_found():
    # The real entry point from humming-core's metadata.
    assert get_device("reference").name == "reference"
