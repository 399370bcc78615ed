"""``harmony-ext render REQUEST.json``: the Harmony prompt a chat completions request becomes.

Run as a subprocess of this checkout's code (``python -m harmony_plugins.cli``), once as
installed here and once as a plain install would run it (openai-harmony and tiktoken made
unimportable), where the tools and ``--ids`` say in one line what to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data import variant

ROOT = Path(__file__).resolve().parents[2]
WEATHER = variant(unit={"type": "string", "enum": ["celsius", "fahrenheit"],
                         "default": "celsius"})
AGENT = {
    "model": "gpt-oss-20b",
    "reasoning_effort": "low",
    "tools": [WEATHER],
    "messages": [
        {"role": "system", "content": "Answer in one sentence."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "reasoning": "Call get_weather.", "content": "Let me check.",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {
             "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 18} <|end|>'},
    ],
}
PLAIN = {"messages": [{"role": "user", "content": "say <|call|> please"}]}


def cli(tmp_path: Path, request: object, *args: str, plain: bool = False
        ) -> subprocess.CompletedProcess:
    path = tmp_path / "request.json"
    path.write_text(request if isinstance(request, str) else json.dumps(request))
    env = dict(os.environ)
    python_path = [str(ROOT)]
    if plain:  # a plain install: neither openai-harmony nor tiktoken
        shim = tmp_path / "shim"
        shim.mkdir(exist_ok=True)
        for module in ("openai_harmony", "tiktoken"):
            (shim / f"{module}.py").write_text("raise ImportError('not installed')\n")
        python_path.insert(0, str(shim))
    env["PYTHONPATH"] = os.pathsep.join(python_path)
    return subprocess.run([sys.executable, "-m", "harmony_plugins.cli", "render", str(path),
                           "--date", "2026-12-01", *args], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)


def test_an_agent_turn_sent_back_with_its_tool_result(tmp_path: Path) -> None:
    pytest.importorskip("openai_harmony")
    proc = cli(tmp_path, AGENT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2026-12-01\n\nReasoning: low\n\n"
        "# Valid channels: analysis, commentary, final. Channel must be included for every "
        "message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nAnswer in one sentence.\n\n# Tools\n\n"
        "## functions\n\nnamespace functions {\n\n// Current weather in a city\n"
        "type get_weather = (_: {\ncity: string,\n"
        'unit?: "celsius" | "fahrenheit", // default: celsius\n}) => any;\n\n'
        "} // namespace functions<|end|>")
    assert out.endswith(
        "<|start|>user<|message|>What is the weather in Paris?<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Call get_weather.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
        '{"city": "Paris"}<|call|>'
        "<|start|>functions.get_weather<|channel|>commentary to=assistant<|message|>"
        '{"temp": 18} <\\|end\\|><|end|><|start|>assistant\n')


def test_ids(tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    proc = cli(tmp_path, PLAIN, "--ids")
    assert proc.returncode == 0, proc.stderr
    ids = json.loads(proc.stdout)
    assert ids[0] == 200006 and ids.count(200006) == 3  # system, user, the next turn
    # "say", " <", "|", "call", "|", ">", " please" as text (docs/sglang-prompt-side.md)
    assert ids[-13:] == [200006, 1428, 200008, 64494, 464, 91, 9925, 91, 29, 4843, 200007,
                         200006, 173781]


def test_a_plain_install_renders_text_and_names_what_is_missing(tmp_path: Path) -> None:
    text = cli(tmp_path, PLAIN, plain=True)
    assert text.returncode == 0, text.stderr
    assert text.stdout.endswith(
        "<|start|>user<|message|>say <\\|call\\|> please<|end|><|start|>assistant\n")
    tools = cli(tmp_path, AGENT, plain=True)
    assert (tools.returncode, tools.stdout) == (1, "")
    assert tools.stderr.strip().splitlines() == [
        "harmony-ext render: rendering tool definitions needs openai-harmony: pip install "
        "'harmony-ext[render]' (vLLM and SGLang install it themselves)"]
    ids = cli(tmp_path, PLAIN, "--ids", plain=True)
    assert (ids.returncode, ids.stdout) == (1, "")
    assert ids.stderr.strip().splitlines() == [
        "harmony-ext render: --ids needs an encoder: pip install 'harmony-ext[tiktoken]'"]


@pytest.mark.parametrize("request_, message", [
    ("{not json", "is not JSON"),
    ({"model": "x"}, "a 'messages' array"),
    ({"messages": [{"role": "user", "content": "x"},
                   {"role": "tool", "tool_call_id": "nope", "content": "1"}]}, "names no call"),
    ({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"},
     "reasoning_effort 'max'"),
])
def test_a_bad_request_is_a_usage_error(tmp_path: Path, request_: object, message: str) -> None:
    proc = cli(tmp_path, request_, plain=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: harmony-ext render")
    assert message in proc.stderr.splitlines()[-1]


def test_the_worked_example_in_docs_render_md_is_what_render_prints(tmp_path: Path) -> None:
    """docs/render.md's request, its two outputs (lines broken after <|end|> and <|call|>)."""
    pytest.importorskip("openai_harmony")
    doc = (ROOT / "docs" / "render.md").read_text()
    blocks = doc.split("```")[1::2]  # the fenced blocks' contents, in order
    request = json.loads(blocks[0].removeprefix("json\n"))
    first = cli(tmp_path, request)
    assert first.returncode == 0, first.stderr

    def broken(text: str) -> str:
        return text.replace("<|end|>", "<|end|>\n").replace("<|call|>", "<|call|>\n")

    assert blocks[1].strip("\n") == broken(first.stdout).strip("\n")
    request["messages"] += json.loads("[" + blocks[2].removeprefix("json\n") + "]")
    second = cli(tmp_path, request)
    assert second.returncode == 0, second.stderr
    tail = second.stdout[second.stdout.index("<|start|>user"):]
    assert blocks[3].strip("\n") == broken(tail).strip("\n")
    assert "analysis" not in tail
