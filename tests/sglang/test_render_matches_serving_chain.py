"""``harmony-ext render --ids`` prints the prompt ids SGLang's serving chain sends (contract 8).

The last rule of contract section 8: ``harmony-ext render`` prints exactly what the engine sends
the model for the request. Each chat request of :data:`tests.render_requests.RENDER_REQUESTS`
(plain, tools, a tool turn in progress, after a final answer, a named ``tool_choice``, a
control-token spelling in user text) goes through SGLang's real ``OpenAIServingChat`` with
harmony-ext selected as both parsers (only the model scripted, the raw HTTP body passed along
as SGLang's HTTP server does, so that a message's ``reasoning`` key survives SGLang's message
model); the prompt ids it hands the model (``answer.prompts[0]``) must equal,
token for token, what the checkout's ``.venv`` command ``harmony-ext render --ids`` prints for
the same request (run as a subprocess, with the UTC date the chain rendered on).
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.render_requests import RENDER_REQUESTS

ROOT = Path(__file__).resolve().parents[2]
HARMONY_EXT = ROOT / ".venv" / "bin" / "harmony-ext"
NAME = "harmony-ext"
ANSWER = ["<|channel|>final<|message|>Done."]  # any turn will do: its prompt is checked

Render = Callable[[Mapping[str, Any], str], list[int]]


def today() -> str:
    """The date the core writes into the system message (UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")


@pytest.fixture(autouse=True)
def harmony_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """harmony-ext's rendering, not the opt-out to SGLang's chat template."""
    monkeypatch.delenv("HARMONY_EXT_CHAT_TEMPLATE", raising=False)


@pytest.fixture(scope="module")
def render(tmp_path_factory: pytest.TempPathFactory) -> Render:
    """``harmony-ext render --ids --date DATE FILE``, run from the checkout's ``.venv``."""
    if not HARMONY_EXT.exists():
        pytest.fail(f"{HARMONY_EXT} is missing: run scripts/setup_env.sh (the comparison needs "
                    "the command; a skip would pass the tier without it)")
    folder = tmp_path_factory.mktemp("render")

    def run(request: Mapping[str, Any], date: str) -> list[int]:
        path = folder / "request.json"
        path.write_text(json.dumps(request))
        done = subprocess.run([str(HARMONY_EXT), "render", "--ids", "--date", date, str(path)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        ids = json.loads(done.stdout)
        assert isinstance(ids, list) and all(type(i) is int for i in ids), done.stdout[:200]
        return ids

    return run


@pytest.fixture(scope="module")
def encoding() -> Any:
    """o200k_harmony, to show prompts as text in failure messages."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding()


def chain_prompt_ids(sglang_chat: Any, request: Mapping[str, Any]) -> tuple[list[int], str]:
    """The prompt ids SGLang's serving chain sends the model for ``request``, and the UTC date
    it rendered them on (sent again if the date changed meanwhile)."""
    for _ in range(2):
        date = today()
        answer = sglang_chat(ANSWER, stream=False, tool_parser=NAME, reasoning_parser=NAME,
                             send_raw=True, **request)
        if today() == date:
            break
    assert answer.requests, answer.body  # SGLang answered without asking the model
    return answer.prompts[0], date


@pytest.mark.parametrize("name", list(RENDER_REQUESTS))
def test_render_equals_the_serving_chains_prompt(sglang_chat: Any, render: Render,
                                                 encoding: Any, name: str) -> None:
    """Contract 8: ``harmony-ext render --ids`` prints the prompt ids SGLang's chain sends."""
    request = RENDER_REQUESTS[name]
    got, date = chain_prompt_ids(sglang_chat, request)
    want = render(request, date)
    assert encoding.decode(got) == encoding.decode(want)  # readable diff first
    assert got == want  # token by token: a control-token spelling in text stays text


def test_a_named_tool_choice_lists_every_declared_tool(sglang_chat: Any, encoding: Any) -> None:
    """Contract v4, section 8: the tools section lists every declared function whatever
    ``tool_choice`` names, although SGLang hands its chat template only the named one."""
    request = RENDER_REQUESTS["named_tool_choice"]
    text = encoding.decode(chain_prompt_ids(sglang_chat, request)[0])
    for tool in request["tools"]:
        assert f"type {tool['function']['name']} = " in text


def test_the_comparison_can_fail(sglang_chat: Any, render: Render, encoding: Any) -> None:
    """Without the raw HTTP body (a caller of the serving class), SGLang's message model drops
    the turn's ``reasoning`` key: the chain's prompt then lacks the chain of thought that
    ``harmony-ext render`` carries through a tool turn in progress, and differs from it."""
    request = RENDER_REQUESTS["tool_turn_in_progress"]
    date = today()
    answer = sglang_chat(ANSWER, stream=False, tool_parser=NAME, reasoning_parser=NAME,
                         **request)
    got = answer.prompts[0]
    want = render(request, date)
    assert got != want
    analysis = request["messages"][1]["reasoning"]
    assert analysis in encoding.decode(want) and analysis not in encoding.decode(got)
