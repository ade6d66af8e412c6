"""Cache keys: what a compiled artifact depends on, hashed by content (never file times).

key = sha256(device fingerprint, entry name, arch, options, full source text, and for each header
root of the source the hash of every file under it, by relative path and contents). Hashing the
whole tree rather than following #includes keeps the key correct when a header starts including
another one, at the cost of rebuilding after an edit to a header the kernel does not use.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..device import Device, KernelSource

KEY_VERSION = "humming-jit-1"  # bump when the key's composition changes
_SKIP_DIRS = {"__pycache__", ".git"}


def tree_hash(root: str | os.PathLike[str]) -> str:
    """sha256 over every file under `root`: relative path and contents, in sorted order."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(
            f"header root {str(root)!r} is not a directory: a KernelSource's `headers` must list "
            "the include roots its source uses"
        )
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for filename in sorted(filenames):
            if filename.startswith(".") or filename.endswith((".pyc", ".pyo")):
                continue
            path = Path(dirpath) / filename
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
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
