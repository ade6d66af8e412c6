"""Fixtures for the vLLM adapter tests: one gloo process group, simulated tensor-parallel ranks."""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager

import pytest

# The synthetic-checkpoint helpers live next to the tests (import mode is importlib).


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def vllm_env():
    """vLLM's CPU platform with a one-process gloo group; the GEMMs run on the `reference` device."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ["HUMMING_DEVICE"] = "reference"
    pytest.importorskip(
        "vllm", reason="vLLM is not installed: run `nox -s tests_vllm`, which installs it"
    )
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel

    import humming_vllm

    humming_vllm.register()
    with set_current_vllm_config(VllmConfig()):
        init_distributed_environment(
            world_size=1,
            rank=0,
            local_rank=0,
            distributed_init_method=f"tcp://127.0.0.1:{_free_port()}",
            backend="gloo",
        )
        initialize_model_parallel(1, 1)
        yield


@contextmanager
def as_tp_rank(monkeypatch, rank: int, size: int):
    """Make vLLM's layers and parameters believe they are rank `rank` of `size` (one process)."""
    import vllm.model_executor.layers.linear as linear
    import vllm.model_executor.parameter as parameter

    with monkeypatch.context() as m:
        for module in (linear, parameter):
            m.setattr(module, "get_tensor_model_parallel_rank", lambda: rank)
            m.setattr(module, "get_tensor_model_parallel_world_size", lambda: size)
        yield


@pytest.fixture
def tp_rank(monkeypatch):
    return lambda rank, size: as_tp_rank(monkeypatch, rank, size)
