#!/usr/bin/env python3
"""Build a tiny random-weight gpt-oss (or Llama) model directory for CPU vLLM tests.

Usage: make_tiny_model.py DIR [--arch gpt_oss|llama] [--force]

Why: real engines must be exercised end to end (parser selection, streaming, the
Responses API) without a GPU, the 13 GB checkpoint or network access. A model with
the real o200k_harmony tokenizer and the real architecture, but 2 layers of width
64, loads in seconds; its random output is replaced by scripted tokens
(harmony_ext_testing.vllm_scripted). ``--arch llama`` gives the same tokenizer on a model type that
is not ``gpt_oss``, to test what vLLM does when the Harmony path is not chosen.

Sizes follow the CPU constraints found in practice: head_dim 32 (16 crashes the CPU
attention kernel on the first request), no quantization config (MXFP4 needs a GPU).
Runs offline in seconds with torch + transformers + tokenizers (use .venv-vllm).
A finished directory carries a stamp file; a rerun with the same spec does nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

# Run from a checkout without installing the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer
from harmony_plugins.harmony import SPECIAL_IDS, VOCAB_SIZE

STAMP = ".tiny-model.json"
BOS_ID, ENDOFTEXT_ID, RETURN_ID, CALL_ID = (SPECIAL_IDS[s] for s in (
    "<|startoftext|>", "<|endoftext|>", "<|return|>", "<|call|>"))
# gpt-oss's generation_config: the engines stop at <|return|>, <|endoftext|>, <|call|>.
EOS_IDS = [RETURN_ID, ENDOFTEXT_ID, CALL_ID]

COMMON: dict[str, Any] = {
    "vocab_size": VOCAB_SIZE,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "bos_token_id": BOS_ID,
    "eos_token_id": RETURN_ID,
    "pad_token_id": ENDOFTEXT_ID,
    "tie_word_embeddings": False,
}
SPECS: dict[str, dict[str, Any]] = {
    "gpt_oss": {
        **COMMON,
        "intermediate_size": 64,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention"],
        "max_position_embeddings": 131_072,
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 150_000.0,
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
        },
    },
    "llama": {
        **COMMON,
        "intermediate_size": 128,
        "max_position_embeddings": 8192,
    },
}
# The llama variant has no openai_harmony renderer in vLLM, so chat needs a template;
# this one renders Harmony-shaped prompts ending in "<|start|>assistant".
LLAMA_CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "<|start|>{{ m['role'] }}<|message|>{{ m['content'] if m['content'] is string else '' }}"
    "<|end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)
REQUIRED = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)


def _spec_record(arch: str) -> dict[str, Any]:
    return {"arch": arch, "config": SPECS[arch], "eos": EOS_IDS, "version": 1}


def is_complete(directory: Path, arch: str) -> bool:
    """True when *directory* already holds this exact tiny model (stamp written last)."""
    stamp = directory / STAMP
    if not stamp.is_file() or not all((directory / name).is_file() for name in REQUIRED):
        return False
    try:
        return json.loads(stamp.read_text()) == _spec_record(arch)
    except ValueError:
        return False


def build(directory: Path, arch: str) -> None:
    """Write config, random bf16 weights, tokenizer and generation config."""
    import torch
    import transformers

    directory.mkdir(parents=True, exist_ok=True)
    (directory / STAMP).unlink(missing_ok=True)
    torch.manual_seed(0)
    if arch == "gpt_oss":
        config = transformers.GptOssConfig(**SPECS[arch])
        model_cls: Any = transformers.GptOssForCausalLM
    else:
        config = transformers.LlamaConfig(**SPECS[arch])
        model_cls = transformers.LlamaForCausalLM
    config.dtype = "bfloat16"
    model = model_cls(config).to(torch.bfloat16)
    model.save_pretrained(directory)
    # save_pretrained writes its own generation_config.json; gpt-oss's lists all three
    # stop tokens, which vLLM turns into stop_token_ids.
    generation = {
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_IDS,
        "pad_token_id": ENDOFTEXT_ID,
    }
    (directory / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    write_hf_tokenizer(directory)
    if arch == "llama":
        (directory / "chat_template.jinja").write_text(LLAMA_CHAT_TEMPLATE)
    (directory / STAMP).write_text(json.dumps(_spec_record(arch), indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--arch", choices=sorted(SPECS), default="gpt_oss")
    parser.add_argument("--force", action="store_true", help="rebuild even if complete")
    args = parser.parse_args(argv)
    if not args.force and is_complete(args.directory, args.arch):
        print(f"make_tiny_model: {args.directory} is complete ({args.arch})")
        return 0
    start = time.monotonic()
    build(args.directory, args.arch)
    took = time.monotonic() - start
    print(f"make_tiny_model: built {args.arch} in {args.directory} in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
