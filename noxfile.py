"""One session per target (DESIGN.md, "Tests and sessions").

Default (CPU-safe, what `uv run nox` and CI run): lint, tests_core, tests_compile,
tests_compile_nvrtc13_0, tests_vllm.
Hardware sessions, run by name on a machine that has the device: tests_cuda, tests_ppu, bench.
Arguments after `--` go to pytest (or to the benchmark), e.g. `uv run nox -s tests_core -- -k packing`.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = [
    "lint",
    "tests_core",
    "tests_compile",
    "tests_compile_nvrtc13_0",
    "tests_vllm",
]
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


# The oldest NVRTC the package allows (nvidia-cuda-nvrtc>=13.0), which is what CUDA 13.0 installs
# (the H200 machine's toolkit among them) carry. Its ptxas miscompiled evict-first copies into
# operands of never-written uniform registers (illegal instruction on the GPU); the locked, newer
# NVRTC does not, so the SASS audit runs again on this one.
NVRTC_OLDEST = ("nvidia-cuda-nvrtc==13.0.88", "cuda-bindings==13.0.3")


@nox.session(tags=["cpu", "cuda"])
def tests_compile_nvrtc13_0(session: nox.Session) -> None:
    """The SASS audit (tests/test_sass_audit.py) with NVRTC 13.0 instead of the locked one."""
    _sync(session)
    env = {"VIRTUAL_ENV": session.virtualenv.location}
    session.run_install("uv", "pip", "install", *NVRTC_OLDEST, env=env)
    _pytest(session, "compile", "packages/humming-cuda/tests/test_sass_audit.py")


# vLLM is not in uv.lock (its torch pin conflicts with the CPU torch path source): tests_vllm
# installs the wheel without dependencies on top of the synced CPU torch, plus what importing its
# layers needs (VLLM.md "Testing without a GPU"). Measured on the CPU dev machine from an empty uv
# cache: 11-15 s; the vllm wheel is 336 MB, ~0.43 GB came down for it plus most deps; the venv
# grows by ~2.8 GB unpacked (xgrammar pulls triton). Whole session with a warm cache: ~35 s.
VLLM_PIN = "vllm==0.33.0"
VLLM_IMPORT_DEPS = (
    "packaging",
    "psutil",
    "pyzmq",
    "urllib3",
    "regex",
    "numpy",
    "transformers>=5.16.1,<5.21",
    "cbor2",
    "cachetools",
    "sentencepiece",
    "requests",
    "tqdm",
    "blake3",
    "py-cpuinfo",
    "tokenizers",
    "safetensors",
    "protobuf",
    "pydantic",
    "prometheus_client",
    "pillow",
    "partial-json-parser",
    "jsonschema",
    "msgspec",
    "pyyaml",
    "einops",
    "compressed-tensors==0.17.0",
    "cloudpickle",
    "python-json-logger",
    "ninja",
    "pybase64",
    "ijson",
    "setproctitle",
    "fastapi[standard]<0.137",
    "aiohttp",
    "openai",
    "tiktoken",
    "openai_harmony",
    "xgrammar",
    "llguidance",
)


@nox.session(tags=["cpu", "vllm"])
def tests_vllm(session: nox.Session) -> None:
    """The vLLM plugin against real vLLM 0.33 on the CPU platform (GEMMs on the reference device)."""
    _sync(session)
    env = {"VIRTUAL_ENV": session.virtualenv.location}
    session.run_install("uv", "pip", "install", "--no-deps", VLLM_PIN, env=env)
    # torch stays the synced CPU wheel: name it so no dependency can move it.
    torch_pin = session.run(
        "python", "-c", "import torch; print(torch.__version__)", silent=True
    ).strip()
    session.run_install("uv", "pip", "install", *VLLM_IMPORT_DEPS, f"torch=={torch_pin}", env=env)
    session.env["VLLM_TARGET_DEVICE"] = "cpu"
    _pytest(session, "vllm", "packages/humming-vllm", require="vllm")


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
