"""Proof that serving compiles nothing: every kernel is built in process_weights_after_loading."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_compiles(what: str = "this block") -> Iterator[None]:
    """Raise if any Humming kernel is compiled inside the block (use it around post-warm-up work)."""
    from humming_core.jit import compile_count

    before = compile_count()
    yield
    built = compile_count() - before
    if built:
        raise RuntimeError(
            f"{built} Humming kernel(s) were compiled during {what}: a layer was prepared lazily. "
            "Prepare every layer in process_weights_after_loading (humming_core.ops.prepare)"
        )
