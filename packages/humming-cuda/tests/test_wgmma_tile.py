"""CPU tests of what the sm_90a wgmma families share (humming_cuda.kernels.wgmma_tile), run for
each of them: the arch and problem refusals (with reasons naming the mma.sync family that takes
over), the 128x128 tile and the shared-memory fit of the configs, the render-time arch check, and
their place in the registry (before their fallback family) and which of the two a problem gets.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from humming_core.device import GemmProblem
from humming_core.spec import QuantSpec, presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.device import CudaDevice
from humming_cuda.kernels import FAMILIES
from humming_cuda.kernels.w8a8_wgmma import FAMILY as W8A8_WGMMA
from humming_cuda.kernels.wna16_wgmma import FAMILY as WNA16_WGMMA

SM90 = caps_for_arch("sm_90a")
LARGE = GemmProblem(n=4096, k=4096, m=1024)


@dataclass(frozen=True)
class Wgmma:
    family: object
    spec: QuantSpec
    fallback: str  # the mma.sync family that takes what this one refuses
    k_multiple: int  # 16 bytes of activations: what TMA's row strides need
    min_m: int  # the smallest M it takes
    fallback_m: int  # an M it takes but leaves to the mma.sync families (`prefers`)
    small_family: str  # the family that takes fallback_m


WGMMA = (
    Wgmma(W8A8_WGMMA, presets.W8A8_FP8, "w8a8", 16, 17, 16, "w8a8"),
    # from M = 17 on (4-bit codes) every M is the register or shared-memory form's; M <= 16 the
    # decode kernel's (two n8 token blocks from M = 9)
    Wgmma(WNA16_WGMMA, presets.W4A16_G128, "wna16", 8, 1, 16, "wna16_decode"),
)
IDS = [w.family.name for w in WGMMA]


@pytest.mark.parametrize("w", WGMMA, ids=IDS)
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_100a", "sm_120a"])
def test_other_arches_are_refused_with_the_reason(w, arch):
    support = w.family.supports(w.spec, LARGE, caps_for_arch(arch))
    assert not support
    assert "sm_90a" in support.reason and f"{w.fallback} family" in support.reason


@pytest.mark.parametrize("w", WGMMA, ids=IDS)
@pytest.mark.parametrize(
    ("problem", "words"),
    [
        ("below min_m", "M >= "),
        (GemmProblem(n=4096, k=4096, m=None), "M >= "),
        (GemmProblem(n=4096, k=4096 + 4, m=256), "multiple of"),
        (GemmProblem(n=4096, k=0, m=256), "positive"),
        (GemmProblem(n=4096, k=4096, m=256, num_experts=8, topk=2), "dense"),
    ],
)
def test_small_m_and_bad_shapes_are_refused(w, problem, words):
    if problem == "below min_m":
        problem = GemmProblem(n=4096, k=4096, m=w.min_m - 1)
    support = w.family.supports(w.spec, problem, SM90)
    assert not support and words in support.reason
    if words == "M >= ":
        assert f"M >= {w.min_m}" in support.reason
        assert w.family.supports(w.spec, GemmProblem(n=4096, k=4096, m=w.min_m), SM90)
    if words == "multiple of":
        assert f"multiple of {w.k_multiple}" in support.reason
    assert w.family.candidates(w.spec, problem, SM90) == []


@pytest.mark.parametrize("w", WGMMA, ids=IDS)
def test_k_multiple_of_16_bytes_is_taken(w):
    assert w.family.supports(w.spec, GemmProblem(n=4096, k=4096 + w.k_multiple, m=256), SM90)


@pytest.mark.parametrize("w", WGMMA, ids=IDS)
def test_configs_are_one_tile_that_fits_shared_memory(w):
    """128 x 128 with a producer and two consumer warpgroups; wna16_wgmma's register-A form (its
    choice at this size) spans 256 weight columns; w8a8_wgmma offers each ring depth persistent,
    then one CTA per tile."""
    configs = w.family.candidates(w.spec, LARGE, SM90)
    assert len(configs) == (4 if w.family.name == "w8a8_wgmma" else 2)
    wide = w.family.name == "wna16_wgmma"
    for cfg in configs:
        assert cfg.smem_bytes <= SM90.smem_per_block
        assert (cfg.block_m, cfg.block_n, cfg.threads) == (128, 256 if wide else 128, 384)
    with pytest.raises(ValueError):
        w.family.config_type(arch="sm_90a", stages=1)
    with pytest.raises(ValueError):
        w.family.config_type(arch="sm_90a", stages=9)


@pytest.mark.parametrize("w", WGMMA, ids=IDS)
def test_render_refuses_a_config_of_another_arch(w):
    cfg = w.family.candidates(w.spec, LARGE, SM90)[0]
    with pytest.raises(ValueError, match=r"config\.arch"):
        w.family.render(w.spec, cfg, caps_for_arch("sm_89"))


@pytest.mark.parametrize("w", WGMMA, ids=IDS)
def test_registered_before_the_fallback_and_routed_large_m_here(w, monkeypatch):
    names = [f.name for f in FAMILIES]
    assert names.index(w.family.name) < names.index(w.fallback)
    assert w.family.hardware_verified is True
    device = CudaDevice.for_arch("sm_90a")
    monkeypatch.delenv("HUMMING_UNVERIFIED_KERNELS", raising=False)
    assert device.candidates(w.spec, LARGE)[0].family == w.family.name
    small = GemmProblem(n=4096, k=4096, m=w.fallback_m)
    assert device.candidates(w.spec, small)[0].family == w.small_family
    assert CudaDevice.for_arch("sm_89").candidates(w.spec, LARGE)[0].family == w.fallback


@pytest.mark.parametrize(
    ("n", "m", "block_m", "split"),
    [(384, 1024, 64, 4), (4096, 128, 64, 4), (12288, 128, 128, 2), (6144, 256, 128, 2)],
)
def test_wna16_wgmma_splits_k_where_its_grid_is_small(n, m, block_m, split):
    """Grids of 32-192 tiles that once went to the split-K wna16 kernels run the register form
    with its own K split (at most one wave of CTAs on 132 SMs)."""
    problem = GemmProblem(n=n, k=4096, m=m)
    cfg = CudaDevice.for_arch("sm_90a").candidates(presets.GPTQ_INT4, problem)[0]
    assert cfg.family == "wna16_wgmma" and cfg.weights_in_registers
    assert (cfg.rs_block_m, cfg.split_k) == (block_m, split)
    assert -(-m // block_m) * -(-n // 256) * split <= 132


def test_w8a8_wgmma_takes_every_large_m_grid():
    """The mma.sync w8a8 kernels are slower at M >= 128 even on a 48-tile grid (H200: 80 us there
    against 24.5 us here for 6144x4096 at M=128), so w8a8_wgmma has no grid threshold."""
    problem = GemmProblem(n=384, k=4096, m=128)
    assert CudaDevice.for_arch("sm_90a").candidates(presets.W8A8_FP8, problem)[0].family == (
        "w8a8_wgmma"
    )
