"""Cache keys: what a compiled artifact depends on, hashed by content (file times only decide when
a header tree is read again).

key = sha256(device fingerprint, entry name, arch, options, full source text, and for each header
root of the source the hash of every file under it, by relative path and contents). Hashing the
whole tree rather than following #includes keeps the key correct when a header starts including
another one, at the cost of rebuilding after an edit to a header the kernel does not use.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..device import Device, KernelSource

KEY_VERSION = "humming-jit-1"  # bump when the key's composition changes
_SKIP_DIRS = {"__pycache__", ".git"}


# root -> (the files' stat signature, when the hash was taken, the contents' hash): a layer keys
# several kernels on the same header tree, and reading and hashing every header for each took
# most of a disk-cache load's host time. The key is still the contents' hash; the signature only
# says when to read them again. As in git's "racy" check, a file changed within _RACY_NS of the
# hash may have been rewritten since without a new mtime (coarse file-system clocks), so such a
# tree is always read again.
_TREE_MEMO: dict[str, tuple[tuple, int, str]] = {}
_RACY_NS = 2_000_000_000


def _tree_files(root: str) -> list[str]:
    """Every file under `root` (plain strings: Path objects cost more than the walk), sorted."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for filename in sorted(filenames):
            if filename.startswith(".") or filename.endswith((".pyc", ".pyo")):
                continue
            files.append(os.path.join(dirpath, filename))
    return files


def tree_hash(root: str | os.PathLike[str]) -> str:
    """sha256 over every file under `root`: relative path and contents, in sorted order."""
    root = str(Path(root))
    if not os.path.isdir(root):
        raise FileNotFoundError(
            f"header root {root!r} is not a directory: a KernelSource's `headers` must list "
            "the include roots its source uses"
        )
    files = _tree_files(root)
    stats = [os.stat(f) for f in files]
    signature = tuple(
        (f, st.st_size, st.st_mtime_ns, st.st_ino) for f, st in zip(files, stats, strict=True)
    )
    memo = _TREE_MEMO.get(root)
    newest = max((st.st_mtime_ns for st in stats), default=0)
    if memo is not None and memo[0] == signature and newest < memo[1] - _RACY_NS:
        return memo[2]
    hashed_at = time.time_ns()
    digest = hashlib.sha256()
    for path in files:
        digest.update(path[len(root) + 1 :].replace(os.sep, "/").encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
        digest.update(b"\0")
    _TREE_MEMO[root] = (signature, hashed_at, digest.hexdigest())
    return digest.hexdigest()


def cache_key(device: Device, source: KernelSource) -> str:
    """The content hash naming `source`'s artifact on `device` (64 hex digits)."""
    digest = hashlib.sha256()
    fields = [KEY_VERSION, device.name, device.fingerprint(), source.name, source.arch]
    fields += [f"options={len(source.options)}", *source.options]
    fields += [f"headers={len(source.headers)}", *(tree_hash(root) for root in source.headers)]
    for field in fields:
        digest.update(field.encode() + b"\0")
    digest.update(source.code.encode())
    return digest.hexdigest()
