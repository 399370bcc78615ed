"""SGLang tests: run with ``.venv-sglang/bin/pytest tests/sglang`` (scripts/setup_sglang_env.sh).

Without an importable ``sglang`` the run fails at collection: the main venv deliberately has
no SGLang and its tier does not collect this folder, and a tier that does must test SGLang
(an import failure turned into a skip would let it pass without). The fixtures drive SGLang's
real ``OpenAIServingChat`` with only the model replaced by a stand-in that replays scripted
output text, which is how SGLang's own parsers are reached without a GPU (docs/sglang.md,
internals section 7).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import sglang  # noqa: F401  (a missing or broken SGLang is an error, never a skip)

from tests.data import fold_chunks

# A Harmony-shaped prompt ending in "<|start|>assistant", like gpt-oss's template, written here
# (the real template is not available offline; only the prompt's last tokens matter to parsing).
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


@dataclass
class ScriptedTokenizerManager:
    """Stands in for SGLang's TokenizerManager; ``generate_request`` replays ``deltas``.

    Each delta is what the detokenizer would add in one streaming step. Streaming yields the
    cumulative text per step (SGLang's default, ``incremental_streaming_output=False``);
    non-streaming yields one final item, as the real manager does.
    """

    server_args: Any
    tokenizer: Any
    deltas: Sequence[str] = ()
    finish: dict[str, Any] | None = None
    requests: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.model_path = self.server_args.model_path
        self.served_model_name = "gpt-oss"
        self.processor = None
        self.model_config = SimpleNamespace(
            hf_config=SimpleNamespace(model_type="gpt_oss", architectures=["GptOssForCausalLM"]),
            is_multimodal=False,
            get_default_sampling_params=lambda: {},
        )
        self.request_logger = SimpleNamespace(log_requests=False, log_requests_level=0)

    def config_value(self, name: str) -> Any:
        return getattr(self.server_args, name)

    def create_abort_task(self, obj: Any) -> None:
        return None

    def _item(self, text: str, steps: int, finished: bool) -> dict[str, Any]:
        finish = (self.finish or {"type": "stop", "matched": None}) if finished else None
        meta = {
            "id": "chatcmpl-test",
            "finish_reason": finish,
            "prompt_tokens": 10,
            "completion_tokens": steps,
            "cached_tokens": 0,
            "weight_version": "default",
        }
        return {"text": text, "output_ids": [], "index": 0, "meta_info": meta}

    async def generate_request(self, obj: Any, raw_request: Any = None) -> AsyncIterator[dict]:
        self.requests.append(obj)
        deltas = list(self.deltas) or [""]
        if not getattr(obj, "stream", False):
            yield self._item("".join(deltas), len(deltas), True)
            return
        text = ""
        for i, delta in enumerate(deltas):
            text += delta
            yield self._item(text, i + 1, i == len(deltas) - 1)


@dataclass
class ChatResult:
    """What a client would see: the non-streamed message or the parsed SSE chunks."""

    body: dict[str, Any]
    chunks: list[dict[str, Any]]
    manager: ScriptedTokenizerManager

    def joined(self) -> dict[str, Any]:
        """Stream deltas folded the way a client does (tool-call arguments concatenated),
        each call as ``{name, arguments}``."""
        got = fold_chunks(self.chunks)
        return {
            "reasoning": got["reasoning"] or "",
            "content": got["content"] or "",
            "tool_calls": [dict(c["function"]) for c in got["tool_calls"]],
            "finish_reason": got["finish_reason"],
        }


RunChat = Callable[..., ChatResult]


def raw_request(body: dict[str, Any]) -> Any:
    """A Starlette request holding ``body`` as JSON, as the HTTP server passes it along."""
    from starlette.requests import Request

    data = json.dumps(body).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": data, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": [],
             "query_string": b""}
    return Request(scope, receive)


@pytest.fixture(scope="session")
def sglang_chat(gpt_oss_model_dir: Path) -> RunChat:
    """SGLang's real chat serving with the model scripted: :func:`chat_runner`."""
    return chat_runner(gpt_oss_model_dir)


def chat_runner(gpt_oss_model_dir: Path) -> RunChat:
    """Returns ``run(deltas, *, stream, tools=None, messages=None, tool_parser, reasoning_parser,
    chat_template, send_raw)`` (``send_raw``: the raw HTTP request too, as the server has it).

    Builds real ServerArgs/TemplateManager/OpenAIServingChat (about 10 s, once per parser pair);
    only the model is scripted.
    """
    import asyncio

    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.parser.template_manager import TemplateManager
    from sglang.srt.runtime_context import publish
    from sglang.srt.server_args import ServerArgs
    from transformers import AutoTokenizer

    tokenizers: dict[str, Any] = {}
    cache: dict[tuple[str | None, str | None, str], tuple[Any, Any]] = {}

    def tokenizer_for(template: str) -> Any:
        if template not in tokenizers:
            tokenizer = AutoTokenizer.from_pretrained(str(gpt_oss_model_dir))
            tokenizer.chat_template = template
            tokenizers[template] = tokenizer
        return tokenizers[template]

    def setup(
        tool_parser: str | None, reasoning_parser: str | None, template: str
    ) -> tuple[Any, Any]:
        tokenizer = tokenizer_for(template)
        key = (tool_parser, reasoning_parser, template)
        if key not in cache:
            args = ServerArgs(
                model_path=str(gpt_oss_model_dir),
                tool_call_parser=tool_parser,
                reasoning_parser=reasoning_parser,
                device="cpu",
            )
            templates = TemplateManager()
            templates.initialize_templates(
                tokenizer_manager=ScriptedTokenizerManager(args, tokenizer),
                model_path=args.model_path,
            )
            cache[key] = (args, templates)
        args, templates = cache[key]
        # The serving code reads process-wide config; republish for the pair in use.
        publish(args, role="tokenizer")
        return args, templates

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
        args, templates = setup(tool_parser, reasoning_parser, chat_template)
        manager = ScriptedTokenizerManager(
            args, tokenizer_for(chat_template), deltas=deltas, finish=finish
        )
        chat = OpenAIServingChat(manager, templates)
        body: dict[str, Any] = {
            "model": "gpt-oss",
            "messages": messages or [{"role": "user", "content": "What is the weather?"}],
            "stream": stream,
            **request,
        }
        if tools is not None:
            body["tools"] = tools

        async def go() -> ChatResult:
            raw = raw_request(body) if send_raw else None  # what FastAPI hands the server
            response = await chat.handle_request(ChatCompletionRequest(**body), raw)
            if not stream:
                if hasattr(response, "model_dump"):
                    return ChatResult(response.model_dump(), [], manager)
                return ChatResult(json.loads(response.body), [], manager)
            chunks = []
            async for line in response.body_iterator:
                for part in line.split("\n"):
                    if part.startswith("data: ") and part != "data: [DONE]":
                        chunks.append(json.loads(part[len("data: ") :]))
            return ChatResult({}, chunks, manager)

        return asyncio.run(go())

    return run
