"""get_or_build / build_many: compile each kernel once per machine, and once per process at most.

Lookup order for a key: the in-process memo, the disk store, then a build under the key's file lock
(re-checking the disk once the lock is held, so a process that waited for another one's build loads
it instead of compiling again). HUMMING_DISABLE_DISK_CACHE skips the disk (the memo stays).

Every compile increments `compile_count()` and calls the `on_compile` hooks, so a caller can
assert that nothing compiles after warm-up.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..device import Artifact, Device, KernelSource
from ..env import ENV
from .keys import cache_key
from .store import DiskStore

log = logging.getLogger("humming_core.jit")


@dataclass(frozen=True)
class CompileEvent:
    """What one compile did; passed to every `on_compile` hook."""

    device: str
    key: str
    name: str
    arch: str
    seconds: float


_memo: dict[str, Artifact] = {}
_memo_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = {}
_hooks: list[Callable[[CompileEvent], None]] = []
_count = 0
_count_lock = threading.Lock()

PROGRESS_THRESHOLD = 4  # show a progress bar when more kernels than this compile at once


def compile_count() -> int:
    """How many kernels this process has compiled (memo and disk hits do not count)."""
    return _count


def on_compile(hook: Callable[[CompileEvent], None]) -> Callable[[], None]:
    """Call `hook(event)` after every compile; returns a function that removes the hook."""
    _hooks.append(hook)

    def remove() -> None:
        if hook in _hooks:
            _hooks.remove(hook)

    return remove


def clear_memo() -> None:
    """Forget the in-process memo (the disk cache is untouched); for tests and benchmarks."""
    with _memo_lock:
        _memo.clear()


def _key_lock(key: str) -> threading.Lock:
    with _memo_lock:
        return _key_locks.setdefault(key, threading.Lock())


def get_or_build(device: Device, source: KernelSource) -> Artifact:
    """The artifact for `source` on `device`: from memory, from disk, or compiled now.

    Its `meta["source"]` is always this request's `source.meta` (not that of the request that
    compiled it): two requests whose sources render the same code share one binary, yet each is
    loaded with what it asked for (e.g. a device's spec/config binding).
    """
    key = cache_key(device, source)
    hit = _memo.get(key)
    if hit is None:
        with _key_lock(key):  # threads of this process: one builds, the others wait for it
            hit = _memo.get(key)
            if hit is None:
                hit = _for_request(_load_or_build(device, source, key), source)
                with _memo_lock:
                    _memo[key] = hit
    return _for_request(hit, source)


def _for_request(artifact: Artifact, source: KernelSource) -> Artifact:
    if artifact.meta.get("source") == source.meta:
        return artifact
    return dataclasses.replace(artifact, meta={**artifact.meta, "source": dict(source.meta)})


def _load_or_build(device: Device, source: KernelSource, key: str) -> Artifact:
    if ENV.HUMMING_DISABLE_DISK_CACHE:
        return _compile(device, source, key)
    store = DiskStore(ENV.HUMMING_CACHE_DIR, device.name)
    artifact = store.load(key)
    if artifact is not None:
        return artifact
    with store.lock(key):  # other processes: one builds, the others load what it published
        artifact = store.load(key)
        if artifact is None:
            artifact = _compile(device, source, key)
            store.publish(key, artifact)
    return artifact


def _compile(device: Device, source: KernelSource, key: str) -> Artifact:
    global _count
    start = time.perf_counter()
    artifact = device.compile(source)
    seconds = time.perf_counter() - start
    with _count_lock:
        _count += 1
    event = CompileEvent(device.name, key, source.name, source.arch, seconds)
    log.info("compiled %s for %s in %.3f s (key %s)", source.name, source.arch, seconds, key[:12])
    for hook in list(_hooks):
        hook(event)
    return artifact


def build_many(
    items: Iterable[tuple[Device, KernelSource]] | Device,
    sources: Iterable[KernelSource] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> list[Artifact]:
    """get_or_build for many kernels, compiling in a thread pool (NVRTC releases the GIL).

    Call as `build_many([(device, source), ...])` or `build_many(device, [source, ...])`.
    Returns the artifacts in the order given. Shows a progress bar when more than a few kernels
    actually compile (`progress=None`), always (`True`) or never (`False`). The first failing
    build's exception is raised after the others finish.
    """
    items = list(items) if sources is None else [(items, s) for s in sources]
    workers = ENV.HUMMING_COMPILE_WORKERS if workers is None else workers
    if workers < 1:
        raise ValueError(
            f"workers={workers}: need at least 1 compile thread (HUMMING_COMPILE_WORKERS)"
        )
    keys = [cache_key(device, source) for device, source in items]
    first_miss: dict[str, int] = {}
    for i, key in enumerate(keys):
        if key not in _memo:
            first_miss.setdefault(key, i)
    unique = list(first_miss.values())
    show = progress if progress is not None else len(unique) > PROGRESS_THRESHOLD
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(unique) or 1))) as pool:
        futures = [pool.submit(get_or_build, *items[i]) for i in unique]
        if show:
            _show_progress(futures)
        errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]
    return [get_or_build(device, source) for device, source in items]


def _show_progress(futures: Sequence) -> None:
    from concurrent.futures import as_completed

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("humming: building kernels"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("build", total=len(futures))
        for _ in as_completed(futures):
            bar.advance(task)
