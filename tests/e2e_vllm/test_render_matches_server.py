"""``harmony-ext render`` prints what a real vLLM server sends the model (contract section 8).

The last rule of section 8: ``harmony-ext render`` prints exactly what the engine sends the model
for the request. Each chat request of :data:`tests.render_requests.RENDER_REQUESTS` (plain, tools,
a tool turn in progress, after a final answer, a named ``tool_choice``, a control-token spelling
in user text) goes to the shared harmony-ext server with ``return_token_ids``; the prompt ids it
reports must equal, token for token, what ``harmony-ext render --ids`` prints for the same request
(the checkout's ``.venv`` command, run as a subprocess, the date set to the server's: vLLM writes
its local date, and the container runs in UTC).

The comparison can fail: a server with vLLM's built-in gpt-oss parsers (harmony-ext's prompt hook
inactive) renders the tool turn in progress differently, its preamble before the chain of thought.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import MODEL  # noqa: E402
from tests.render_requests import RENDER_REQUESTS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HARMONY_EXT = ROOT / ".venv" / "bin" / "harmony-ext"
ANSWER = "<|channel|>final<|message|>Done.<|return|>"  # any turn will do: its prompt is checked
# A named tool_choice keeps vLLM's grammar on: the scripted turn must be that call.
NAMED_CALL = ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
              '{"city":"Paris"}<|call|>')

Render = Callable[[Mapping[str, Any], str], list[int]]


def today() -> str:
    """The date vLLM writes into the system message (its local time; the container is UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")


def script_for(request: Mapping[str, Any]) -> str:
    return NAMED_CALL if isinstance(request.get("tool_choice"), dict) else ANSWER


def server_prompt_ids(base_url: str, request: Mapping[str, Any]) -> tuple[list[int], str]:
    """The prompt ids the server renders for ``request``, and the date it rendered them on.

    Sent again if the date changed during the request (a run across midnight).
    """
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)
    for _ in range(2):
        date = today()
        response = client.chat.completions.create(
            model=MODEL, **request,
            extra_body={"vllm_xargs": {"script_text": script_for(request)},
                        "return_token_ids": True})
        if today() == date:
            break
    ids = (response.model_extra or {}).get("prompt_token_ids")
    assert ids, "the server returned no prompt_token_ids"
    return list(ids), date


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
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        ids = json.loads(done.stdout)
        assert isinstance(ids, list) and all(type(i) is int for i in ids), done.stdout[:200]
        return ids

    return run


@pytest.fixture(scope="module")
def encoding() -> Any:
    """o200k_harmony, to show prompts as text in failure messages and find messages in them."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding()


@pytest.mark.parametrize("name", list(RENDER_REQUESTS))
def test_render_equals_the_servers_prompt(vllm_server: str, render: Render, encoding: Any,
                                          name: str) -> None:
    """Contract 8: ``harmony-ext render --ids`` prints the prompt ids the vLLM server sends."""
    request = RENDER_REQUESTS[name]
    got, date = server_prompt_ids(vllm_server, request)
    want = render(request, date)
    assert encoding.decode(got) == encoding.decode(want)  # readable diff first
    assert got == want  # token by token: a control-token spelling in text stays text


def test_builtin_vllm_renders_the_tool_turn_otherwise(builtin_server: str, render: Render,
                                                      encoding: Any) -> None:
    """The comparison above can fail: vLLM alone puts the preamble before the chain of thought
    (contract 8 wants analysis, then preamble, then the call, as the model wrote them)."""
    request = RENDER_REQUESTS["tool_turn_in_progress"]
    got, date = server_prompt_ids(builtin_server, request)
    want = render(request, date)
    assert got != want
    ours, theirs = encoding.decode(want), encoding.decode(got)
    analysis, preamble = "Need the weather.", "Checking now."
    assert ours.index(analysis) < ours.index(preamble)
    assert theirs.index(preamble) < theirs.index(analysis)
    assert sorted(got) == sorted(want)  # the same tokens, only the order differs
