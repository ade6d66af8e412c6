"""Test doubles for test_cache.py, in their own module so spawned processes can import them."""

from __future__ import annotations

import os
import time
from pathlib import Path

from humming_core.device import Artifact, KernelSource
from humming_core.jit import get_or_build


class FakeDevice:
    """Compiles by reversing the source bytes; records every compile in `log_path`."""

    name = "fake"

    def __init__(self, log_path: Path | None = None, delay: float = 0.0, fingerprint: str = "fp-1"):
        self.log_path, self.delay, self._fingerprint = log_path, delay, fingerprint

    def fingerprint(self) -> str:
        return self._fingerprint

    def compile(self, source: KernelSource) -> Artifact:
        if "#error" in source.code:
            raise RuntimeError(f"cannot compile {source.name}")
        if self.log_path is not None:
            with open(self.log_path, "a") as f:
                f.write(f"{os.getpid()} {source.name}\n")
        time.sleep(self.delay)
        return Artifact(
            binary=source.code.encode()[::-1], name=source.name, meta={"arch": source.arch}
        )


RACE_BUILD_S = 1.0  # long enough that both processes ask while the first builds
RACED_CODE = "// raced\n"


def race_worker(cache_dir: str, log_path: str, out_path: str, start) -> None:
    """Build the one raced kernel in a fresh process; record when it asked and what it got."""
    os.environ["HUMMING_CACHE_DIR"] = cache_dir
    start.wait(30)
    Path(out_path + ".start").write_text(repr(time.time()))
    device = FakeDevice(log_path=Path(log_path), delay=RACE_BUILD_S)
    artifact = get_or_build(device, KernelSource(name="raced", code=RACED_CODE, arch="sm_90a"))
    Path(out_path).write_bytes(artifact.binary)
