"""SGLang tests: run with ``.venv-sglang/bin/pytest tests/sglang`` (scripts/setup_sglang_env.sh).

Without an importable ``sglang`` the run fails at collection: the main venv deliberately has
no SGLang and its tier does not collect this folder, and a tier that does must test SGLang
(an import failure turned into a skip would let it pass without). The fixtures drive SGLang's
real ``OpenAIServingChat`` and ``TokenizerManager`` with only the model replaced: scripted
output text arrives on the manager's socket as the detokenizer's would
(:mod:`tests.sglang.scripted_model`), which is how SGLang's own parsers are reached without a
GPU (docs/sglang.md, internals section 7).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import sglang  # noqa: F401  (a missing or broken SGLang is an error, never a skip)

from tests.sglang.scripted_model import ChatResult, shared_server

# A Harmony-shaped prompt ending in "<|start|>assistant", like gpt-oss's template, written here
# and given to SGLang as ``--chat-template`` (the real template ships with the model's weights,
# not on PyPI; only the prompt's last tokens matter to parsing).
HARMONY_TEST_TEMPLATE = (
    "{%- for m in messages -%}"
    "<|start|>{{ m['role'] }}<|message|>{{ m['content'] if m['content'] is string else '' }}"
    "<|end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)

# Just enough config for SGLang's ModelConfig to say "gpt_oss"; no weights are ever loaded.
TINY_GPT_OSS_CONFIG: dict[str, Any] = {
    "model_type": "gpt_oss",
    "architectures": ["GptOssForCausalLM"],
    "vocab_size": 201088,
    "hidden_size": 64,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "bos_token_id": 199998,
    "eos_token_id": 200002,
    "pad_token_id": 199999,
}


@pytest.fixture(scope="session")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real o200k_harmony Hugging Face tokenizer folder, generated offline once."""
    from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer

    return write_hf_tokenizer(tmp_path_factory.mktemp("o200k_hf"))


def write_model_dir(model: Path, hf_dir: Path) -> Path:
    """Make ``model`` a folder SGLang accepts: gpt_oss config.json plus the offline o200k
    tokenizer of ``hf_dir`` (pages/sglang_comparison.py builds one outside pytest too)."""
    for item in hf_dir.iterdir():
        os.symlink(item, model / item.name)
    (model / "config.json").write_text(json.dumps(TINY_GPT_OSS_CONFIG, indent=2) + "\n")
    return model


@pytest.fixture(scope="session")
def gpt_oss_model_dir(hf_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder SGLang accepts: gpt_oss config.json plus the offline o200k tokenizer."""
    return write_model_dir(tmp_path_factory.mktemp("sglang_gpt_oss"), hf_dir)


@pytest.fixture(scope="session", autouse=True)
def sglang_plugins_loaded() -> None:
    """SGLang's own plugin loader, as every SGLang process runs it (registers harmony-ext when
    the package is installed; its hooks act only when a harmony-ext parser is selected)."""
    from sglang.srt.plugins import load_plugins

    load_plugins()


@pytest.fixture(scope="session")
def harmony_server_args(gpt_oss_model_dir: Path) -> Any:
    """ServerArgs selecting both harmony-ext parsers (publish it where the server's choice
    matters)."""
    from sglang.srt.server_args import ServerArgs

    return ServerArgs(
        model_path=str(gpt_oss_model_dir),
        tool_call_parser="harmony-ext",
        reasoning_parser="harmony-ext",
        device="cpu",
    )


RunChat = Callable[..., ChatResult]


@pytest.fixture(scope="session")
def sglang_chat(gpt_oss_model_dir: Path) -> RunChat:
    """SGLang's real chat serving with the model scripted: :func:`chat_runner`."""
    return chat_runner(gpt_oss_model_dir)


def chat_runner(gpt_oss_model_dir: Path) -> RunChat:
    """Returns ``run(deltas, *, stream, tools=None, messages=None, tool_parser, reasoning_parser,
    chat_template, send_raw)`` (``send_raw``: the raw HTTP request too, as the server has it).

    SGLang's real ``OpenAIServingChat`` and ``TokenizerManager`` (one per chat template, about
    15 s, shared by the process: :func:`tests.sglang.scripted_model.shared_server`); only the
    model is scripted.
    """
    server = shared_server(gpt_oss_model_dir)

    def run(
        deltas: Sequence[str],
        *,
        stream: bool,
        tools: list[dict[str, Any]] | None = None,
        messages: list[dict[str, Any]] | None = None,
        finish: dict[str, Any] | None = None,
        tool_parser: str | None = "gpt-oss",
        reasoning_parser: str | None = "gpt-oss",
        chat_template: str = HARMONY_TEST_TEMPLATE,
        send_raw: bool = False,
        **request: Any,
    ) -> ChatResult:
        body: dict[str, Any] = {
            "model": "gpt-oss",
            "messages": messages or [{"role": "user", "content": "What is the weather?"}],
            **request,
        }
        if tools is not None:
            body["tools"] = tools
        return server.chat(deltas, stream=stream, template=chat_template,
                           tool_parser=tool_parser, reasoning_parser=reasoning_parser,
                           finish=finish, send_raw=send_raw, body=body)

    return run
