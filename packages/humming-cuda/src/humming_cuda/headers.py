"""Where the headers NVRTC needs live: the CUDA toolkit's (cuda_fp16.h, CCCL's cuda/std) and ours.

Search order for the toolkit: the pip wheels next to the NVRTC that cuda-bindings loads
(`nvidia/cu13/include`, CUDA 12 wheels `nvidia/cuda_runtime/include` + `nvidia/cuda_cccl/include`),
then `$CUDA_HOME` / `$CUDA_PATH`, then /usr/local/cuda. The wheels come first because their headers
match the wheel NVRTC's version. The toolkit headers are not hashed into cache keys file by file
(CCCL alone has thousands); their version numbers enter the compiler fingerprint instead.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

INCLUDE_ROOT = Path(__file__).resolve().parent / "include"


class HeadersNotFound(RuntimeError):
    pass


def humming_include_root() -> Path:
    """Root of humming's own CUDA headers (`#include "humming/..."`)."""
    return INCLUDE_ROOT


def _wheel_include_sets() -> list[list[Path]]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    sets = []
    for base in map(Path, spec.submodule_search_locations):
        sets.append([base / "cu13" / "include", base / "cu13" / "include" / "cccl"])
        sets.append([base / "cuda_runtime" / "include", base / "cuda_cccl" / "include"])
    return sets


def toolkit_roots() -> list[Path]:
    """Candidate CUDA toolkit roots: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda (in that order)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [Path(r) for r in roots if r]


def _toolkit_include_sets() -> list[list[Path]]:
    return [[r / "include", r / "include" / "cccl"] for r in toolkit_roots()]


@functools.cache
def cuda_include_dirs() -> tuple[Path, ...]:
    """Include directories holding cuda_fp16.h and CCCL's cuda/std, best match first.

    Each is looked for separately: a wheel set may lack CCCL while the toolkit has it.
    """
    candidates = [d for group in _wheel_include_sets() + _toolkit_include_sets() for d in group]
    runtime = next((d for d in candidates if (d / "cuda_fp16.h").is_file()), None)
    if runtime is None:
        raise HeadersNotFound(
            "CUDA headers (cuda_fp16.h) not found in the pip wheels (nvidia/cu13/include) nor in "
            "$CUDA_HOME, $CUDA_PATH or /usr/local/cuda: install the wheels "
            "(pip install nvidia-cuda-runtime nvidia-cuda-cccl) or set CUDA_HOME to a CUDA toolkit"
        )
    cccl = next(
        (d for d in candidates if (d / "cuda" / "std" / "__cccl" / "version.h").is_file()), None
    )
    return (runtime,) if cccl is None or cccl == runtime else (runtime, cccl)


def _define(path: Path, name: str) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "absent"
    match = re.search(rf"#\s*define\s+{name}\s+(\d+)", text)
    return match.group(1) if match else "unknown"


@functools.cache
def toolkit_header_version() -> str:
    """CUDA and CCCL header versions, e.g. 'cuda=13000;cccl=3000000' (part of the fingerprint)."""
    dirs = cuda_include_dirs()
    cuda = _define(dirs[0] / "cuda.h", "CUDA_VERSION")
    cccl = _define(dirs[-1] / "cuda" / "std" / "__cccl" / "version.h", "CCCL_VERSION")
    return f"cuda={cuda};cccl={cccl}"
