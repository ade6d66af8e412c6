"""vLLM-free core: from a Hugging Face quantization config to the scheme of each layer.

`QuantPlan.from_hf(cfg)` reads the config once; `scheme_for(prefix, shards)` answers for one vLLM
layer (None: leave it unquantized). Fused vLLM layers (qkv_proj, gate_up_proj) are checked shard by
shard through `packed_modules_mapping`: the checkpoint names the unfused layers.

Auto-claim (`claim_reasons`): vLLM's own kernels serve GPTQ and compressed-tensors at 4 and 8 bits,
symmetric, without act-order; the plugin claims a checkpoint automatically only for what that path
lacks — the reasons listed in `HUMMING_VLLM_CLAIM` (default: low_bits, asymmetric, act_order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from humming_core.formats.compressed_tensors import matches

from .schemes import GptqScheme, IntScheme, PackQuantizedScheme

CLAIM_REASONS = ("low_bits", "asymmetric", "act_order")
SUPPORTED_METHODS = ("gptq", "compressed-tensors")


class UnsupportedConfig(ValueError):
    """A quantization config this plugin cannot serve (the message says which field and why)."""


def _gptq(cfg: dict[str, Any]) -> GptqScheme:
    bits = int(cfg.get("bits", 4))
    if bits not in (2, 3, 4, 8):
        raise UnsupportedConfig(f"GPTQ bits={bits}: humming serves 2, 3, 4 or 8 bits")
    if cfg.get("dynamic"):
        raise UnsupportedConfig(
            "GPTQ 'dynamic' per-module overrides are not supported: re-export without them or list "
            "the modules to skip in modules_to_not_convert"
        )
    if cfg.get("lm_head"):
        raise UnsupportedConfig(
            "GPTQ lm_head=true: a quantized lm_head is not supported; quantize without it"
        )
    g = int(cfg.get("group_size", 128))
    return GptqScheme(
        "gptq",
        cfg,
        bits,
        None if g == -1 else g,
        bool(cfg.get("sym", True)),
        bool(cfg.get("desc_act", False)),
    )


def _ct_group(name: str, body: dict[str, Any], cfg: dict[str, Any]) -> PackQuantizedScheme:
    fmt = body.get("format") or cfg.get("format")
    w = body.get("weights") or {}
    where = f"compressed-tensors config group {name!r}"
    if fmt != "pack-quantized" or w.get("type", "int") != "int":
        raise UnsupportedConfig(
            f"{where}: format {fmt!r} with {w.get('type')!r} weights; humming_q serves int pack-quantized"
        )
    if body.get("input_activations"):
        raise UnsupportedConfig(
            f"{where}: quantized activations are not served by humming_q yet (weight-only only)"
        )
    strategy, bits = w.get("strategy"), int(w.get("num_bits", 0))
    if strategy not in ("group", "channel") or not 1 < bits <= 8:
        raise UnsupportedConfig(
            f"{where}: strategy={strategy!r}, num_bits={bits}; use group or channel, 2..8 bits"
        )
    single = {
        **cfg,
        "format": fmt,
        "ignore": [],
        "config_groups": {name: {**body, "targets": ["Linear"]}},
    }
    return PackQuantizedScheme(
        "compressed-tensors",
        single,
        bits,
        w.get("group_size") if strategy == "group" else None,
        bool(w.get("symmetric", True)),
        w.get("actorder") == "group",
    )


@dataclass
class QuantPlan:
    """Which scheme each layer gets, and which layers stay unquantized."""

    method: str
    groups: list[tuple[list[str], IntScheme]]  # (targets, scheme); GPTQ has one group ["Linear"]
    skip: list[str] = field(default_factory=list)
    skip_exact: bool = False  # compressed-tensors `ignore` matches names/regexes; GPTQ substrings

    @classmethod
    def from_hf(cls, cfg: dict[str, Any]) -> QuantPlan:
        method = str(cfg.get("quant_method", "")).lower()
        if method == "gptq":
            return cls(
                method, [(["Linear"], _gptq(cfg))], list(cfg.get("modules_to_not_convert") or [])
            )
        if method == "compressed-tensors":
            groups = cfg.get("config_groups") or {}
            if not groups:
                raise UnsupportedConfig("compressed-tensors config has no config_groups")
            built = [
                (list(b.get("targets") or []), _ct_group(n, b, cfg)) for n, b in groups.items()
            ]
            return cls(method, built, list(cfg.get("ignore") or []), skip_exact=True)
        raise UnsupportedConfig(
            f"quant_method {method!r} is not served by humming_q; it serves {', '.join(SUPPORTED_METHODS)}"
        )

    def _skipped(self, name: str) -> bool:
        if self.skip_exact:
            return any(matches(name, t) for t in self.skip if t != "Linear")
        return any(key in name for key in self.skip)

    def _scheme_of(self, name: str) -> IntScheme | None:
        if self._skipped(name):
            return None
        specific = [
            s
            for targets, s in self.groups
            if any(t != "Linear" and matches(name, t) for t in targets)
        ]
        generic = [s for targets, s in self.groups if "Linear" in targets]
        found = specific or generic
        return found[0] if found else None

    def scheme_for(self, prefix: str, shards: list[str] | None = None) -> IntScheme | None:
        """The scheme of the vLLM layer `prefix`; `shards` are the checkpoint names it fuses."""
        base = prefix.rpartition(".")[0]
        names = [f"{base}.{s}" if base else s for s in shards] if shards else [prefix]
        schemes = [self._scheme_of(n) for n in names]
        if any(s is not schemes[0] for s in schemes):
            raise UnsupportedConfig(
                f"layer {prefix!r} fuses {names} but they are quantized differently (or some are "
                "ignored); vLLM runs a fused layer with one method: quantize all its parts alike"
            )
        return schemes[0]

    def claim_reasons(self) -> set[str]:
        """Why vLLM's own kernels cannot serve this checkpoint (empty: they can)."""
        reasons = set()
        for _, s in self.groups:
            if s.bits not in (4, 8):
                reasons.add("low_bits")
            if not s.symmetric:
                reasons.add("asymmetric")
            if s.act_order:
                reasons.add("act_order")
        return reasons


def should_claim(cfg: dict[str, Any], wanted: tuple[str, ...]) -> bool:
    """True when the plugin can serve `cfg` and it needs one of the `wanted` claim reasons."""
    try:
        plan = QuantPlan.from_hf(cfg)
    except UnsupportedConfig:
        return False
    return bool(plan.claim_reasons() & set(wanted))
