"""The PPU capability rows: sm80-class, N=16 MMA, unverified, found by driver name or arch."""

from __future__ import annotations

import pytest

from humming_ppu.caps import (
    ABSENT_FEATURES,
    MODELS,
    UnknownPpuModel,
    caps_for_arch,
    caps_for_name,
    model_for_name,
)


def test_810e_row():
    model = model_for_name("PPU-ZW810E")
    caps = model.caps
    assert (model.key, caps.device, caps.arch, caps.sm_count) == ("810E", "ppu", "ppu_10", 20)
    assert model.fp16_ops_per_sm_clk == 4096
    assert caps.has("cp.async") and caps.has("mbarrier")


def test_m890_row_marks_unknowns():
    caps = caps_for_name("ZW-M890P")
    assert caps.arch == "ppu_15"
    assert caps.sm_count == 0 and "unknown" in caps.notes
    assert model_for_name("ZW-M890P").fp16_ops_per_sm_clk is None


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.key)
def test_every_row_is_unverified_sm80_class(model):
    caps = model.caps
    assert caps.verified is False and caps.notes
    for feature in ABSENT_FEATURES:
        assert not caps.has(feature), feature
    shapes = [s for shapes in caps.mma.values() for s in shapes]
    assert shapes and all(s.startswith("ppu.mma.m16n16") for s in shapes)
    assert set(caps.mma) == {"fp16", "bf16", "int8"}  # no fp8 / int4 / fp4 operands


def test_lookup_errors_name_the_fix():
    with pytest.raises(UnknownPpuModel, match=r"'PPU-X9'.*810E.*caps.py"):
        caps_for_name("PPU-X9")
    with pytest.raises(UnknownPpuModel, match=r"sm_80.*ppu_10, ppu_15"):
        caps_for_arch("sm_80")
    assert caps_for_arch("ppu_10") is caps_for_name("ZW810E")
