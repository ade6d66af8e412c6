"""One session per target (DESIGN.md, "Tests and sessions").

Default (CPU-safe, what `uv run nox` and CI run): lint, tests_core, tests_compile, tests_vllm.
Hardware sessions, run by name on a machine that has the device: tests_cuda, tests_ppu, bench.
Arguments after `--` go to pytest (or to the benchmark), e.g. `uv run nox -s tests_core -- -k packing`.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["lint", "tests_core", "tests_compile", "tests_vllm"]
nox.options.reuse_existing_virtualenvs = True


def _sync(session: nox.Session, *extra: str) -> None:
    """Install the locked workspace (all four packages + dev group) into the session's venv."""
    session.run_install(
        "uv",
        "sync",
        "--frozen",
        "--all-packages",
        *extra,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )


def _pytest(session: nox.Session, marker: str, *paths: str, require: str = "") -> None:
    env = {"HUMMING_TEST_REQUIRE": require} if require else {}
    session.run("pytest", "-m", marker, *(session.posargs or paths), env=env)


@nox.session(tags=["cpu"])
def lint(session: nox.Session) -> None:
    _sync(session)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(tags=["cpu"])
def tests_core(session: nox.Session) -> None:
    """CPU tests of every package: specs, numerics, packing, formats, registry, CLI, layouts."""
    _sync(session)
    _pytest(session, "cpu", "packages")


@nox.session(tags=["cpu", "cuda"])
def tests_compile(session: nox.Session) -> None:
    """NVRTC compilation of every generated kernel for every arch in the table (no GPU needed)."""
    _sync(session)
    _pytest(session, "compile", "packages")


@nox.session(tags=["cpu", "vllm"])
def tests_vllm(session: nox.Session) -> None:
    """The vLLM plugin's tests (skip with a reason where vLLM is not installed)."""
    _sync(session)
    _pytest(session, "vllm", "packages/humming-vllm")


@nox.session(tags=["cuda"])
def tests_cuda(session: nox.Session) -> None:
    """Kernel conformance and runtime tests on an NVIDIA GPU; skips become failures."""
    _sync(session)
    _pytest(session, "cuda", "packages", require="cuda")


@nox.session(tags=["ppu"])
def tests_ppu(session: nox.Session) -> None:
    """The shared conformance suite on a Zhenwu PPU; skips become failures."""
    _sync(session)
    _pytest(session, "ppu", "packages", require="ppu")


@nox.session(tags=["cuda", "perf"])
def bench(session: nox.Session) -> None:
    """Benchmarks against baselines measured in the same run (needs the GPU)."""
    _sync(session)
    session.run("humming", "bench", *session.posargs)
