"""Two switches of the README on a real vLLM server: ``VLLM_PLUGINS`` and
``HARMONY_EXT_PASS_UNDECLARED``.

- ``VLLM_PLUGINS`` is vLLM's filter of its ``vllm.general_plugins`` entry points, by the entry
  point's name: harmony-ext's is ``harmony-ext``. A server started with
  ``VLLM_PLUGINS=harmony-ext`` loads it and serves with its parsers; one started with another
  name in it (the control) never registers ``harmony-ext``, so vLLM refuses
  ``--tool-call-parser harmony-ext`` at start-up.
- ``HARMONY_EXT_PASS_UNDECLARED=1`` (read per request from the server's environment) surfaces a
  call to a ``functions.*`` name the request did not declare; the session's shared server, which
  does not set it (the control), drops the same call.

The switched server sets both (one start for the two); its log goes to a temporary folder.
Expected values are written by hand from the contract (sections 2 and 3).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases")
openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import CASES_BY_ID, Case, run_chat  # noqa: E402
from harmony_ext_testing.vllm_round_trips import client_for  # noqa: E402
from harmony_ext_testing.vllm_server import (  # noqa: E402
    ROOT,
    SERVER_SCRIPT,
    VENV,
    free_port,
    tiny_vllm_server,
)

SWITCHED = {"VLLM_PLUGINS": "harmony-ext", "HARMONY_EXT_PASS_UNDECLARED": "1"}
UNDECLARED = Case(
    "undeclared", "a call to a function the request did not declare",
    "<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant<|channel|>commentary "
    'to=functions.lookup <|constrain|>json<|message|>{"q":1}<|call|>', tools=("get_weather",))


@pytest.fixture(scope="module")
def switched_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A harmony-ext server started with ``VLLM_PLUGINS=harmony-ext`` and
    ``HARMONY_EXT_PASS_UNDECLARED=1``; its base URL."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is missing: run scripts/setup_vllm_env.sh")
    log = tmp_path_factory.mktemp("vllm-switched") / "server.log"
    with tiny_vllm_server(log, env=SWITCHED) as base_url:
        yield base_url


def test_vllm_plugins_naming_harmony_ext_loads_it(switched_server: str) -> None:
    """The server started with ``--tool-call-parser harmony-ext`` (vLLM resolved the name) and
    parses as harmony-ext does: a stray ``]`` after the arguments is cut (vLLM's own parser
    leaves it in them)."""
    case = CASES_BY_ID["trailing_junk"]
    client = client_for(switched_server)
    for stream in (False, True):
        assert run_chat(client, case, stream=stream).outcome == case.expected()


def test_vllm_plugins_naming_another_plugin_leaves_harmony_ext_unknown(tmp_path: Path) -> None:
    """vLLM loads only the general plugins ``VLLM_PLUGINS`` names: harmony-ext's parsers are
    then never registered, and the server refuses the parser name before it starts."""
    log = tmp_path / "server.log"
    env = {**os.environ, "VLLM_PLUGINS": "some-other-plugin"}
    with open(log, "wb") as out:
        began = time.monotonic()
        proc = subprocess.run(["bash", str(SERVER_SCRIPT), str(free_port())], cwd=ROOT, env=env,
                              stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                              timeout=300)
    text = log.read_text(errors="replace")
    assert proc.returncode != 0, text[-3000:]
    assert REFUSAL in text, text[-3000:]
    assert time.monotonic() - began < 300


REFUSAL = "invalid tool call parser: harmony-ext"
"""What vLLM says when ``--tool-call-parser`` names a parser nobody registered."""


def test_pass_undeclared_surfaces_a_call_to_an_undeclared_function(switched_server: str,
                                                                   openai_client: Any) -> None:
    surfaced = {"reasoning": "Look it up.", "content": None,
                "tool_calls": [["lookup", '{"q":1}']], "finish_reason": "tool_calls"}
    dropped = {"reasoning": "Look it up.", "content": None, "tool_calls": [],
               "finish_reason": "stop"}
    for stream in (False, True):
        assert run_chat(client_for(switched_server), UNDECLARED,
                        stream=stream).outcome == surfaced
        assert run_chat(openai_client, UNDECLARED, stream=stream).outcome == dropped
