"""The on-disk artifact store: one folder per key, published atomically, verified on every read.

Layout under `<root>/<device>/`:
    <key>/artifact.bin    the compiled bytes
    <key>/meta.json       name, key, sha256 and size of artifact.bin, the artifact's meta
    .locks/<key>.lock     held (filelock) by the one process building that key
    .quarantine/<key>-…   entries that failed verification, kept for inspection
    .tmp-<key>-…          a build being written; renamed to <key> when complete

A reader never sees a half-written entry: an entry appears only by `os.rename` of a complete
folder. An entry that is nonetheless broken (disk corruption, a truncated copy, a hand edit) fails
the checksum, is moved to quarantine and is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..device import Artifact

log = logging.getLogger("humming_core.jit")

FORMAT = 1
BINARY = "artifact.bin"
META = "meta.json"


class CorruptEntry(Exception):
    """A cache entry failed verification; the message says which check."""


class DiskStore:
    def __init__(self, root: Path, device: str) -> None:
        self.dir = Path(root) / device

    def entry(self, key: str) -> Path:
        return self.dir / key

    def lock(self, key: str) -> FileLock:
        locks = self.dir / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        return FileLock(str(locks / f"{key}.lock"))

    def load(self, key: str) -> Artifact | None:
        """The stored artifact, None if absent; a corrupt entry is quarantined and None returned."""
        folder = self.entry(key)
        if not folder.exists():
            return None
        try:
            return self._read(folder, key)
        except CorruptEntry as exc:
            self.quarantine(key, str(exc))
            return None

    def _read(self, folder: Path, key: str) -> Artifact:
        try:
            meta = json.loads((folder / META).read_text())
        except FileNotFoundError:
            raise CorruptEntry(f"{META} is missing") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CorruptEntry(f"{META} is unreadable: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
            raise CorruptEntry(
                f"{META} has format {meta.get('format') if isinstance(meta, dict) else '?'} "
                f"or a key other than {key}"
            )
        try:
            binary = (folder / BINARY).read_bytes()
        except OSError as exc:
            raise CorruptEntry(f"{BINARY} is unreadable: {exc}") from None
        if len(binary) != meta.get("size") or hashlib.sha256(binary).hexdigest() != meta.get(
            "sha256"
        ):
            raise CorruptEntry(f"{BINARY} does not match the checksum in {META}")
        return Artifact(binary=binary, name=meta["name"], meta=meta["meta"])

    def publish(self, key: str, artifact: Artifact) -> None:
        """Write the entry to a temporary folder, then rename it into place."""
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".tmp-{key}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            meta = {
                "format": FORMAT,
                "key": key,
                "name": artifact.name,
                "size": len(artifact.binary),
                "sha256": hashlib.sha256(artifact.binary).hexdigest(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "meta": artifact.meta,
            }
            _write(tmp / BINARY, artifact.binary)
            _write(tmp / META, json.dumps(meta, indent=1, default=_not_json).encode())
            os.rename(tmp, self.entry(key))
        except OSError:
            if not self.entry(key).exists():
                raise
            # another writer (one that does not take our lock, e.g. a copied cache) won: keep theirs
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def quarantine(self, key: str, reason: str) -> Path:
        """Move a bad entry aside (never delete evidence); returns where it went."""
        target = self.dir / ".quarantine" / f"{key}-{int(time.time())}-{uuid.uuid4().hex[:6]}"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(self.entry(key), target)
        except FileNotFoundError:
            return target  # someone else moved it first
        (target / "REASON").write_text(reason + "\n")
        log.warning(
            "humming cache entry %s is corrupt (%s): moved to %s, rebuilding", key, reason, target
        )
        return target


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _not_json(value: Any) -> Any:
    raise TypeError(
        f"artifact meta value {value!r} ({type(value).__name__}) is not JSON-serialisable: a "
        "device's compile() must put only JSON types (str, int, float, bool, list, dict) in meta"
    )
