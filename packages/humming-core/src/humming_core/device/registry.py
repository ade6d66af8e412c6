"""Device registry over the `humming.devices` entry-point group.

Plugins are ordered by priority; the first whose probe succeeds is active unless HUMMING_DEVICE
names one. A plugin that fails to import, load or probe is logged and skipped, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from ..env import ENV
from .protocol import API_VERSION, Device, DevicePlugin

GROUP = "humming.devices"
log = logging.getLogger("humming_core.device")


@dataclass
class PluginStatus:
    """One discovered plugin and what happened when it was probed."""

    name: str
    priority: int = -1
    plugin: DevicePlugin | None = None
    available: bool = False
    reason: str = ""


class DeviceNotAvailable(RuntimeError):
    pass


class Registry:
    def __init__(self, eps: Iterable[EntryPoint] | None = None) -> None:
        self._eps = list(entry_points(group=GROUP) if eps is None else eps)
        self._status: list[PluginStatus] | None = None
        self._devices: dict[str, Device] = {}

    def status(self) -> list[PluginStatus]:
        """All plugins, highest priority first, each probed once."""
        if self._status is None:
            self._status = sorted(
                (self._inspect(ep) for ep in self._eps), key=lambda s: -s.priority
            )
        return self._status

    def _inspect(self, ep: EntryPoint) -> PluginStatus:
        st = PluginStatus(name=ep.name)
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken plugin must not take the others down
            st.reason = f"import failed: {type(exc).__name__}: {exc}"
            log.warning("humming device plugin %r skipped: %s", ep.name, st.reason)
            return st
        st.plugin, st.priority = plugin, int(getattr(plugin, "priority", -1))
        if getattr(plugin, "api_version", None) != API_VERSION:
            st.reason = f"api_version {getattr(plugin, 'api_version', None)!r} != {API_VERSION}"
            log.warning("humming device plugin %r skipped: %s", ep.name, st.reason)
            return st
        try:
            st.available = bool(plugin.probe())
        except Exception as exc:
            st.reason = f"probe raised {type(exc).__name__}: {exc}"
            log.warning("humming device plugin %r skipped: %s", ep.name, st.reason)
            return st
        if not st.available:
            st.reason = getattr(plugin, "probe_reason", "") or "probe found no such device"
        return st

    def names(self) -> list[str]:
        return [s.name for s in self.status()]

    def get(self, name: str) -> Device:
        """Load the named device (its probe must have succeeded)."""
        if name in self._devices:
            return self._devices[name]
        for st in self.status():
            if st.name != name:
                continue
            if not st.available:
                raise DeviceNotAvailable(f"device {name!r} is not available: {st.reason}")
            try:
                device = st.plugin.load()
            except Exception as exc:
                raise DeviceNotAvailable(
                    f"device {name!r} failed to load: {type(exc).__name__}: {exc}"
                ) from exc
            self._devices[name] = device
            return device
        raise DeviceNotAvailable(
            f"no device plugin named {name!r}: installed are {', '.join(self.names()) or 'none'}"
        )

    def load_for_compile(self, name: str) -> Device:
        """Load a device whose hardware may be absent, to render and compile for another machine."""
        for st in self.status():
            if st.name == name and st.plugin is not None:
                return self._devices.get(name) or st.plugin.load()
        raise DeviceNotAvailable(
            f"no loadable device plugin named {name!r}: installed are {', '.join(self.names()) or 'none'}"
        )

    def active_name(self) -> str:
        forced = ENV.HUMMING_DEVICE
        if forced:
            return forced
        for st in self.status():
            if st.available:
                return st.name
        raise DeviceNotAvailable(
            "no humming device is available (is humming-core installed with its entry points?)"
        )

    def active(self) -> Device:
        return self.get(self.active_name())


_DEFAULT: Registry | None = None


def registry() -> Registry:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry()
    return _DEFAULT


def get_device(name: str | None = None) -> Device:
    """The named device, or the active one."""
    return registry().get(name) if name else registry().active()
