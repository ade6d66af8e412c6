"""Every HUMMING_* environment variable, declared once, typed, and read at call time.

Other modules read variables only through `ENV.<name>`; `humming info` and docs/environment.md list
this table. Variables owned by other tools (CUDA_HOME, PPU_SDK) are read by their device packages.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, true/false, yes/no, on/off), got {text!r}")


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected an integer, got {text!r}") from None


def _list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _path(text: str) -> Path:
    return Path(text).expanduser()


@dataclass(frozen=True)
class EnvVar:
    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str

    def get(self) -> Any:
        raw = os.environ.get(self.name)
        if raw is None:
            return self.default() if callable(self.default) else self.default
        try:
            return self.parse(raw)
        except ValueError as exc:
            raise ValueError(f"environment variable {self.name}={raw!r}: {exc}") from None


VARIABLES: tuple[EnvVar, ...] = (
    EnvVar(
        "HUMMING_DEVICE",
        str,
        None,
        "force a device by name (reference, cuda, ppu) instead of the highest-priority probe",
    ),
    EnvVar(
        "HUMMING_CACHE_DIR",
        _path,
        lambda: Path("~/.cache/humming").expanduser(),
        "root of the on-disk kernel cache, one subfolder per device",
    ),
    EnvVar(
        "HUMMING_DISABLE_DISK_CACHE",
        _bool,
        False,
        "compile every kernel anew (the in-process memo still applies)",
    ),
    EnvVar(
        "HUMMING_COMPILE_WORKERS",
        _int,
        lambda: min(32, os.cpu_count() or 1),
        "threads compiling kernels in parallel",
    ),
    EnvVar(
        "HUMMING_DUMP_DIR",
        _path,
        None,
        "write each compiled kernel's source, PTX, SASS and log here",
    ),
    EnvVar(
        "HUMMING_LINEINFO",
        _bool,
        False,
        "compile CUDA kernels with -lineinfo: source lines in sanitizer/ncu reports, 2x larger cubins",
    ),
    EnvVar(
        "HUMMING_PDL",
        _bool,
        True,
        "launch the kernels built for it with programmatic dependent launch (sm_90+); 0: plain launches",
    ),
    EnvVar(
        "HUMMING_SPLIT_SCATTER",
        _bool,
        True,
        "let split-K kernels whose whole grid is resident sum their splits all at once (the CTAs "
        "wait on each other); 0: the last split sums alone",
    ),
    EnvVar(
        "HUMMING_UNVERIFIED_KERNELS",
        _bool,
        False,
        "let devices use kernel families that compile but have not yet been verified on hardware",
    ),
    EnvVar("HUMMING_LOG_LEVEL", str, "WARNING", "log level of the humming_* loggers"),
    EnvVar(
        "HUMMING_PPU_COMPILER",
        _path,
        None,
        "PPU SDK compiler to run instead of $PPU_SDK/CUDA_SDK/bin/hgcc (ppu device)",
    ),
    EnvVar(
        "HUMMING_VLLM_CLAIM",
        _list,
        ("low_bits", "asymmetric", "act_order"),
        "vLLM plugin: checkpoints it claims without --quantization humming_q (empty: claim none)",
    ),
    EnvVar(
        "HUMMING_TEST_REQUIRE",
        _list,
        (),
        "comma list of devices whose tests must run: skips become failures",
    ),
)


class _Env:
    """Attribute access to the table above: ENV.HUMMING_CACHE_DIR."""

    def __init__(self, variables: tuple[EnvVar, ...]) -> None:
        self._vars = {v.name: v for v in variables}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._vars[name].get()
        except KeyError:
            raise AttributeError(f"{name} is not a declared humming environment variable") from None

    def __iter__(self):
        return iter(self._vars.values())


ENV = _Env(VARIABLES)
