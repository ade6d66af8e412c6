"""Device-neutral compile cache (DESIGN.md, "JIT and cache").

    artifact = get_or_build(device, device.render(spec, config))
    artifacts = build_many([(device, source), ...])

Keys hash the device fingerprint, the rendered source and the contents of its header trees; the
disk cache lives in $HUMMING_CACHE_DIR/<device>/<key>/; `compile_count()` and `on_compile(hook)`
let a caller prove that nothing compiles after warm-up.
"""

from .cache import CompileEvent, build_many, clear_memo, compile_count, get_or_build, on_compile
from .keys import cache_key, tree_hash
from .report import compile_report
from .store import CorruptEntry, DiskStore

__all__ = [
    "CompileEvent",
    "CorruptEntry",
    "DiskStore",
    "build_many",
    "cache_key",
    "clear_memo",
    "compile_count",
    "compile_report",
    "get_or_build",
    "on_compile",
    "tree_hash",
]
