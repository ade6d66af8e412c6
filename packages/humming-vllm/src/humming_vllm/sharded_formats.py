"""vLLM-free core: the `ShardedScheme` of each N-major checkpoint format, from its HF config.

compressed-tensors `int-quantized` / `float-quantized` (8-bit weights; tensor, channel, group or
block scales; dynamic or static per-tensor activations), `nvfp4-pack-quantized` (W4A16 or W4A4),
`mxfp4-pack-quantized` (weight-only); HF fine-grained FP8 (`quant_method: fp8` with
`weight_block_size`); ModelOpt NVFP4, W4A16_NVFP4, FP8 and MXFP8. Scales are held in fp32
parameters whatever their stored 16/32-bit type (exact), raw E8M0 / UE4M3 ones in their own bytes.
"""

from __future__ import annotations

from typing import Any

import torch

from .sharded import ShardedScheme, Stored

_FP8 = torch.float8_e4m3fn
_F32 = torch.float32


class UnsupportedConfig(ValueError):
    """A quantization config this plugin cannot serve (the message says which field and why)."""


def _ct_scale(w: dict[str, Any], where: str) -> tuple[Stored, tuple[int, int] | None]:
    strategy = w.get("strategy")
    if strategy == "tensor":
        return Stored("weight_scale", _F32, None), None
    if strategy == "channel":
        return Stored("weight_scale", _F32, 1, channel=True), None
    if strategy == "group":
        return Stored("weight_scale", _F32, int(w["group_size"])), None
    if strategy == "block":
        bn, bk = (int(v) for v in w.get("block_structure") or (0, 0))
        if not bn or not bk:
            raise UnsupportedConfig(f"{where}: block strategy without block_structure [bn, bk]")
        return Stored("weight_scale", _F32, bk, rows=bn), (bn, bk)
    raise UnsupportedConfig(
        f"{where}: weight strategy {strategy!r}; use tensor, channel, group or block"
    )


def _ct_static_input(a: dict[str, Any] | None, where: str) -> bool:
    """Whether the group quantizes activations with a stored (static) per-tensor scale."""
    if not a:
        return False
    if not a.get("symmetric", True):
        raise UnsupportedConfig(
            f"{where}: asymmetric activations (input zero points) are not served; quantize "
            "activations symmetrically"
        )
    if a.get("dynamic") in (True, "local"):
        return False
    if a.get("strategy") != "tensor":
        raise UnsupportedConfig(
            f"{where}: static activations with strategy {a.get('strategy')!r}; static "
            "activation scales must be per tensor"
        )
    return True


def _ct_eight_bit(w: dict, a: dict | None, single: dict, where: str) -> ShardedScheme:
    kind, bits = w.get("type", "int"), int(w.get("num_bits", 0))
    if bits != 8 or not w.get("symmetric", True):
        raise UnsupportedConfig(
            f"{where}: {kind} weights of {bits} bits, symmetric={w.get('symmetric', True)}; "
            "int/float-quantized layers are served with symmetric 8-bit weights"
        )
    code = torch.int8 if kind == "int" else _FP8
    scale, block = _ct_scale(w, where)
    stored = [Stored("weight", code, 1), scale]
    static = _ct_static_input(a, where)
    if static:
        stored.append(Stored("input_scale", _F32, None))
    return ShardedScheme(
        "compressed-tensors",
        single,
        tuple(stored),
        "input_scale" if static else None,
        block=block,
    )


def ct_sharded(name: str, body: dict[str, Any], cfg: dict[str, Any]) -> ShardedScheme:
    """The scheme of one compressed-tensors config group stored N-major (not pack-quantized)."""
    fmt = body.get("format") or cfg.get("format")
    w, a = body.get("weights") or {}, body.get("input_activations")
    where = f"compressed-tensors config group {name!r} ({fmt})"
    single = {
        **cfg,
        "format": fmt,
        "ignore": [],
        "config_groups": {name: {**body, "targets": ["Linear"]}},
    }
    if fmt in ("int-quantized", "float-quantized", "naive-quantized"):
        return _ct_eight_bit(w, a, single, where)
    if fmt == "nvfp4-pack-quantized":
        stored = [
            Stored("weight_packed", torch.uint8, 2),
            Stored("weight_scale", _FP8, 16),
            Stored("weight_global_scale", _F32, None),
        ]
        act = "input_global_scale" if a else None
        if act:
            stored.append(Stored(act, _F32, None))
        # Global scales are stored as divisors: vLLM multiplies by their fp32 reciprocal too.
        return ShardedScheme(
            "compressed-tensors", single, tuple(stored), act, True, allow_rounding=True
        )
    if fmt == "mxfp4-pack-quantized":
        if a:
            raise UnsupportedConfig(f"{where}: MXFP4 activations are not served (weight-only)")
        stored = (Stored("weight_packed", torch.uint8, 2), Stored("weight_scale", torch.uint8, 32))
        return ShardedScheme("compressed-tensors", single, stored)
    raise UnsupportedConfig(
        f"{where}: format {fmt!r} is not served; humming_q serves pack-quantized, int-quantized, "
        "float-quantized, nvfp4-pack-quantized and mxfp4-pack-quantized"
    )


def fp8_block(cfg: dict[str, Any]) -> ShardedScheme:
    """HF fine-grained FP8: e4m3 weights, fp32 `weight_scale_inv` per [bn, bk] block."""
    block = cfg.get("weight_block_size")
    if not block or len(block) != 2:
        raise UnsupportedConfig(
            f"fp8 config without weight_block_size [bn, bk] (got {block!r}): humming_q serves "
            "block-scaled FP8; per-tensor FP8 is served through compressed-tensors or ModelOpt"
        )
    if cfg.get("activation_scheme", "dynamic") != "dynamic":
        raise UnsupportedConfig(
            f"fp8 activation_scheme {cfg.get('activation_scheme')!r}: block FP8 is served with "
            "dynamic activations only"
        )
    bn, bk = int(block[0]), int(block[1])
    stored = (Stored("weight", _FP8, 1), Stored("weight_scale_inv", _F32, bk, rows=bn))
    return ShardedScheme("fp8", cfg, stored, block=(bn, bk))


def modelopt(cfg: dict[str, Any]) -> ShardedScheme:
    """ModelOpt NVFP4 / W4A16_NVFP4 / FP8 / MXFP8 (one algorithm for the whole checkpoint)."""
    algo = str(cfg.get("quant_algo") or "").upper()
    if algo in ("NVFP4", "W4A16_NVFP4"):
        stored = [
            Stored("weight", torch.uint8, 2),
            Stored("weight_scale", _FP8, 16),
            Stored("weight_scale_2", _F32, None),
        ]
        act = "input_scale" if algo == "NVFP4" else None
    elif algo == "FP8":
        stored = [Stored("weight", _FP8, 1), Stored("weight_scale", _F32, None)]
        act = "input_scale"
    elif algo == "MXFP8":
        stored = [Stored("weight", _FP8, 1), Stored("weight_scale", torch.uint8, 32)]
        act = None
    else:
        raise UnsupportedConfig(
            f"ModelOpt quant_algo {algo!r} is not served; humming_q serves NVFP4, W4A16_NVFP4, "
            "FP8 and MXFP8 (MIXED_PRECISION checkpoints are not)"
        )
    if act:
        stored.append(Stored(act, _F32, None))
    return ShardedScheme("modelopt", cfg, tuple(stored), act)
