"""Re-run rows of a committed results file (`humming bench --merge-into FILE`).

A kernel change often needs only some rows of `benchmarks/results/h200/<suite>.json` measured
again (one spec, a few M). The new run's rows replace the file's rows of the same point (spec,
N, K, M, and for the MoE suite E and top-k) in place, and rows the file lacks are appended; the
file's other rows stay as they were measured. Only results from the same GPU model merge: a row
timed on another card would sit beside the file's rows as if comparable. The file's `command`
keeps its history: each merge appends which rows were re-run, when, with which command (and the
torch version when it differs), so the file still says how every row was produced.
"""

from __future__ import annotations

KEY_FIELDS = ("spec", "N", "K", "M", "E", "topk")


def row_key(row: dict) -> tuple:
    """The point a row measures (fields a suite lacks read as None)."""
    return tuple(row.get(f) for f in KEY_FIELDS)


def describe(rows: list[dict]) -> str:
    """A short account of rows: their specs and M values."""
    specs = sorted({r["spec"] for r in rows})
    ms = sorted({r["M"] for r in rows})
    return f"{', '.join(specs)} at M={','.join(str(m) for m in ms)}"


def check_device(base: dict, new: dict) -> None:
    """Refuse rows measured on another GPU model than the file's."""
    if base.get("device") != new.get("device"):
        raise ValueError(
            f"cannot merge rows measured on {new.get('device')!r} into a file measured on "
            f"{base.get('device')!r}: only the same GPU model's rows are comparable"
        )


def merge_rows(base: dict, new: dict) -> dict:
    """`base` with `new`'s rows in place of its rows of the same points (the rest appended);
    refuses results from another GPU model. `new` may hold no rows yet (a run cut short)."""
    check_device(base, new)
    fresh = {row_key(r): r for r in new.get("rows", [])}
    rows = [fresh.pop(row_key(r), r) for r in base.get("rows", [])]
    rows += list(fresh.values())
    merged = {**base, "rows": rows}
    if new.get("rows"):
        torch_note = ""
        if new.get("torch") != base.get("torch"):
            torch_note = f", torch {new.get('torch')}"
        merged["command"] = (
            f"{base.get('command', '')}; rows {describe(new['rows'])} re-run "
            f"{new.get('date')}{torch_note}: {new.get('command')}"
        )
        merged["date"] = new.get("date", base.get("date"))
        for field in ("omitted", "skipped"):  # reasons of this run's baselines and specs too
            if field in new:
                merged[field] = _union(base.get(field), new[field])
    return merged


def _union(old, new):
    """Both runs' omitted baselines (or skipped specs): name -> reason maps merged, lists joined;
    an empty or missing old entry (older files wrote empty lists) gives way to the new one."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **new}
    if isinstance(old, list) and isinstance(new, list):
        return old + [item for item in new if item not in old]
    return old or new
