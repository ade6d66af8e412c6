"""The environment table: typed parsing, clear errors, and docs that list every variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from humming_core.env import ENV, VARIABLES

DOC = Path(__file__).resolve().parents[3] / "docs" / "environment.md"


def test_docs_list_every_variable():
    text = DOC.read_text()
    missing = [v.name for v in VARIABLES if f"`{v.name}`" not in text]
    assert not missing, f"docs/environment.md does not describe {missing}"


def test_typed_values(monkeypatch, tmp_path):
    monkeypatch.setenv("HUMMING_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HUMMING_COMPILE_WORKERS", "3")
    monkeypatch.setenv("HUMMING_TEST_REQUIRE", "cuda, ppu")
    monkeypatch.setenv("HUMMING_DISABLE_DISK_CACHE", "yes")
    assert tmp_path == ENV.HUMMING_CACHE_DIR
    assert ENV.HUMMING_COMPILE_WORKERS == 3
    assert ENV.HUMMING_TEST_REQUIRE == ("cuda", "ppu")
    assert ENV.HUMMING_DISABLE_DISK_CACHE is True


def test_bad_values_name_the_variable(monkeypatch):
    monkeypatch.setenv("HUMMING_COMPILE_WORKERS", "many")
    with pytest.raises(ValueError, match="HUMMING_COMPILE_WORKERS='many': expected an integer"):
        _ = ENV.HUMMING_COMPILE_WORKERS
    monkeypatch.setenv("HUMMING_DISABLE_DISK_CACHE", "maybe")
    with pytest.raises(ValueError, match="HUMMING_DISABLE_DISK_CACHE='maybe': expected a boolean"):
        _ = ENV.HUMMING_DISABLE_DISK_CACHE


def test_undeclared_variable_is_an_attribute_error():
    with pytest.raises(AttributeError, match="HUMMING_NOPE is not a declared"):
        _ = ENV.HUMMING_NOPE
