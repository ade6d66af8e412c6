"""NVRTC: a rendered KernelSource in, a cubin for its exact arch out (no nvcc, no native extension).

Flags: `-arch=<row arch>` (sm_90a style, so arch-specific instructions such as wgmma are allowed and
the output is SASS for that chip), C++17, `-default-device`, and ptxas verbose output, parsed into
the Artifact's meta as registers / spills / shared memory per kernel, so a config that spills is
visible without a GPU (`humming compile`). HUMMING_LINEINFO adds `-lineinfo` (compute-sanitizer and
ncu map faults and hot spots to source lines; it doubles cubin size, hence off by default).
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import time
from typing import Any

from cuda.bindings import nvrtc

from humming_core.device import Artifact, KernelSource
from humming_core.env import ENV

from .dump import dump_compile, dump_enabled
from .headers import cuda_include_dirs, humming_include_root, toolkit_header_version

BASE_FLAGS = ("-std=c++17", "-default-device", "--ptxas-options=-v")
_C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CompileError(RuntimeError):
    """NVRTC rejected a source; carries the full log and the source's entry name and arch."""

    def __init__(self, source_name: str, arch: str, result: str, log: str) -> None:
        self.source_name, self.arch, self.log = source_name, arch, log
        super().__init__(
            f"NVRTC failed to compile kernel {source_name!r} for {arch} ({result}); "
            f"compiler log:\n{log.strip() or '(empty)'}"
        )


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    err, major, minor = nvrtc.nvrtcVersion()
    _check(err, "nvrtcVersion")
    return major, minor


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """SM numbers this NVRTC can target (75, 80, ... 121)."""
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    _check(err, "nvrtcGetSupportedArchs")
    return tuple(archs)


@functools.cache  # read from the installed metadata once: it enters every cache key
def _package_version() -> str:
    try:
        return importlib.metadata.version("humming-cuda")
    except importlib.metadata.PackageNotFoundError:
        return "source"


def compile_flags() -> tuple[str, ...]:
    """BASE_FLAGS plus -lineinfo when HUMMING_LINEINFO asks for it."""
    return (*BASE_FLAGS, "-lineinfo") if ENV.HUMMING_LINEINFO else BASE_FLAGS


def fingerprint() -> str:
    """Everything outside the rendered source that changes the cubin: enters every cache key."""
    major, minor = nvrtc_version()
    return (
        f"humming-cuda={_package_version()};nvrtc={major}.{minor};{toolkit_header_version()};"
        f"flags={' '.join(compile_flags())}"
    )


def compile_options(source: KernelSource) -> list[str]:
    includes = [humming_include_root(), *source.headers, *cuda_include_dirs()]
    seen: list[str] = []
    for path in map(str, includes):
        if path not in seen:
            seen.append(path)
    return [f"-arch={source.arch}", *compile_flags(), *(f"-I{p}" for p in seen), *source.options]


# NVRTC 12.9+ keeps its own cache of compiled programs (through the driver, so only where a GPU
# driver is installed) and, on a hit, returns the cubin without running ptxas: no resource lines in
# the log. humming has its own cache, so NVRTC's is turned off. Not part of the fingerprint: it
# does not change the cubin. An NVRTC that rejects the flag gets it dropped for the process.
_nvrtc_cache_flags: list[str] = ["--no-cache"]


def _compile_program(
    source: KernelSource, options: list[str]
) -> tuple[Any, Any, str, bytes | None]:
    """Create and compile an NVRTC program: (program, result, log, name expression)."""
    err, prog = nvrtc.nvrtcCreateProgram(
        source.code.encode(), _file_name(source).encode(), 0, [], []
    )
    _check(err, "nvrtcCreateProgram")
    expression = None if _C_NAME.match(source.name) else source.name.encode()
    if expression is not None:
        _check(nvrtc.nvrtcAddNameExpression(prog, expression)[0], "nvrtcAddNameExpression")
    flags = options + _nvrtc_cache_flags
    (result,) = nvrtc.nvrtcCompileProgram(prog, len(flags), [o.encode() for o in flags])
    log = _log(prog)
    rejected = result == nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION
    if rejected and _nvrtc_cache_flags and _nvrtc_cache_flags[0].lstrip("-") in log:
        nvrtc.nvrtcDestroyProgram(prog)
        _nvrtc_cache_flags.clear()
        return _compile_program(source, options)
    return prog, result, log, expression


def compile_source(source: KernelSource) -> Artifact:
    """Compile `source` to a cubin. Raises CompileError (with the log) when NVRTC rejects it."""
    _check_arch(source)
    options = compile_options(source)
    start = time.perf_counter()
    prog, result, log, expression = _compile_program(source, options)
    try:
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            dump_compile(source, options, log)
            raise CompileError(source.name, source.arch, _error_name(result), log)
        cubin = _read(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        symbol = source.name if expression is None else _lowered(prog, expression)
        ptx = _read(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if dump_enabled() else None
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    seconds = time.perf_counter() - start
    functions = parse_ptxas_log(log)
    meta: dict[str, Any] = {
        "arch": source.arch,
        "symbol": symbol,
        "resources": functions.get(symbol, {}),
        "functions": functions,
        "compile_s": round(seconds, 4),
        "nvrtc": "{}.{}".format(*nvrtc_version()),
        "log": log,
        "source": dict(source.meta),
    }
    dump_compile(source, options, log, ptx=ptx, cubin=cubin)
    return Artifact(binary=cubin, name=source.name, meta=meta)


_RESOURCE_PATTERNS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "stack_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "smem_bytes": re.compile(r"(\d+) bytes smem"),
    "cmem_bytes": re.compile(r"(\d+) bytes cmem\[0\]"),
}
_FUNCTION_LINE = re.compile(r"(?:Compiling entry function|Function properties for) '?([^'\s]+)'?")


def parse_ptxas_log(log: str) -> dict[str, dict[str, int]]:
    """Per-function resources from ptxas -v output: registers, spills, stack, smem, cmem, barriers.

    ptxas reports a function's lines after a `Compiling entry function 'f'` or `Function properties
    for f` line; a value not printed (e.g. smem of a kernel using none) is 0.
    """
    functions: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in log.splitlines():
        header = _FUNCTION_LINE.search(line)
        if header:
            current = functions.setdefault(header.group(1), dict.fromkeys(_RESOURCE_PATTERNS, 0))
            continue
        if current is None:
            continue
        for key, pattern in _RESOURCE_PATTERNS.items():
            match = pattern.search(line)
            if match:
                current[key] = int(match.group(1))
    return functions


def _check_arch(source: KernelSource) -> None:
    match = re.fullmatch(r"sm_(\d+)[af]?", source.arch)
    if not match:
        raise ValueError(
            f"kernel {source.name!r}: arch {source.arch!r} is not an NVRTC target; expected "
            "'sm_<number>' with an optional 'a'/'f' suffix, e.g. 'sm_90a' (see humming_cuda.caps)"
        )
    if int(match.group(1)) not in supported_archs():
        raise ValueError(
            f"kernel {source.name!r}: this NVRTC {'.'.join(map(str, nvrtc_version()))} cannot target "
            f"{source.arch}; it supports sm_{', sm_'.join(map(str, supported_archs()))}: choose one "
            "of those (humming_cuda.caps.ARCHS lists humming's rows) or upgrade nvidia-cuda-nvrtc"
        )


def _file_name(source: KernelSource) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", source.name).strip("_")[:80] + ".cu"


def _log(prog: Any) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    _check(err, "nvrtcGetProgramLogSize")
    buf = b" " * size
    _check(nvrtc.nvrtcGetProgramLog(prog, buf)[0], "nvrtcGetProgramLog")
    return buf.rstrip(b"\x00").decode(errors="replace")


def _read(prog: Any, size_fn: Any, read_fn: Any) -> bytes:
    err, size = size_fn(prog)
    _check(err, size_fn.__name__)
    buf = b" " * size
    _check(read_fn(prog, buf)[0], read_fn.__name__)
    return buf


def _lowered(prog: Any, expression: bytes) -> str:
    err, name = nvrtc.nvrtcGetLoweredName(prog, expression)
    _check(err, "nvrtcGetLoweredName")
    return name.decode() if isinstance(name, bytes) else str(name)


def _error_name(result: Any) -> str:
    _, text = nvrtc.nvrtcGetErrorString(result)
    return text.decode() if isinstance(text, bytes) else str(result)


def _check(err: Any, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {_error_name(err)}")
