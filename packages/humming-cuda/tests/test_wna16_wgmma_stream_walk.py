"""The stream-K kernel's walk (include/humming/kernel/wna16_wgmma_stream.cuh, Work / slot /
Partials), transcribed: over many grids of tiles, K steps and CTA counts, every (tile, K step)
iteration belongs to exactly one CTA's range; the segments of a tile are consecutive CTAs' and
`owner` finds them; each partial segment writes a workspace slot no other segment of the launch
writes; the counter of a split tile (indexed by the CTA holding its first step) serves no other
split tile; and the segments a tile's last arrival reads are the ones that were written. The
kernel's formulas are written here as they are in the header, so a change to one without the
other fails the header text check below."""

from __future__ import annotations

from pathlib import Path

import pytest

HEADER = (
    Path(__file__).parents[1] / "src/humming_cuda/include/humming/kernel/wna16_wgmma_stream.cuh"
).read_text()


class Work:
    def __init__(self, tiles: int, steps: int, ctas: int) -> None:
        total = tiles * steps
        self.steps, self.ctas = steps, ctas
        self.per, self.extra = total // ctas, total % ctas

    def first(self, c: int) -> int:
        return c * self.per + min(c, self.extra)

    def owner(self, x: int) -> int:
        longer = self.extra * (self.per + 1)
        return x // (self.per + 1) if x < longer else self.extra + (x - longer) // self.per


def slot(w: Work, c: int, t0: int) -> tuple[int, int]:
    return (c, 0 if w.first(c) >= t0 else 1)


def test_the_transcription_matches_the_header():
    for text in (
        "HM_DEVICE int first(int c) const { return c * per + min(c, extra); }",
        "const int longer = extra * (per + 1);",
        "return x < longer ? x / (per + 1) : extra + (x - longer) / per;",
        "const int which = w.first(c) >= t0 ? 0 : 1;",
        "p.c0 = w.owner(t0);",
        "p.segments = w.owner(t0 + w.steps - 1) - p.c0 + 1;",
        "last = atomicAdd(counters + p.c0, 1) == p.segments - 1;",
    ):
        assert text in HEADER, text


def segments(w: Work, c: int) -> list[tuple[int, int, int]]:
    """CTA c's (t0, k0, iters), as consume_all walks them."""
    out, x, end = [], w.first(c), w.first(c + 1)
    while x < end:
        k0 = x % w.steps
        iters = min(w.steps - k0, end - x)
        out.append((x - k0, k0, iters))
        x += iters
    return out


GRIDS = [
    (tiles, steps, ctas)
    for tiles in (1, 2, 3, 9, 34, 132, 133, 192, 1792)
    for steps in (1, 8, 17, 33, 64, 128)
    for ctas in (1, 7, 64, 131, 132)
    if ctas <= tiles * steps  # the host launches at most one CTA per iteration
]


@pytest.mark.parametrize(("tiles", "steps", "ctas"), GRIDS)
def test_every_iteration_once_and_partials_never_collide(tiles, steps, ctas):
    w = Work(tiles, steps, ctas)
    assert w.first(0) == 0 and w.first(ctas) == tiles * steps
    seen = [0] * (tiles * steps)
    written: dict[tuple[int, int], int] = {}  # slot -> t0 of its tile
    counters: dict[int, int] = {}  # counter index -> t0 of its split tile
    parts: dict[int, list[int]] = {}  # t0 -> CTAs with a segment of it
    for c in range(ctas):
        assert w.per >= 1
        for t0, k0, iters in segments(w, c):
            for x in range(t0 + k0, t0 + k0 + iters):
                assert w.owner(x) == c
                seen[x] += 1
            parts.setdefault(t0, []).append(c)
            if iters < steps:  # a partial segment: its slot and its tile's counter
                s = slot(w, c, t0)
                assert written.setdefault(s, t0) == t0, f"slot {s} written twice"
                assert counters.setdefault(w.owner(t0), t0) == t0, "counter of two tiles"
    assert seen == [1] * (tiles * steps)
    for t0, cs in parts.items():
        c0 = w.owner(t0)
        count = w.owner(t0 + steps - 1) - c0 + 1
        assert cs == list(range(c0, c0 + count))  # consecutive CTAs, as the reader assumes
        if count > 1:  # the last arrival reads exactly the slots the segments wrote
            assert [slot(w, c, t0) for c in cs] == [s for s, t in written.items() if t == t0]


def grouped_tile(tile_id: int, tiles_n: int, tiles_m: int, group: int) -> tuple[int, int]:
    """humming/memory/tile_order.cuh's grouped_tile: (m, n) of tile `tile_id`. Python raises on
    the division by zero rows that C++ would leave undefined."""
    first_m = (tile_id // (group * tiles_n)) * group
    rows = min(tiles_m - first_m, group)
    in_group = tile_id - first_m * tiles_n
    return first_m + in_group % rows, in_group // rows


def test_the_walk_transcription_matches_the_header():
    for text in (
        ": k(x % w.steps),",
        "id(x / w.steps),",
        "t(grouped_tile<Tile::GROUP_M>(id, w.tiles_n, w.tiles_m)) {}",
        "if (++id < w.tiles_n * w.tiles_m) t = grouped_tile<Tile::GROUP_M>(id, w.tiles_n, w.tiles_m);",
        "return grouped_tile<Tile::GROUP_M>(x / steps, tiles_n, tiles_m);",
    ):
        assert text in HEADER, text


@pytest.mark.parametrize(("tiles_n", "tiles_m", "group"), [(1, 1, 1), (7, 8, 8), (448, 1, 8),
                                                           (48, 3, 8), (5, 16, 8), (3, 9, 4)])  # fmt: skip
@pytest.mark.parametrize("steps", [1, 5, 64])
@pytest.mark.parametrize("ctas", [1, 3, 64, 264])
def test_the_producer_walk_visits_the_iterations_tiles_and_steps(
    tiles_n, tiles_m, group, steps, ctas
):
    """Walk advanced one step at a time from each CTA's first iteration gives every iteration's
    (tile coordinates, K step) as recomputing them from its index does, and stepping past the
    grid's last tile (a range that ends with it) divides by no empty group."""
    total = tiles_n * tiles_m * steps
    if ctas > total:
        return
    w = Work(tiles_n * tiles_m, steps, ctas)
    for c in range(ctas):
        begin, end = w.first(c), w.first(c + 1)
        k, tile_id = begin % steps, begin // steps
        t = grouped_tile(tile_id, tiles_n, tiles_m, group)
        for x in range(begin, end):
            assert (k, t) == (x % steps, grouped_tile(x // steps, tiles_n, tiles_m, group))
            k += 1  # Walk::next
            if k == steps:
                k = 0
                tile_id += 1
                if tile_id < tiles_n * tiles_m:
                    t = grouped_tile(tile_id, tiles_n, tiles_m, group)
