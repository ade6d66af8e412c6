"""The split-K helpers (humming_cuda.kernels.split_k) and the three split picks built on them
(wna16, wna16_decode, w8a8), pinned to the values the H200 sweeps chose them for."""

from __future__ import annotations

import pytest

from humming_core.device import GemmProblem
from humming_core.spec import presets
from humming_cuda.caps import caps_for_arch
from humming_cuda.kernels.split_k import clamp_split, pow2_fill, split_iterations
from humming_cuda.kernels.w8a8 import heuristics as w8a8
from humming_cuda.kernels.wna16 import heuristics as wna16

SM90 = caps_for_arch("sm_90a")  # no measured SM count: the picks assume 132


@pytest.mark.parametrize(
    ("ctas", "tiles", "split"),
    [
        (264, 448, 1),
        (264, 264, 1),
        (264, 224, 1),
        (264, 64, 4),
        (264, 48, 4),
        (264, 8, 32),
        (4, 1, 4),
    ],
)
def test_pow2_fill_is_the_largest_power_of_two_that_fits(ctas, tiles, split):
    assert pow2_fill(ctas, tiles) == split
    assert split * tiles <= ctas or split == 1


@pytest.mark.parametrize(
    ("split", "iters", "clamped"), [(8, 32, 8), (8, 16, 4), (64, 1024, 16), (4, 2, 1), (0, 100, 1)]
)
def test_clamp_keeps_four_iterations_per_split_and_at_most_sixteen(split, iters, clamped):
    assert clamp_split(split, iters) == clamped


def test_split_iterations_leave_no_split_empty():
    assert split_iterations(6, 4) == (3, 2)
    assert split_iterations(32, 2) == (2, 16)
    assert split_iterations(3, 8) == (3, 1)


@pytest.mark.parametrize(
    ("n", "k", "m", "split"),
    [
        (57344, 8192, 1, 2),  # 448 tiles: more than two per SM, still split in two at M <= 128
        (8192, 28672, 1, 4),
        (28672, 4096, 1, 2),
        (6144, 4096, 16, 4),
        (4096, 4096, 200, 4),
    ],
)
def test_wna16_split_fills_two_ctas_per_sm(n, k, m, split):
    problem = GemmProblem(n=n, k=k, m=m)
    assert wna16.candidates(presets.W4A16_G128, problem, SM90)[0].split_k == split


@pytest.mark.parametrize(("n", "k", "split"), [(4096, 14336, 8), (57344, 8192, 1)])
def test_w8a8_split_fills_four_ctas_per_sm_at_decode(n, k, split):
    configs = w8a8.candidates(presets.W8A8_FP8, GemmProblem(n=n, k=k, m=1), SM90)
    assert configs[0].split_k == split
