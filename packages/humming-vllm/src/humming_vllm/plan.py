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
from fnmatch import fnmatch
from typing import Any

from humming_core.formats.compressed_tensors import matches

from .moe_scheme import ExpertScheme, GptOssScheme
from .schemes import AwqScheme, GptqScheme, PackQuantizedScheme
from .sharded import ShardedScheme
from .sharded_formats import UnsupportedConfig, ct_sharded, fp8_block, modelopt

CLAIM_REASONS = ("low_bits", "asymmetric", "act_order")
SUPPORTED_METHODS = ("gptq", "awq", "compressed-tensors", "fp8", "modelopt", "mxfp4")
Scheme = GptqScheme | PackQuantizedScheme | AwqScheme | ShardedScheme


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


def _awq(cfg: dict[str, Any]) -> AwqScheme:
    bits = int(cfg.get("bits", cfg.get("w_bit", 4)))
    version = str(cfg.get("version", "gemm")).lower()
    if bits != 4 or version != "gemm" or not cfg.get("zero_point", True):
        raise UnsupportedConfig(
            f"AWQ bits={bits}, version={version!r}, zero_point={cfg.get('zero_point', True)}: "
            "humming_q serves 4-bit AWQ in the 'gemm' layout with zero points"
        )
    g = int(cfg.get("group_size", cfg.get("q_group_size", 128)))
    return AwqScheme("awq", cfg, 4, None if g == -1 else g, False, False)


def _ct_group(name: str, body: dict[str, Any], cfg: dict[str, Any]) -> Scheme:
    fmt = body.get("format") or cfg.get("format")
    w = body.get("weights") or {}
    where = f"compressed-tensors config group {name!r}"
    if fmt != "pack-quantized":
        return ct_sharded(name, body, cfg)
    if w.get("type", "int") != "int":
        raise UnsupportedConfig(
            f"{where}: pack-quantized {w.get('type')!r} weights; pack-quantized weights are int"
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
    groups: list[tuple[list[str], Scheme]]  # (targets, scheme); most methods: one ["Linear"] group
    skip: list[str] = field(default_factory=list)
    # How `skip` matches a layer name: compressed-tensors `ignore` names/regexes ("exact"), ModelOpt
    # `exclude_modules` wildcards ("glob"), GPTQ/AWQ/FP8 `modules_to_not_convert` substrings.
    skip_mode: str = "substring"
    gpt_oss_moe: bool = False  # gpt-oss MXFP4: experts quantized, every dense layer unquantized

    @classmethod
    def from_hf(cls, cfg: dict[str, Any]) -> QuantPlan:
        method = str(cfg.get("quant_method", "")).lower()
        not_convert = list(cfg.get("modules_to_not_convert") or [])
        if method in ("gptq", "awq", "fp8"):
            build = {"gptq": _gptq, "awq": _awq, "fp8": fp8_block}[method]
            return cls(method, [(["Linear"], build(cfg))], not_convert)
        if method == "compressed-tensors":
            groups = cfg.get("config_groups") or {}
            if not groups:
                raise UnsupportedConfig("compressed-tensors config has no config_groups")
            built = [
                (list(b.get("targets") or []), _ct_group(n, b, cfg)) for n, b in groups.items()
            ]
            return cls(method, built, list(cfg.get("ignore") or []), skip_mode="exact")
        if method in ("modelopt", "modelopt_fp4"):
            skip = list(cfg.get("exclude_modules") or cfg.get("ignore") or [])
            return cls(method, [(["Linear"], modelopt(cfg))], skip, skip_mode="glob")
        if method == "mxfp4":
            return cls(method, [], gpt_oss_moe=True)
        raise UnsupportedConfig(
            f"quant_method {method!r} is not served by humming_q; it serves {', '.join(SUPPORTED_METHODS)}"
        )

    def _skipped(self, name: str) -> bool:
        if self.skip_mode == "exact":
            return any(matches(name, t) for t in self.skip if t != "Linear")
        if self.skip_mode == "glob":
            return any(fnmatch(name, t) or fnmatch(name, f"{t}.*") for t in self.skip)
        return any(key in name for key in self.skip)

    def _scheme_of(self, name: str) -> Scheme | None:
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

    def _one_scheme(self, prefix: str, names: list[str]) -> Scheme | None:
        schemes = [self._scheme_of(n) for n in names]
        if any(s is not schemes[0] for s in schemes):
            raise UnsupportedConfig(
                f"layer {prefix!r} fuses {names} but they are quantized differently (or some are "
                "ignored); vLLM runs a fused layer with one method: quantize all its parts alike"
            )
        return schemes[0]

    def scheme_for(self, prefix: str, shards: list[str] | None = None) -> Scheme | None:
        """The scheme of the vLLM layer `prefix`; `shards` are the checkpoint names it fuses."""
        base = prefix.rpartition(".")[0]
        names = [f"{base}.{s}" if base else s for s in shards] if shards else [prefix]
        return self._one_scheme(prefix, names)

    def expert_scheme_for(self, prefix: str) -> Scheme | None:
        """The per-expert scheme of the MoE layer `prefix` (e.g. "model.layers.0.mlp.experts"),
        read from its first expert's checkpoint names; every expert must share it."""
        names = [f"{prefix}.0.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
        return self._one_scheme(prefix, names)

    def moe_scheme_for(self, prefix: str) -> ExpertScheme | GptOssScheme | None:
        """The MoE scheme of the vLLM experts layer `prefix` (None: unquantized experts)."""
        if self.gpt_oss_moe:
            return GptOssScheme()
        scheme = self.expert_scheme_for(prefix)
        return None if scheme is None else ExpertScheme(scheme)

    def claim_reasons(self) -> set[str]:
        """Why vLLM's own kernels cannot serve this checkpoint (empty: they can)."""
        return set().union(*(s.claim_reasons() for _, s in self.groups))


def should_claim(cfg: dict[str, Any], wanted: tuple[str, ...]) -> bool:
    """True when the plugin can serve `cfg` and it needs one of the `wanted` claim reasons."""
    try:
        plan = QuantPlan.from_hf(cfg)
    except UnsupportedConfig:
        return False
    return bool(plan.claim_reasons() & set(wanted))
