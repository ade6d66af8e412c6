"""The moe_align launch path without a GPU (fake_launch): after one fully checked call of a shape
(humming_cuda.kernels.moe_align.prepared), a call of that shape launches exactly the parameters,
grids, blocks and shared memory the full check computes for its own tensors, from one allocation
and without the full check; calls of another shape, and calls whose tensors the quick check does not
accept, go through the full check, which still refuses wrong arguments naming them."""

from __future__ import annotations

import pytest
import torch
from fake_launch import FakeFunction, OnCudaKept, Recorder, cuda

from humming_core.numerics.moe import align_length
from humming_cuda.kernels.moe_align import PHASES, kernel_name, plan_align
from humming_cuda.kernels.moe_align.bind import MoeAlignKernel
from humming_cuda.kernels.moe_align.buffers import zero_rows_params
from humming_cuda.kernels.moe_align.plan import FUSED_MAX_NUMEL
from humming_cuda.kernels.moe_align.prepared import MAX_PREPARED, memo_key

E = 64


class PhaseRecorder(Recorder):
    """Records each launch in a log shared by the phases: (path, phase, grid, block, smem,
    parameters), path "checked" for a launch with a parameter list (the full check's), "template"
    for one from a parameter block (the memoized call's), read back as the driver reads it."""

    def __init__(self, phase: str, ctypes_list, log: list) -> None:
        super().__init__(ctypes_list)
        self.phase, self.log = phase, log

    def __call__(self, grid, block, params, smem=0, stream=None) -> None:
        super().__call__(grid, block, params, smem, stream)
        self.log.append(("checked", self.phase, *self.launches[-1]))

    def launch(self, grid, block, smem, address, stream=None) -> None:
        super().launch(grid, block, smem, address, stream)
        self.log.append(("template", self.phase, *self.launches[-1]))


def make_kernel(dtype=torch.int32) -> tuple[MoeAlignKernel, list]:
    functions = {}
    for phase in PHASES:
        functions[phase] = FakeFunction()
        functions[phase].symbol = kernel_name(phase, dtype)
    kernel = MoeAlignKernel(functions, dtype)
    log: list = []
    kernel.launchers = {p: PhaseRecorder(p, kernel.signature.ctypes, log) for p in PHASES}
    return kernel, log


class Allocator:
    """torch.empty on the fake cuda:0: a new tensor per request (so a memoized call that kept a
    stale address would launch it), except that `again()` makes the next request return the last
    tensor made (so the full check of a call's tensors gets that call's outputs, and must launch
    the same parameters)."""

    def __init__(self) -> None:
        self.requests: list = []
        self.made: list = []
        self._again = False
        self._empty = torch.empty

    def again(self) -> None:
        self._again = True

    def __call__(self, *size, dtype=None, device=None) -> torch.Tensor:
        self.requests.append((size, dtype))
        if self._again:
            self._again = False
            assert tuple(self.made[-1].shape) == size and self.made[-1].dtype == dtype
        else:
            self.made.append(cuda(self._empty(*size, dtype=dtype), kept=True))
        return self.made[-1]


@pytest.fixture
def buffers(monkeypatch) -> Allocator:
    allocator = Allocator()
    monkeypatch.setattr(torch, "empty", allocator)
    return allocator


def ids_of(m: int, topk: int, seed: int, dtype=torch.int32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return cuda(torch.randint(-1, E + 1, (m, topk), generator=g).to(dtype), kept=True)


def expert_map(seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return cuda(torch.randperm(E, generator=g).int() - E // 2, kept=True)


def rows(numel: int, dtype, width: int, ld: int, offset: int = 0) -> torch.Tensor:
    """A [numel, width] slice (row stride ld) of a wider tensor, `offset` elements in."""
    store = torch.zeros(numel * ld + offset, dtype=dtype)
    return cuda(store[offset:].view(numel, ld)[:, :width])


def call(kernel, log, checked=False, **kw):
    """(outputs, this call's launches) of kernel(**kw), or of its full check (on the outputs of
    the call before: the test's Allocator must be torch.empty)."""
    start = len(log)
    if checked:
        torch.empty.again()
    args = {"expert_map": None, "ignore_invalid_experts": False, "pad_sorted_ids": False}
    args.update(kw)
    args.setdefault("zero_rows", None)
    out = kernel.checked_call(**args) if checked else kernel(**args)
    return out, log[start:]


def same_launches(memoized: list, checked: list) -> None:
    assert [entry[0] for entry in memoized] == ["template"] * len(checked), "not memoized"
    assert [entry[0] for entry in checked] == ["checked"] * len(checked)
    assert [entry[1:] for entry in memoized] == [entry[1:] for entry in checked]


CASES = {
    "fused": {"m": 3, "topk": 4, "block_size": 16},
    "fused-pad": {"m": 7, "topk": 8, "block_size": 64, "pad_sorted_ids": True},
    "fused-map": {"m": 5, "topk": 8, "block_size": 16, "map": True},
    "fused-map-ignore": {"m": 5, "topk": 8, "block_size": 16, "map": True, "ignore": True},
    "split": {"m": 1025, "topk": 4, "block_size": 16},
    "split-map-ignore": {"m": 2048, "topk": 8, "block_size": 128, "map": True, "ignore": True},
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    "zero",
    [None, (torch.bfloat16, 64, 64, 0), (torch.float32, 5, 7, 1), (torch.float16, 3, 3, 1)],
)
def test_memoized_calls_launch_what_the_full_check_computes(buffers, case, zero):
    c = CASES[case]
    kernel, log = make_kernel()
    numel = c["m"] * c["topk"]
    fused = numel <= FUSED_MAX_NUMEL
    for seed in (1, 2, 3):  # a checked call, then memoized ones on other tensors
        kw = {
            "topk_ids": ids_of(c["m"], c["topk"], seed),
            "block_size": c["block_size"],
            "num_experts": E,
            "expert_map": expert_map(seed) if c.get("map") else None,
            "ignore_invalid_experts": c.get("ignore", False),
            "pad_sorted_ids": c.get("pad_sorted_ids", False),
            "zero_rows": None if zero is None else rows(numel, *zero[:3], offset=seed * zero[3]),
        }
        got, launched = call(kernel, log, **kw)
        want, checked = call(kernel, log, checked=True, **kw)
        if seed == 1:
            assert launched == checked
            continue
        same_launches(launched, checked)
        assert [e[1] for e in checked] == (["fused"] if fused else ["count", "scan", "scatter"])
        length = align_length(numel, c["block_size"], E, c.get("pad_sorted_ids", False))
        assert [tuple(t.shape) for t in got] == [
            (length,),
            (-(-length // c["block_size"]),),
            (1,),
        ]
        assert all(g.dtype == torch.int32 for g in got)
        assert [g.data_ptr() for g in got] == [w.data_ptr() for w in want]
    assert len(kernel.prepared) == 1


def test_one_allocation_and_no_full_check_once_memoized(buffers, monkeypatch):
    kernel, log = make_kernel()
    kw = {"block_size": 16, "num_experts": E, "expert_map": expert_map()}
    call(kernel, log, topk_ids=ids_of(4, 8, 0), **kw)
    plan = plan_align(32, E)
    sizes = (align_length(32, 16, E, False), -(-align_length(32, 16, E, False) // 16), 1)
    assert buffers.requests == [((sum(sizes) + plan.workspace,), torch.int32)]

    def refuse(*args, **kwargs):
        raise AssertionError("the memoized call ran the full check")

    monkeypatch.setattr(kernel.signature, "bind", refuse)
    got, launched = call(kernel, log, topk_ids=ids_of(4, 8, 1), **kw)
    assert len(buffers.requests) == 2 and buffers.requests[1] == buffers.requests[0]
    assert [e[0] for e in launched] == ["template"]
    # the outputs and the workspace follow each other in the one buffer
    base = got[0].data_ptr()
    assert [g.data_ptr() - base for g in got] == [0, 4 * sizes[0], 4 * (sizes[0] + sizes[1])]
    params = dict(zip(kernel.signature.names, launched[0][5], strict=True))
    assert params["workspace"] == base + 4 * sum(sizes)


def test_memo_keys_tell_apart_every_shape_of_call(buffers):
    """Each of these differs from the base in one thing its launch depends on: a call of it after
    the base (and the base after it) launches what the full check computes for it, not the base's
    template."""
    base = {"topk_ids": ids_of(3, 4, 0), "block_size": 16, "num_experts": E}
    variants = {
        "numel": {"topk_ids": ids_of(3, 8, 0)},
        "numel past the fused limit": {"topk_ids": ids_of(1025, 4, 0)},
        "block size": {"block_size": 32},
        "num_experts": {"num_experts": E + 1},
        "expert_map": {"expert_map": expert_map()},
        "ignore_invalid_experts": {"ignore_invalid_experts": True},
        "pad_sorted_ids": {"pad_sorted_ids": True},
        "zero_rows": {"zero_rows": rows(12, torch.bfloat16, 8, 8)},
    }
    for name, change in variants.items():
        for first, second in (({}, change), (change, {})):
            kernel, log = make_kernel()
            call(kernel, log, **{**base, **first})
            kw = {**base, **second}
            _, launched = call(kernel, log, **kw)
            assert {e[0] for e in launched} == {"checked"}, name  # a new key: checked in full
            _, memoized = call(kernel, log, **kw)  # now it has its own entry
            _, checked = call(kernel, log, checked=True, **kw)
            same_launches(memoized, checked)
            assert len(kernel.prepared) == 2, name
    keys = {memo_key(12, 16, E, None, False, False, None)}
    for args in (
        (24, 16, E, None, False, False, None),
        (12, 32, E, None, False, False, None),
        (12, 16, E + 1, None, False, False, None),
        (12, 16, E, expert_map(), False, False, None),
        (12, 16, E, None, True, False, None),
        (12, 16, E, None, False, True, None),
        (12, 16, E, None, False, False, rows(12, torch.bfloat16, 8, 8)),
    ):
        keys.add(memo_key(*args))
    assert len(keys) == 8


class OnCuda1(OnCudaKept):
    def get_device(self) -> int:
        return 1


def _other_device(t: torch.Tensor) -> torch.Tensor:
    return t.as_subclass(OnCuda1)


BAD = {
    "ids dtype": (
        {"topk_ids": ids_of(3, 4, 0, torch.int16)},
        "argument 'topk_ids': expected dtype",
    ),
    # with zero_rows, on the ids' old device: the rows are checked against the ids' device first
    "ids device": (
        {"topk_ids": _other_device(ids_of(3, 4, 0))},
        r"'topk_ids'.*cuda:0|zero_rows must be a \[12, n\]",
    ),
    "map entries": (
        {"expert_map": cuda(torch.zeros(8, dtype=torch.int32))},
        "expert_map has 8 entries but num_experts=64",
    ),
    "zero_rows rows": (
        {"zero_rows": rows(13, torch.bfloat16, 8, 8)},
        r"zero_rows must be a \[12, n\]",
    ),
    "zero_rows dtype": (
        {"zero_rows": rows(12, torch.int8, 8, 8)},
        r"zero_rows must be a \[12, n\]",
    ),
    "zero_rows stride": (
        {"zero_rows": cuda(torch.zeros(8, 12, dtype=torch.bfloat16), kept=True).t()},
        "unit column stride",
    ),
    "zero_rows device": (
        {"zero_rows": _other_device(torch.zeros(12, 8, dtype=torch.bfloat16))},
        r"zero_rows must be a \[12, n\]",
    ),
    "block_size bool": ({"block_size": True}, "block_size must be an int, got True"),
    "block_size float": ({"block_size": 16.0}, "block_size must be an int, got 16.0"),
    "block_size 0": ({"block_size": 0}, "block_size=0 and num_experts=64 must both be >= 1"),
    "ids not a tensor": ({"topk_ids": [[1, 2, 3, 4]] * 3}, "reshape"),
}


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("memoized", ["with map and rows", "without"])
def test_wrong_arguments_are_refused_after_memoization(buffers, bad, memoized):
    kernel, log = make_kernel()
    good = {"topk_ids": ids_of(3, 4, 0), "block_size": 16, "num_experts": E}
    if memoized == "with map and rows":
        good.update(expert_map=expert_map(), zero_rows=rows(12, torch.bfloat16, 8, 8))
    call(kernel, log, **good)
    call(kernel, log, **good)
    assert [e[0] for e in log] == ["checked", "template"]
    change, message = BAD[bad]
    with pytest.raises((ValueError, AttributeError), match=message):
        call(kernel, log, **{**good, **change})
    assert len(log) == 2, "a refused call launched"


def test_tensors_the_quick_check_declines_go_through_the_full_check(buffers):
    """Valid calls the memoized path does not take: non-contiguous ids, an int64 map, a
    non-contiguous map, a map on another device (the full check copies them)."""
    kernel, log = make_kernel()
    good = {"topk_ids": ids_of(3, 4, 0), "block_size": 16, "num_experts": E}
    good["expert_map"] = expert_map()
    call(kernel, log, **good)
    strided = cuda(torch.zeros(4, 3, dtype=torch.int32), kept=True).t()
    _, launched = call(kernel, log, **{**good, "topk_ids": strided})
    assert [e[0] for e in launched] == ["checked"]
    params = dict(zip(kernel.signature.names, launched[0][5], strict=True))
    assert params["topk_ids"] != strided.data_ptr()  # the contiguous copy's
    wide_map = cuda(expert_map().long(), kept=True)
    _, launched = call(kernel, log, **{**good, "expert_map": wide_map})
    assert [e[0] for e in launched] == ["checked"]
    strided_map = cuda(torch.zeros(2 * E, dtype=torch.int32), kept=True)[::2]
    _, launched = call(kernel, log, **{**good, "expert_map": strided_map})
    assert [e[0] for e in launched] == ["checked"]
    params = dict(zip(kernel.signature.names, launched[0][5], strict=True))
    assert params["expert_map"] != strided_map.data_ptr()  # the contiguous copy's
    # a map on another device: the full check copies it to the ids' device, a no-op for the fake
    # device (CPU memory), so here the signature then refuses it
    with pytest.raises(ValueError, match=r"'expert_map'.*cuda:0"):
        call(kernel, log, **{**good, "expert_map": _other_device(expert_map())})
    assert [e[0] for e in log].count("template") == 0


def test_the_memo_is_bounded(buffers):
    kernel, log = make_kernel()
    for m in range(1, MAX_PREPARED + 2):
        call(kernel, log, topk_ids=ids_of(m, 1, 0), block_size=16, num_experts=E)
        assert 1 <= len(kernel.prepared) <= MAX_PREPARED
    assert len(kernel.prepared) == 1  # dropped whole when full, then the newest


def test_zero_rows_of_any_fitting_layout_share_a_key(buffers):
    """zero_rows' strides and widest store are patched per call: one key serves rows that take
    16-, 4- and 2-byte stores."""
    kernel, log = make_kernel()
    kw = {"topk_ids": ids_of(3, 4, 0), "block_size": 16, "num_experts": E}
    units = []
    for i, (dtype, width, ld, offset) in enumerate(
        [(torch.bfloat16, 8, 8, 0), (torch.float32, 5, 7, 1), (torch.float16, 3, 3, 1)] * 2
    ):
        zero = rows(12, dtype, width, ld, offset)
        _, launched = call(kernel, log, zero_rows=zero, **kw)
        _, checked = call(kernel, log, checked=True, zero_rows=zero, **kw)
        if i:
            same_launches(launched, checked)
        units.append(dict(zip(kernel.signature.names, checked[0][5], strict=True))["zero_unit"])
    assert units == [16, 4, 2] * 2 and len(kernel.prepared) == 1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize(("width", "ld"), [(1, 1), (3, 12), (8, 8), (8, 12), (16, 16)])
@pytest.mark.parametrize("offset", range(8))
def test_zero_unit_is_the_widest_store_dividing_address_stride_and_row(dtype, width, ld, offset):
    zero = rows(12, dtype, width, ld, offset)
    item = zero.element_size()
    address, stride, row = zero.data_ptr(), ld * item, width * item
    want = next(u for u in (16, 4, 2) if not (address % u or stride % u or row % u))
    assert zero_rows_params(zero, 12, 0) == (address, stride, row, want)
    assert zero_rows_params(zero, 13, 0) is None and zero_rows_params(zero, 12, 1) is None
