"""docs/vllm-comparison.md: harmony-ext against vLLM's built-in gpt-oss parsing.

    bash pages/run.sh vllm-comparison        # .venv-vllm; writes docs/vllm-comparison.md

Starts two tiny CPU vLLM servers (``scripts/vllm_tiny_server.sh``, as the tests do): one with
``--tool-call-parser harmony-ext --reasoning-parser harmony-ext``, one with vLLM's ``openai`` /
``openai_gptoss``; puts every case of ``harmony_ext_testing/vllm_cases.py`` through both, chat
streamed and not, and the Responses API for the cases marked so, and runs the Agents SDK's agent
of ``harmony_ext_testing/agent_run.py`` against both (each SDK model, the tool strict or not,
the answer's header in each spelling); records what each returns and writes the page. Nothing is
judged here: ``tests/e2e_vllm/test_harmony_ext_server.py`` holds harmony-ext to the contract,
``tests/e2e_vllm/test_vllm_builtin.py`` pins the built-in's results case by case, and nothing on
the page depends on the run (no date, no timing), so ``tests/e2e_vllm/test_comparison_page.py``
regenerates it over the tests' own servers and compares it with the committed page. The
servers' logs go to a temporary folder (shown on a failed start); nothing but the page
(``--out``) is written. About two server starts (a minute or two on 2 cores) and a minute or
two of requests.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from harmony_ext_testing import agent_run
from harmony_ext_testing.vllm_cases import (
    CASES,
    CASES_BY_ID,
    RESPONSES_CASES,
    finish_reason_bug,
    render_modes,
    responses_as_chat,
    run_chat,
    run_responses,
    server_version,
    verdict,
)
from harmony_ext_testing.vllm_round_trips import client_for
from harmony_ext_testing.vllm_server import BUILTIN_ENV, STORE_ENV, tiny_vllm_server

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "bash pages/run.sh vllm-comparison"
ROW_KEYS = [f"chat:{c.id}" for c in CASES] + [f"responses:{c.id}" for c in RESPONSES_CASES]
AGENT_KEYS = [f"agent:{api}:{strict}:{answer}" for api in ("chat", "responses")
              for strict in ("strict", "not strict") for answer in agent_run.ANSWER_HEADERS]
"""The agent's runs: the SDK's model, the tool's strictness, the answer header's spelling."""


def record(ext_url: str, builtin_url: str) -> dict[str, dict[str, Any]]:
    """row key -> server ("ext" / "builtin") -> mode ("nonstream" / "stream") -> outcome;
    for the agent's runs (``agent:chat``, ``agent:responses``), server -> a line."""
    results: dict[str, dict[str, Any]] = {}
    for server, url in (("ext", ext_url), ("builtin", builtin_url)):
        client = client_for(url)
        for case in CASES:
            results.setdefault(f"chat:{case.id}", {})[server] = {
                "nonstream": run_chat(client, case, stream=False).outcome,
                "stream": run_chat(client, case, stream=True).outcome}
        for case in RESPONSES_CASES:
            results.setdefault(f"responses:{case.id}", {})[server] = {
                "nonstream": responses_as_chat(run_responses(client, case, stream=False).outcome),
                "stream": responses_as_chat(run_responses(client, case, stream=True).outcome)}
        for key in AGENT_KEYS:  # the agent's runs, each recorded as one line
            api, strict, answer = key.split(":", 3)[1:]
            results.setdefault(key, {})[server] = agent_run.outcome(
                url, api, strict=strict == "strict", answer=answer)
        print(f"{server}: {len(CASES)} chat and {len(RESPONSES_CASES)} Responses cases and the "
              "agent recorded", file=sys.stderr)
    return results


def comparison_doc(version: str, results: dict[str, dict[str, Any]]) -> str:
    """The markdown page, from what :func:`record` returned."""
    lines = [
        "# harmony-ext vs vLLM's built-in gpt-oss parsing",
        "",
        f"Generated against vLLM {version} (CPU build, tiny random gpt-oss model",
        "with scripted output). Do not edit by hand; regenerate with",
        "",
        "```bash",
        COMMAND,
        "```",
        "",
        "(`pages/vllm_comparison.py`, which starts both servers and records what each",
        "returns, judging nothing.) Each case is one model output forced through the real",
        "OpenAI server, once with `--tool-call-parser harmony-ext --reasoning-parser",
        "harmony-ext` and once with vLLM's `--tool-call-parser openai --reasoning-parser",
        "openai_gptoss`, each streamed and not; a cell shows both when they disagree. The",
        "verdict says how the built-in result differs from harmony-ext's (which the tests,",
        "`tests/e2e_vllm/test_harmony_ext_server.py`, hold to `docs/contract.md`). Case",
        "definitions: `harmony_ext_testing/vllm_cases.py`. The built-in column is pinned case",
        "by case, on every vLLM tier, by `tests/e2e_vllm/test_vllm_builtin.py`, and",
        "`tests/e2e_vllm/test_comparison_page.py` regenerates this page and compares it with",
        "this file.",
        "",
        "| case | harmony-ext result | vLLM built-in result | verdict |",
        "|---|---|---|---|",
    ]
    for key in ROW_KEYS:
        api, case_id = key.split(":", 1)
        case = CASES_BY_ID[case_id]
        ours, theirs = results[key]["ext"], results[key]["builtin"]
        label = f"{'Responses' if api == 'responses' else 'chat'}: `{case.id}` {case.title}"
        lines.append(f"| {label.replace('|', chr(92) + '|')} | {render_modes(ours)} | "
                     f"{render_modes(theirs)} | {verdict(ours, theirs)} |")
    notes = [c for c in CASES if c.nonstream_finish_by_vllm and finish_reason_bug(version)]
    if notes:
        lines += ["", "Not the parsers' doing: " + "; ".join(
            f"in `{c.id}` the non-streamed finish_reason `{c.nonstream_finish_by_vllm}` "
            f"(the contract says `{c.finish_reason}`) is set by vLLM's chat serving, which "
            "reports `tool_calls` whenever the parser returns a call" for c in notes) + "."]
    lines += ["", "## An agent with a typed answer and a tool", "",
              "The OpenAI Agents SDK's `Agent(output_type=Weather, tools=[get_weather])`, run",
              "with `Runner.run_sync` against each server, the model scripted per turn",
              "(`harmony_ext_testing/agent_run.py`): it reasons and calls the tool, the SDK",
              "sends the result back, the model answers in the schema. The SDK sends the tool",
              "and the output schema together on every call; its tools are `strict` unless",
              "made otherwise (`function_tool(strict_mode=False)`). The model writes the",
              "answer's header in each of the three spellings gpt-oss uses.", "",
              "| SDK model | tool | answer header | harmony-ext | vLLM built-in |",
              "|---|---|---|---|---|"]
    labels = {"chat": "Chat Completions", "responses": "Responses"}
    for key in AGENT_KEYS:
        api, strict, answer = key.split(":", 3)[1:]
        row = results[key]
        header = agent_run.ANSWER_HEADERS[answer].replace("|", "\\|")
        lines.append(f"| {labels[api]} | {strict} | `{header}` | {_cell(row['ext'])} | "
                     f"{_cell(row['builtin'])} |")
    lines += ["", "## Model outputs", ""]
    for case in CASES:
        options = {**case.request, **case.extra_body}
        if case.tools:
            options["tools"] = list(case.tools)
        extra = f" (request: `{json.dumps(options)}`)" if options else ""
        lines.append(f"- `{case.id}`{extra}: `{case.script}`")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "vllm-comparison.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vllm-comparison-") as folder:
        logs = Path(folder)
        with tiny_vllm_server(logs / "harmony-ext.log", env=STORE_ENV) as ext, \
                tiny_vllm_server(logs / "builtin.log", env=BUILTIN_ENV) as builtin:
            version = server_version(ext)
            results = record(ext, builtin)
    text = comparison_doc(version, results)
    assert text.count("\n| ") == len(ROW_KEYS) + len(AGENT_KEYS) + 2, "a row per case and run"
    args.out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
