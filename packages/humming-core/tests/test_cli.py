"""The `humming` CLI on a CPU-only machine."""

from __future__ import annotations

import pytest
import torch

from humming_core.cli import main


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU machine activates cuda, not reference")
def test_info_on_a_cpu_machine_shows_reference_active_and_why(capsys, monkeypatch):
    monkeypatch.delenv("HUMMING_DEVICE", raising=False)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "active device: reference" in out
    assert "HUMMING_CACHE_DIR" in out
    # Every installed device plugin is listed with the reason it is not usable here.
    assert "cuda" in out and "ppu" in out
    assert "not a PPU" in out or "no torch CUDA device" in out


def test_spec_lists_presets_and_explains_one(capsys):
    assert main(["spec"]) == 0
    listing = capsys.readouterr().out
    for name in ("W4A16_G128", "MXFP4", "NVFP4", "FP8_BLOCK128"):
        assert name in listing
    assert main(["spec", "W4A16_G128", "--n", "8192", "--k", "8192"]) == 0
    out = capsys.readouterr().out
    assert "bits per weight: 4.1250" in out
    assert "reference" in out and "yes" in out


def test_spec_json_round_trips(capsys):
    assert main(["spec", "NVFP4", "--json"]) == 0
    text = capsys.readouterr().out
    assert main(["spec", text]) == 0


def test_spec_names_an_input_glu(capsys):
    from humming_core.spec import W8A8_FP8

    spec = W8A8_FP8.replace(act={**W8A8_FP8.act.model_dump(), "input_glu": "gelu_tanh_mul"})
    assert main(["spec", spec.model_dump_json()]) == 0
    assert "input GLU gelu_tanh_mul (x: gate then up columns, 2K)" in capsys.readouterr().out


def test_bad_spec_is_a_clear_error(capsys):
    assert main(["spec", "W5A16"]) == 2
    assert "unknown preset 'W5A16'" in capsys.readouterr().err


@pytest.mark.compile
def test_compile_reports_resources_for_an_arch_without_its_gpu(capsys, monkeypatch, tmp_path):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is not installed")
    monkeypatch.setenv("HUMMING_CACHE_DIR", str(tmp_path))
    assert main(["compile", "--arch", "sm_80", "--spec", "W4A16_G128", "--m", "1"]) == 0
    out = capsys.readouterr().out
    for field in ("registers", "spill_stores", "binary_bytes", "cache_key", "wna16"):
        assert field in out
    assert main(["compile", "--arch", "sm_75", "--spec", "NVFP4"]) == 2
    assert "cuda sm_75 cannot run NVFP4" in capsys.readouterr().err
