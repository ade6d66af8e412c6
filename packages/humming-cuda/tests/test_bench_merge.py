"""`humming bench --merge-into`: re-run rows replace a results file's rows of the same points."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from humming_cuda.bench import cli, dense, moe
from humming_cuda.bench.merge import merge_rows, row_key

H200 = "NVIDIA H200"


def _row(spec, m, us, n=6144, k=4096, **extra):
    return {"spec": spec, "N": n, "K": k, "M": m, "roof_us": 1.0, "us": {"humming": us}, **extra}


def _doc(rows, device=H200, date="2026-12-05", command="humming bench --suite dense", **extra):
    return {"device": device, "torch": "2.11.0+cu130", "date": date, "command": command,
            "rows": rows, "omitted": {}, **extra}  # fmt: skip


def test_rerun_rows_replace_their_points_in_place_and_new_points_append():
    base = _doc([_row("W4A16_G128", 1, 10.0), _row("W4A16_G128", 64, 20.0), _row("MXFP4", 1, 30.0)])
    new = _doc(
        [_row("W4A16_G128", 64, 15.0), _row("W4A16_G128", 128, 25.0)],
        date="2026-12-06",
        command="humming bench --suite dense --specs W4A16_G128 --m 64,128",
    )
    merged = merge_rows(base, new)
    assert [(r["spec"], r["M"], r["us"]["humming"]) for r in merged["rows"]] == [
        ("W4A16_G128", 1, 10.0),
        ("W4A16_G128", 64, 15.0),
        ("MXFP4", 1, 30.0),
        ("W4A16_G128", 128, 25.0),
    ]
    assert merged["date"] == "2026-12-06"
    assert merged["command"] == (
        "humming bench --suite dense; rows W4A16_G128 at M=64,128 re-run 2026-12-06: "
        "humming bench --suite dense --specs W4A16_G128 --m 64,128"
    )
    assert base["rows"][1]["us"]["humming"] == 20.0  # the file's document is not modified


def test_moe_rows_are_keyed_by_experts_and_top_k_too():
    a = _row("MXFP4", 8, 10.0, n=1536, k=2048, E=128, topk=8)
    b = _row("MXFP4", 8, 12.0, n=1536, k=2048, E=256, topk=8)
    assert row_key(a) != row_key(b)
    merged = merge_rows(_doc([a]), _doc([b]))
    assert [r["E"] for r in merged["rows"]] == [128, 256]


def test_rows_of_another_gpu_model_are_refused():
    with pytest.raises(ValueError, match=r"NVIDIA H100 80GB HBM3.*NVIDIA H200"):
        merge_rows(_doc([_row("W4A16_G128", 1, 10.0)]), _doc([], device="NVIDIA H100 80GB HBM3"))


def test_another_torch_version_is_recorded_and_omitted_reasons_joined():
    base = _doc([_row("W4A16_G128", 1, 10.0)], omitted={"peer": "not importable"})
    new = _doc([_row("W4A16_G128", 1, 9.0)], date="2026-12-06", omitted={"tinygemm_int4": "x"})
    new["torch"] = "2.12.0"
    merged = merge_rows(base, new)
    assert ", torch 2.12.0: " in merged["command"]
    assert merged["omitted"] == {"peer": "not importable", "tinygemm_int4": "x"}
    # the MoE file's older form: empty lists give way to the run's maps
    assert merge_rows(_doc([], omitted=[]), _doc([_row("W4A16_G128", 1, 1.0)], omitted={"a": "b"}))[
        "omitted"
    ] == {"a": "b"}


def test_a_run_cut_short_leaves_the_files_rows():
    base = _doc([_row("W4A16_G128", 1, 10.0)])
    merged = merge_rows(base, _doc([]))
    assert merged["rows"] == base["rows"] and merged["command"] == base["command"]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["bench", *argv])


def test_cli_merges_every_partial_save_and_the_result_into_the_file(monkeypatch, tmp_path):
    target = tmp_path / "dense.json"
    target.write_text(json.dumps(_doc([_row("W4A16_G128", 1, 10.0), _row("MXFP4", 1, 30.0)])))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: H200)
    plots = []
    monkeypatch.setattr(dense, "plot", lambda result, path, title: plots.append(result))
    seen = []

    def fake_run(on_row, **kwargs):
        partial = _doc([_row("MXFP4", 1, 20.0)], date="2026-12-06", command="humming bench x")
        on_row(partial)
        seen.append(json.loads(target.read_text()))  # a partial save keeps the file's rows
        return _doc(
            [_row("MXFP4", 1, 20.0), _row("MXFP4", 8, 21.0)], date="2026-12-06", command="x"
        )

    monkeypatch.setattr(dense, "run", fake_run)
    assert cli.run(_args("--specs", "MXFP4", "--m", "1,8", "--merge-into", str(target))) == 0
    assert [(r["spec"], r["M"], r["us"]["humming"]) for r in seen[0]["rows"]] == [
        ("W4A16_G128", 1, 10.0),
        ("MXFP4", 1, 20.0),
    ]
    written = json.loads(target.read_text())
    assert [(r["spec"], r["M"], r["us"]["humming"]) for r in written["rows"]] == [
        ("W4A16_G128", 1, 10.0),
        ("MXFP4", 1, 20.0),
        ("MXFP4", 8, 21.0),
    ]
    assert plots[-1] == written  # the plot shows the merged file


def test_cli_refuses_another_gpu_before_running(monkeypatch, tmp_path):
    target = tmp_path / "moe.json"
    target.write_text(json.dumps(_doc([])))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(moe, "run", lambda **kw: pytest.fail("ran on the wrong GPU"))
    with pytest.raises(ValueError, match="same GPU model"):
        cli.run(_args("--suite", "moe", "--merge-into", str(target)))
