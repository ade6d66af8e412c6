"""The PPU SDK compiler, run in a subprocess: a rendered KernelSource in, a PPU binary out.

No NVRTC-style in-process compiler is confirmed for the PPU, so each kernel is written to a
temporary folder and compiled by the SDK's offline compiler. Where things are:

- SDK root: `$PPU_SDK`, else `/usr/local/PPU_SDK` (where public deployments install it). This module
  is the only place that reads `PPU_SDK` (it is the vendor's variable, not a HUMMING_* one).
- Compiler: `$HUMMING_PPU_COMPILER` if set, else the first of `$PPU_SDK/CUDA_SDK/bin/hgcc` and
  `$PPU_SDK/bin/hgcc` that exists (public build scripts use both layouts).

The fingerprint (which enters every cache key) is the compiler's path, its `--version` output and
the flags, so a new SDK or a changed flag never reuses an old binary.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from humming_core.device import Artifact, KernelSource
from humming_core.env import ENV
from humming_cuda.headers import humming_include_root

from .caps import MODELS
from .elf import ElfError, read_device_binary

SDK_ENV = "PPU_SDK"
DEFAULT_SDK = Path("/usr/local/PPU_SDK")
COMPILER_CANDIDATES = ("CUDA_SDK/bin/hgcc", "bin/hgcc")

# USE_PPU=1 selects the PPU dialect in the shared headers. The mbarrier yield analysis is switched
# off because it can loop forever on dynamic barrier addresses in synchronous-load pipelines.
# `-hgbin` asks for a loadable device binary (the PPU counterpart of nvcc's -cubin), as public PPU
# JIT code does; unverified here.
BASE_FLAGS = (
    "-std=c++17",
    "-O3",
    "-DUSE_PPU=1",
    "-mllvm",
    "-ppu-mbar-yield-analysis=false",
    "-hgbin",
)
VERSION_TIMEOUT_S = 60.0


class ToolchainError(RuntimeError):
    """The PPU toolchain is missing or misbehaved."""


class PpuCompileError(ToolchainError):
    """The SDK compiler rejected a source; carries its command line and full stderr."""

    def __init__(self, source_name: str, arch: str, command: list[str], returncode: int, log: str):
        self.source_name, self.arch, self.command, self.log = source_name, arch, command, log
        super().__init__(
            f"PPU compiler failed on kernel {source_name!r} for {arch} (exit code {returncode}); "
            f"command: {' '.join(command)}\ncompiler output:\n{log.strip() or '(empty)'}"
        )


def sdk_root() -> Path:
    """The PPU SDK root: $PPU_SDK, else the default install location."""
    value = os.environ.get(SDK_ENV, "").strip()
    return Path(value).expanduser() if value else DEFAULT_SDK


def find_compiler(explicit: str | os.PathLike | None = None) -> Path:
    """The compiler to run: the explicit path, $HUMMING_PPU_COMPILER, or one inside the SDK."""
    chosen = explicit if explicit is not None else ENV.HUMMING_PPU_COMPILER
    if chosen is not None:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise ToolchainError(
                f"PPU compiler {str(path)!r} does not exist: point HUMMING_PPU_COMPILER (or the "
                "compiler argument) at the SDK's hgcc, or unset it to search $PPU_SDK"
            )
        return path
    root = sdk_root()
    tried = [root / rel for rel in COMPILER_CANDIDATES]
    for path in tried:
        if path.is_file():
            return path
    raise ToolchainError(
        f"no PPU compiler found: looked for {', '.join(map(str, tried))}. Set {SDK_ENV} to the "
        "PPU SDK root, or HUMMING_PPU_COMPILER to the compiler itself"
    )


def _package_version() -> str:
    try:
        return importlib.metadata.version("humming-ppu")
    except importlib.metadata.PackageNotFoundError:
        return "source"


def _arches() -> tuple[str, ...]:
    return tuple(m.caps.arch for m in MODELS)


@dataclass(frozen=True)
class PpuToolchain:
    """One compiler plus its flags; `compile` is pure (source text in, binary bytes out)."""

    compiler: Path
    extra_flags: tuple[str, ...] = ()
    timeout_s: float = 600.0

    @classmethod
    def locate(cls, compiler: str | os.PathLike | None = None, **kwargs) -> PpuToolchain:
        return cls(compiler=find_compiler(compiler), **kwargs)

    @property
    def flags(self) -> tuple[str, ...]:
        return BASE_FLAGS + self.extra_flags

    @functools.cached_property
    def version(self) -> str:
        """The compiler's `--version` output (run once per toolchain object)."""
        try:
            done = subprocess.run(
                [str(self.compiler), "--version"],
                capture_output=True,
                text=True,
                timeout=VERSION_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ToolchainError(
                f"could not run {self.compiler} --version ({type(exc).__name__}: {exc}): check "
                "that it is the PPU SDK's compiler and is executable"
            ) from exc
        if done.returncode != 0:
            raise ToolchainError(
                f"{self.compiler} --version exited with {done.returncode}; stderr:\n"
                f"{done.stderr.strip() or '(empty)'}"
            )
        return (done.stdout + done.stderr).strip()

    def fingerprint(self) -> str:
        """Everything outside the source that changes the binary: enters every cache key."""
        return (
            f"humming-ppu={_package_version()};compiler={self.compiler};"
            f"version={self.version};flags={' '.join(self.flags)}"
        )

    def include_dirs(self, source: KernelSource) -> list[str]:
        """humming-cuda's headers first, then the source's own roots, without repeats."""
        dirs: list[str] = []
        for path in map(str, (humming_include_root(), *source.headers)):
            if path not in dirs:
                dirs.append(path)
        return dirs

    def command(self, source: KernelSource, src: Path, out: Path) -> list[str]:
        """The compiler's argv for one source file."""
        if source.arch not in _arches():
            raise ToolchainError(
                f"arch {source.arch!r} is not a PPU arch: use one of {', '.join(_arches())} "
                "(the arch of the caps row the kernel was rendered for)"
            )
        includes = [f"-I{d}" for d in self.include_dirs(source)]
        return [
            str(self.compiler),
            str(src),
            "-o",
            str(out),
            f"-arch={source.arch}",
            *self.flags,
            *includes,
            *source.options,
        ]

    def compile(self, source: KernelSource) -> Artifact:
        """Compile in a private temp folder; check the result is a PPU binary with the entry."""
        with tempfile.TemporaryDirectory(prefix="humming-ppu-") as tmp:
            src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.hgbin"
            src.write_text(source.code)
            argv = self.command(source, src, out)
            log = self._run(source, argv)
            if not out.is_file():
                raise PpuCompileError(
                    source.name, source.arch, argv, 0, f"no output file {out} was written\n{log}"
                )
            binary = out.read_bytes()
        entries = _check_binary(source, binary)
        meta = {"log": log, "command": argv, "entries": entries, "arch": source.arch}
        return Artifact(binary=binary, name=source.name, meta=meta)

    def _run(self, source: KernelSource, argv: list[str]) -> str:
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ToolchainError(
                f"PPU compiler ran past {self.timeout_s:.0f} s on kernel {source.name!r}: "
                f"command: {' '.join(argv)}"
            ) from exc
        except OSError as exc:
            raise ToolchainError(f"could not start the PPU compiler {argv[0]}: {exc}") from exc
        log = (done.stdout + done.stderr).strip()
        if done.returncode != 0:
            raise PpuCompileError(source.name, source.arch, argv, done.returncode, done.stderr)
        return log


def _check_binary(source: KernelSource, binary: bytes) -> list[str]:
    """The binary's entry symbols; raises unless it is a PPU binary defining the kernel."""
    try:
        parsed = read_device_binary(binary)
    except ElfError as exc:
        raise ToolchainError(
            f"kernel {source.name!r}: the compiler output is unusable: {exc}"
        ) from exc
    if parsed.machine != "ppu":
        raise ToolchainError(
            f"kernel {source.name!r}: the compiler produced a {parsed.machine} binary "
            f"(e_machine {hex(parsed.e_machine)}), not a PPU one (0x10e): the configured compiler "
            "is not the PPU SDK's; check PPU_SDK / HUMMING_PPU_COMPILER"
        )
    # Entry names may be C++-mangled; the rendered name then appears inside the mangled one.
    if not any(source.name.split("<")[0].split("::")[-1] in e for e in parsed.entries):
        raise ToolchainError(
            f"kernel {source.name!r} is not among the binary's entry symbols "
            f"{list(parsed.entries)}: the rendered source must define it as a __global__ function"
        )
    return list(parsed.entries)
