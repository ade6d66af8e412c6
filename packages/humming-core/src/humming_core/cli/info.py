"""`humming info`: installed device plugins, why each is or is not usable, the active device's caps."""

from __future__ import annotations

from rich.table import Table

from ..device import DeviceNotAvailable, registry
from ..env import ENV
from .common import console


def register(sub) -> None:
    p = sub.add_parser(
        "info", help="device plugins, probe results, the active device's capabilities"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    reg = registry()
    table = Table(title="humming device plugins (highest priority first)")
    for col in ("plugin", "priority", "available", "why"):
        table.add_column(col)
    for st in reg.status():
        table.add_row(
            st.name,
            str(st.priority),
            "yes" if st.available else "no",
            st.reason or "probe succeeded",
        )
    console.print(table)
    try:
        device = reg.active()
    except DeviceNotAvailable as exc:
        console.print(f"[red]no active device: {exc}[/red]")
        return 1
    forced = " (forced by HUMMING_DEVICE)" if ENV.HUMMING_DEVICE else ""
    console.print(f"active device: [bold]{device.name}[/bold]{forced}")
    caps = device.caps()
    ct = Table(title=f"{device.name} capabilities")
    ct.add_column("field")
    ct.add_column("value")
    for field, value in caps.model_dump().items():
        ct.add_row(field, str(value))
    console.print(ct)
    console.print(f"fingerprint: {device.fingerprint()}")
    et = Table(title="environment")
    et.add_column("variable")
    et.add_column("value")
    et.add_column("meaning")
    for var in ENV:
        et.add_row(var.name, str(var.get()), var.help)
    console.print(et)
    return 0
