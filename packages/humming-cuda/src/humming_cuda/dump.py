"""HUMMING_DUMP_DIR: keep what NVRTC saw and made, one folder per compiled kernel.

Each folder holds source.cu, options.txt, compile.log and, for a successful compile, kernel.ptx,
kernel.cubin and kernel.sass (SASS only where cuobjdump or nvdisasm is on PATH or in
$CUDA_HOME/bin: NVRTC itself cannot disassemble). A failed compile is dumped too: that is when the
source is most wanted.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
from pathlib import Path

from humming_core.device import KernelSource
from humming_core.env import ENV

from .headers import toolkit_roots

log = logging.getLogger("humming_cuda.compile")


def dump_enabled() -> bool:
    return ENV.HUMMING_DUMP_DIR is not None


def dump_compile(
    source: KernelSource,
    options: list[str],
    log_text: str,
    ptx: bytes | None = None,
    cubin: bytes | None = None,
) -> Path | None:
    """Write the dump folder for one compile; returns it (None when dumping is off)."""
    root = ENV.HUMMING_DUMP_DIR
    if root is None:
        return None
    digest = hashlib.sha256((source.code + "\0" + " ".join(options)).encode()).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", source.name).strip("_")[:60]
    folder = Path(root) / f"{safe}-{source.arch}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "source.cu").write_text(source.code)
    (folder / "options.txt").write_text("\n".join(options) + "\n")
    (folder / "compile.log").write_text(log_text)
    if ptx is not None:
        (folder / "kernel.ptx").write_bytes(ptx.rstrip(b"\x00"))
    if cubin is not None:
        (folder / "kernel.cubin").write_bytes(cubin)
        sass = disassemble(folder / "kernel.cubin")
        if sass is not None:
            (folder / "kernel.sass").write_text(sass)
    return folder


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = [root / "bin" / name for root in toolkit_roots()]
    return next((str(c) for c in candidates if c.is_file()), None)


def disassemble(cubin: Path) -> str | None:
    """SASS of a cubin via cuobjdump (or nvdisasm); None when neither tool is installed."""
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        path = _tool(tool)
        if path is None:
            continue
        try:
            done = subprocess.run(
                [path, *args, str(cubin)], capture_output=True, text=True, timeout=60, check=True
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("%s could not disassemble %s: %s", tool, cubin, exc)
            continue
        return done.stdout
    return None
