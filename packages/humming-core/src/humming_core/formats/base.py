"""What every checkpoint format provides, and the registry that picks one for a checkpoint.

A format is a class built from a `Checkpoint` (its folder, parsed configs and lazy tensor reader).
It lists the quantized layers it found (`layers()`, cheap: headers only) and converts one layer's
stored tensors to a `CanonicalWeight` (`load(name)`). Everything else in the checkpoint (norms,
embeddings kept in 16 bits) is a plain tensor, listed by `plain_tensors()`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..packing import CanonicalWeight
from ..spec import QuantSpec
from .errors import FormatError
from .safetensors_io import SafetensorsCheckpoint


@dataclass(frozen=True)
class QuantLayer:
    """One quantized linear (or MoE expert stack) found in a checkpoint."""

    name: str  # tensor-name prefix, e.g. "model.layers.0.mlp.down_proj"
    spec: QuantSpec
    n: int
    k: int
    experts: int = 0  # 0 for a dense layer

    @property
    def bits_per_weight(self) -> float:
        return self.spec.weight.bits_per_weight

    @property
    def nbytes(self) -> int:
        return self.spec.weight_bytes(self.n, self.k) * max(1, self.experts)


@dataclass
class Checkpoint:
    """A checkpoint folder: merged configs plus a lazy tensor reader."""

    path: Path
    config: dict[str, Any]  # the quantization config (or GGUF metadata)
    tensors: Any  # SafetensorsCheckpoint or GGUFFile
    model_config: dict[str, Any] = field(default_factory=dict)
    # Accept conversions that round (reported per case, e.g. a reciprocal global scale); off by default.
    allow_rounding: bool = False


class CheckpointFormat:
    """Base of every format: subclasses set `methods` and implement `layers` and `load`."""

    methods: ClassVar[tuple[str, ...]] = ()
    name: ClassVar[str] = ""

    def __init__(self, ckpt: Checkpoint) -> None:
        self.ckpt = ckpt
        self.tensors = ckpt.tensors
        self._layers: dict[str, QuantLayer] | None = None

    def layers(self) -> list[QuantLayer]:
        if self._layers is None:
            self._layers = {layer.name: layer for layer in self.find_layers()}
        return list(self._layers.values())

    def layer(self, name: str) -> QuantLayer:
        self.layers()
        try:
            return self._layers[name]
        except KeyError:
            raise FormatError(
                f"{name!r} is not a quantized layer of {self.ckpt.path} ({self.name}); it has "
                f"{len(self._layers)} quantized layers, e.g. {', '.join(list(self._layers)[:3])}"
            ) from None

    def find_layers(self) -> list[QuantLayer]:
        raise NotImplementedError

    def load(self, name: str) -> CanonicalWeight:
        raise NotImplementedError

    def k_permutation(self, name: str) -> torch.Tensor | None:
        """For act-order layers, the K order of the canonical weight (see common.k_permutation)."""
        return None

    def extras(self, name: str) -> dict[str, torch.Tensor]:
        """Stored tensors of a layer the weight does not hold (static activation scales, ...)."""
        return {}

    def plain_tensors(self) -> list[str]:
        """Names of stored tensors that belong to no quantized layer."""
        prefixes = tuple(layer.name + "." for layer in self.layers())
        return [key for key in self.tensors.names() if not key.startswith(prefixes)]

    def read_plain(self, name: str) -> torch.Tensor:
        return self.tensors.get(name)


FORMATS: dict[str, type[CheckpointFormat]] = {}


def register(cls: type[CheckpointFormat]) -> type[CheckpointFormat]:
    for method in cls.methods:
        FORMATS[method] = cls
    return cls


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: invalid JSON ({exc})") from None


def _quant_config(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The quantization config and the model config, from whichever file the producer wrote."""
    model = _read_json(folder / "config.json") if (folder / "config.json").exists() else {}
    quant = model.get("quantization_config")
    if quant is None and (folder / "quantize_config.json").exists():
        # Older AutoGPTQ checkpoints keep the config apart and do not name the method.
        quant = {"quant_method": "gptq", **_read_json(folder / "quantize_config.json")}
    if quant is None and (folder / "hf_quant_config.json").exists():
        hf = _read_json(folder / "hf_quant_config.json")
        quant = {"quant_method": "modelopt", **hf.get("quantization", hf)}
    if quant is None:
        raise FormatError(
            f"{folder}: no quantization config found (config.json 'quantization_config', "
            "quantize_config.json or hf_quant_config.json): is this a quantized checkpoint?"
        )
    return quant, model


def open_checkpoint(path: str | Path, allow_rounding: bool = False) -> CheckpointFormat:
    """Detect the format of a checkpoint (folder, .safetensors file or .gguf file) and open it.

    Conversions are exact; one that would round (named in its error) needs allow_rounding=True.
    """
    path = Path(path)
    if not path.exists():
        raise FormatError(f"{path}: no such file or folder")
    if path.suffix == ".gguf":
        from .gguf_io import GGUFFile

        gguf = GGUFFile(path)
        return FORMATS["gguf"](Checkpoint(path, gguf.metadata, gguf, allow_rounding=allow_rounding))
    folder = path if path.is_dir() else path.parent
    quant, model = _quant_config(folder)
    method = str(quant.get("quant_method", "")).lower()
    if method not in FORMATS:
        raise FormatError(
            f"{folder}: unknown quant_method {method!r}; humming reads {', '.join(sorted(FORMATS))}"
        )
    ckpt = Checkpoint(path, quant, SafetensorsCheckpoint(path), model, allow_rounding)
    return FORMATS[method](ckpt)
