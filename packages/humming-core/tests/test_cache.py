"""The compile cache: content keys, disk store with quarantine, memo, counter, hooks, process race."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
from jit_fakes import RACE_BUILD_S, RACED_CODE, FakeDevice, race_worker

from humming_core.device import KernelSource
from humming_core.jit import (
    build_many,
    cache_key,
    clear_memo,
    compile_count,
    get_or_build,
    keys,
    on_compile,
)
from humming_core.jit.store import BINARY, META


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("HUMMING_CACHE_DIR", str(root))
    monkeypatch.delenv("HUMMING_DISABLE_DISK_CACHE", raising=False)
    clear_memo()
    yield root
    clear_memo()


@pytest.fixture
def headers(tmp_path):
    root = tmp_path / "include"
    (root / "humming").mkdir(parents=True)
    (root / "humming" / "a.h").write_text("#pragma once\nconstexpr int A = 1;\n")
    return root


def source(name="k", code='#include "humming/a.h"\n', headers=(), options=()):
    return KernelSource(
        name=name, code=code, arch="sm_90a", headers=tuple(map(str, headers)), options=options
    )


def test_key_follows_header_contents_not_mtime(headers):
    dev, src = FakeDevice(), source(headers=[headers])
    key = cache_key(dev, src)
    header = headers / "humming" / "a.h"
    os.utime(header, (1, 1))  # a new mtime alone must not change the key
    assert cache_key(dev, src) == key
    header.write_text("#pragma once\nconstexpr int A = 2;\n")
    changed = cache_key(dev, src)
    assert changed != key
    (headers / "humming" / "new.h").write_text("// a header nothing includes yet\n")
    assert cache_key(dev, src) != changed  # the whole tree counts, not only what is included
    (headers / "humming" / "new.h").unlink()
    header.write_text("#pragma once\nconstexpr int A = 1;\n")
    assert cache_key(dev, src) == key  # same contents, same key


def test_key_covers_fingerprint_source_options_and_arch():
    base = cache_key(FakeDevice(), source())
    assert cache_key(FakeDevice(fingerprint="fp-2"), source()) != base
    assert cache_key(FakeDevice(), source(code="// other\n")) != base
    assert cache_key(FakeDevice(), source(options=("-DX=1",))) != base
    other_arch = KernelSource(name="k", code=source().code, arch="sm_80")
    assert cache_key(FakeDevice(), other_arch) != base
    assert len(base) == 64 and cache_key(FakeDevice(), source()) == base


def test_missing_header_root_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="header root"):
        cache_key(FakeDevice(), source(headers=[tmp_path / "nope"]))


def test_memo_then_disk_hits_do_not_compile(cache_dir):
    dev, src = FakeDevice(), source()
    before = compile_count()
    first = get_or_build(dev, src)
    assert compile_count() == before + 1
    assert get_or_build(dev, src) is first  # memo
    clear_memo()
    from_disk = get_or_build(dev, src)
    assert compile_count() == before + 1  # disk hit
    assert from_disk.binary == first.binary and from_disk.meta == first.meta
    entry = cache_dir / "fake" / cache_key(dev, src)
    assert (entry / BINARY).is_file()
    assert json.loads((entry / META).read_text())["sha256"]


def _corrupt_binary(entry: Path) -> None:
    (entry / BINARY).write_bytes(b"garbage")


def _drop_meta(entry: Path) -> None:
    (entry / META).unlink()


def _garble_meta(entry: Path) -> None:
    (entry / META).write_text("{not json")


def _drop_binary(entry: Path) -> None:
    (entry / BINARY).unlink()


@pytest.mark.parametrize("damage", [_corrupt_binary, _drop_meta, _garble_meta, _drop_binary])
def test_corrupt_entry_is_quarantined_and_rebuilt(cache_dir, damage):
    dev, src = FakeDevice(), source()
    good = get_or_build(dev, src)
    key = cache_key(dev, src)
    damage(cache_dir / "fake" / key)
    clear_memo()
    before = compile_count()
    rebuilt = get_or_build(dev, src)
    assert compile_count() == before + 1
    assert rebuilt.binary == good.binary
    quarantined = list((cache_dir / "fake" / ".quarantine").iterdir())
    assert len(quarantined) == 1 and quarantined[0].name.startswith(key)
    assert (quarantined[0] / "REASON").read_text().strip()
    clear_memo()
    assert get_or_build(dev, src).binary == good.binary and compile_count() == before + 1


def test_same_code_shares_a_binary_but_keeps_each_requests_meta():
    first = KernelSource(name="k", code="// same\n", arch="sm_90a", meta={"binding": {"split": 1}})
    second = KernelSource(name="k", code="// same\n", arch="sm_90a", meta={"binding": {"split": 4}})
    before = compile_count()
    a, b = get_or_build(FakeDevice(), first), get_or_build(FakeDevice(), second)
    assert compile_count() == before + 1 and a.binary == b.binary
    assert a.meta["source"] == {"binding": {"split": 1}} and b.meta["source"] == {
        "binding": {"split": 4}
    }
    clear_memo()
    assert get_or_build(FakeDevice(), second).meta["source"] == {
        "binding": {"split": 4}
    }  # from disk
    assert compile_count() == before + 1


def test_hook_sees_every_compile_and_can_be_removed():
    events = []
    remove = on_compile(events.append)
    try:
        get_or_build(FakeDevice(), source(name="a"))
        get_or_build(FakeDevice(), source(name="a"))
        get_or_build(FakeDevice(), source(name="b"))
    finally:
        remove()
    assert [e.name for e in events] == ["a", "b"]
    assert all(e.device == "fake" and e.arch == "sm_90a" and e.seconds >= 0 for e in events)
    get_or_build(FakeDevice(), source(name="c"))
    assert len(events) == 2


def test_disable_disk_cache_writes_nothing(cache_dir, monkeypatch):
    monkeypatch.setenv("HUMMING_DISABLE_DISK_CACHE", "1")
    before = compile_count()
    get_or_build(FakeDevice(), source())
    get_or_build(FakeDevice(), source())  # the memo still applies
    assert compile_count() == before + 1
    assert not (cache_dir / "fake").exists()


def test_build_many_keeps_order_and_builds_duplicates_once(tmp_path):
    log = tmp_path / "calls.txt"
    dev = FakeDevice(log_path=log, delay=0.05)
    items = [(dev, source(name=f"k{i % 5}", code=f"// {i % 5}\n")) for i in range(8)]
    before = compile_count()
    artifacts = build_many(items, workers=4, progress=True)
    assert [a.name for a in artifacts] == [f"k{i % 5}" for i in range(8)]
    assert [a.binary for a in artifacts] == [f"// {i % 5}\n".encode()[::-1] for i in range(8)]
    assert compile_count() == before + 5
    assert len(log.read_text().splitlines()) == 5


def test_build_many_takes_one_device_and_its_sources():
    dev = FakeDevice()
    before = compile_count()
    artifacts = build_many(dev, [source(name="a"), source(name="b")], workers=2)
    assert [a.name for a in artifacts] == ["a", "b"] and compile_count() == before + 2


def test_build_many_raises_the_failure_after_building_the_rest():
    items = [
        (FakeDevice(), source(name="good")),
        (FakeDevice(), source(name="bad", code="#error\n")),
    ]
    with pytest.raises(RuntimeError, match="cannot compile bad"):
        build_many(items, workers=2)
    before = compile_count()
    get_or_build(*items[0])
    assert compile_count() == before  # the good one was built and cached despite the failure


def test_build_many_rejects_zero_workers():
    with pytest.raises(ValueError, match="HUMMING_COMPILE_WORKERS"):
        build_many([(FakeDevice(), source())], workers=0)


def test_two_processes_racing_compile_once(tmp_path, cache_dir):
    ctx = multiprocessing.get_context("spawn")
    log = tmp_path / "calls.txt"
    start = ctx.Event()
    procs = [
        ctx.Process(
            target=race_worker, args=(str(cache_dir), str(log), str(tmp_path / f"out{i}"), start)
        )
        for i in range(2)
    ]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    starts = [float((tmp_path / f"out{i}.start").read_text()) for i in range(2)]
    assert abs(starts[0] - starts[1]) < RACE_BUILD_S / 2, "the two builds did not overlap"
    assert len(log.read_text().splitlines()) == 1  # one compile, the other process loaded it
    outs = {(tmp_path / f"out{i}").read_bytes() for i in range(2)}
    assert outs == {RACED_CODE.encode()[::-1]}


def _count_reads(monkeypatch) -> list:
    """The files humming_core.jit.keys opens from now on."""
    reads = []
    monkeypatch.setattr(keys, "open", lambda p, *a: reads.append(p) or open(p, *a), raising=False)  # noqa: SIM115  (the caller closes it)
    return reads


def _age(root, seconds):
    """Set every file's mtime `seconds` in the past, as installed headers are."""
    then = time.time() - seconds
    for path in root.rglob("*"):
        os.utime(path, (then, then))


def test_header_tree_is_read_again_only_when_it_changes(headers, monkeypatch):
    dev, src = FakeDevice(), source(headers=[headers])
    _age(headers, 60)
    key = cache_key(dev, src)
    reads = _count_reads(monkeypatch)
    assert cache_key(dev, src) == key and reads == []  # unchanged tree: the memo answers
    (headers / "humming" / "a.h").write_text("#pragma once\nconstexpr int A = 3;\n")
    _age(headers, 30)  # another mtime, same size: the signature still tells
    assert cache_key(dev, src) != key and len(reads) == 1


def test_a_freshly_written_tree_is_always_read_again(headers, monkeypatch):
    """Within the racy window a rewrite may keep size and mtime: the memo is not trusted then."""
    dev, src = FakeDevice(), source(headers=[headers])
    cache_key(dev, src)
    reads = _count_reads(monkeypatch)
    cache_key(dev, src)
    assert len(reads) == 1
