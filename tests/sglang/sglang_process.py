"""A process set up as SGLang's with ``--enable-metrics``, and what harmony-ext counted in it.

SGLang serves ``/metrics`` only with ``--enable-metrics``, and then always in prometheus_client's
multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set before any process imports
prometheus_client). A pytest process has long imported it, and its published server arguments
are the fixtures', so counts are read in a fresh interpreter (:func:`run_script`) that loads
SGLang's plugins, publishes server arguments with metrics on, drives SGLang's real classes, and
reads the counters back the way SGLang's ``/metrics`` does (``MultiProcessCollector``), as
``test_harmony_ext_metrics.py`` does. :class:`Counted` gives what one response added;
:func:`serve` is the serving chain, :func:`direct` SGLang's parser classes used directly. In a
process with no server arguments published (``run_script(..., metrics=False)``, a script or an
RL framework using the classes) SGLang has no ``/metrics``: there :func:`direct` returns what the
choice's turn reported to its observer (``Turn.summary``) instead.

The helpers below the first section run inside that interpreter; they import SGLang lazily, so
that this module imports anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NAME = "harmony-ext"

# -- the test's side -------------------------------------------------------------------------


def run_script(script: str, model_dir: Path, folder: Path, *, metrics: bool = True,
               timeout: float = 600) -> Any:
    """Run ``script`` (Python source) in a fresh interpreter with the checkout on the path and
    ``sys.argv[1]`` the model folder; with ``metrics`` in prometheus_client's multiprocess mode
    (its files in ``folder``), as SGLang with ``--enable-metrics``. The script prints one JSON
    value as its last line, which is returned."""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "sglang")])
    env.pop("HARMONY_EXT_PASS_UNDECLARED", None)
    env.pop("SGLANG_FORWARD_UNKNOWN_TOOLS", None)
    if metrics:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    done = subprocess.run([sys.executable, "-c", script, str(model_dir)], capture_output=True,
                          text=True, env=env, cwd=folder, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- inside the process ----------------------------------------------------------------------


def load_plugins() -> None:
    """SGLang's own plugin loader, as every SGLang process runs it."""
    from sglang.srt.plugins import load_plugins as sglang_load_plugins

    sglang_load_plugins()


def server_args(model_dir: str, tool_parser: str | None, reasoning_parser: str | None,
                enable_metrics: bool = True) -> Any:
    from sglang.srt.server_args import ServerArgs

    return ServerArgs(model_path=model_dir, tool_call_parser=tool_parser,
                      reasoning_parser=reasoning_parser, device="cpu",
                      enable_metrics=enable_metrics)


def publish_server(model_dir: str, tool_parser: str | None = NAME,
                   reasoning_parser: str | None = NAME) -> Any:
    """Publish server arguments with ``--enable-metrics`` (and the parsers given) in this
    process, as SGLang's tokenizer process has them; returns them."""
    from sglang.srt.runtime_context import publish

    args = server_args(model_dir, tool_parser, reasoning_parser)
    publish(args, role="tokenizer")
    return args


def scrape() -> dict[str, Any]:
    """harmony-ext's counters as SGLang's ``/metrics`` adds them up (every process's files)."""
    from prometheus_client import CollectorRegistry, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    out: dict[str, Any] = {"responses": 0.0, "leaks": 0.0, "recoveries": {}, "outcomes": {}}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == "harmony_ext_responses_total":
                out["responses"] += sample.value
            elif sample.name == "harmony_ext_leaks_suspected_total":
                out["leaks"] += sample.value
            elif sample.name == "harmony_ext_recoveries_total":
                rule = sample.labels["rule"]
                out["recoveries"][rule] = out["recoveries"].get(rule, 0) + sample.value
            elif sample.name == "harmony_ext_tool_calls_total":
                outcome = sample.labels["outcome"]
                out["outcomes"][outcome] = out["outcomes"].get(outcome, 0) + sample.value
    return out


class Counted:
    """What the responses parsed since it was built added to ``/metrics``:
    ``{"responses": n, "leaks": n, "recoveries": {rule: n}, "outcomes": {outcome: n}}``, labels
    that did not move left out, counts as ints."""

    def __init__(self) -> None:
        self.before = scrape()

    def added(self) -> dict[str, Any]:
        now, before = scrape(), self.before
        return {
            "responses": int(now["responses"] - before["responses"]),
            "leaks": int(now["leaks"] - before["leaks"]),
            **{kind: {k: int(v - before[kind].get(k, 0)) for k, v in now[kind].items()
                      if v != before[kind].get(k, 0)}
               for kind in ("recoveries", "outcomes")},
        }


def counted(action: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """``action()``'s result, and what it added to ``/metrics``."""
    counter = Counted()
    result = action()
    return result, counter.added()


def token_pieces(model_dir: str, text: str) -> list[str]:
    """``text`` as SGLang's incremental detokenizer hands it on, one token per piece (a
    character cut between tokens waits for its last byte)."""
    from harmony_ext_testing.sglang_cases import pieces_for

    return pieces_for(Path(model_dir))(text)



def serve(model_dir: str, deltas: Sequence[str], *, stream: bool,
          tools: list[dict[str, Any]] | None = None, finish: dict[str, Any] | None = None,
          tool_parser: str | None = NAME, reasoning_parser: str | None = NAME,
          **request: Any) -> dict[str, Any]:
    """One chat request through SGLang's real ``OpenAIServingChat`` and ``TokenizerManager``,
    only the model scripted (``deltas``: what the detokenizer hands on per step; ``finish``: the
    engine's finish reason), with server arguments published with ``--enable-metrics`` and the
    raw HTTP body passed along as SGLang's HTTP server does: the ``sglang_chat`` fixture's
    :class:`harmony_ext_testing.sglang_serving.ScriptedServer` (a fixture cannot be called
    outside pytest), here with ``--enable-metrics``.
    Returns what a client sees: ``{"reasoning", "content", "calls": [[name, arguments]],
    "finish_reason"}``, the stream folded as a client folds it."""
    from harmony_ext_testing.sglang_serving import HARMONY_TEST_TEMPLATE, shared_server

    body: dict[str, Any] = {"model": "gpt-oss",
                            "messages": [{"role": "user", "content": "What is the weather?"}],
                            **request}
    if tools is not None:
        body["tools"] = tools
    answer = shared_server(Path(model_dir), enable_metrics=True).chat(
        deltas, stream=stream, template=HARMONY_TEST_TEMPLATE, tool_parser=tool_parser,
        reasoning_parser=reasoning_parser, finish=finish, send_raw=True, body=body)
    if stream:
        got = answer.joined()
        return {"reasoning": got["reasoning"] or None, "content": got["content"] or None,
                "calls": [[c["name"], c["arguments"]] for c in got["tool_calls"]],
                "finish_reason": got["finish_reason"]}
    result = answer.body
    assert "choices" in result, result
    choice = result["choices"][0]
    message = choice["message"]
    return {"reasoning": message.get("reasoning_content") or None,
            "content": message.get("content") or None,
            "calls": [[c["function"]["name"], c["function"]["arguments"]]
                      for c in message.get("tool_calls") or []],
            "finish_reason": choice["finish_reason"]}


def chat_request(tools: list[dict[str, Any]] | None) -> Any:
    """The ``ChatCompletionRequest`` a server would bind to the reasoning parser."""
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest

    body: dict[str, Any] = {"model": "gpt-oss",
                            "messages": [{"role": "user", "content": "What is the weather?"}]}
    if tools is not None:
        body["tools"] = tools
    return ChatCompletionRequest(**body)


def direct(text: str | Sequence[str], tools: list[dict[str, Any]] | None, *,
           bind_request: bool, tool_parser_active: bool) -> dict[str, Any]:
    """SGLang's parser classes used directly, as serving_chat chains them: a
    ``ReasoningParser("harmony-ext")`` (given the request only with ``bind_request``; told a
    tool parser follows with ``tool_parser_active``), then, if one follows,
    ``FunctionCallParser(tools, "harmony-ext")``. ``text``: the whole output (non-streamed:
    ``parse_non_stream``, the tool parser asked ``has_tool_call`` first), or its deltas
    (streamed: ``parse_stream_chunk`` per delta, ``parse_stream_end`` after the last, which
    runs the detectors' ``finish``). Returns what the chain surfaced, and ``summary``: what the
    choice's turn reported to its observer (``None``: nothing yet)."""
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    stream = not isinstance(text, str)
    rp = ReasoningParser(NAME, stream_reasoning=stream,
                         request=chat_request(tools) if bind_request else None,
                         tool_call_parser_active=tool_parser_active)
    fp = (FunctionCallParser([Tool(**t) for t in tools or []], NAME) if tool_parser_active
          else None)
    out: dict[str, Any] = {}
    reasoning, content, calls = "", "", []
    if not stream:
        r, n = rp.parse_non_stream(text)
        reasoning, content = r or "", n or ""
        if fp is not None:
            out["has_tool_call"] = fp.has_tool_call(content)
            if out["has_tool_call"]:
                content, items = fp.parse_non_stream(content)
                calls = [[item.name, item.parameters] for item in items]
    else:
        deltas = list(text)
        for i, delta in enumerate(deltas):
            r, n = rp.parse_stream_chunk(delta)
            if i == len(deltas) - 1:
                end_r, end_n = rp.parse_stream_end()
                r, n = (r or "") + (end_r or ""), (n or "") + (end_n or "")
            reasoning += r or ""
            if fp is None:
                content += n or ""
                continue
            normal, items = fp.parse_stream_chunk(n or "")
            if i == len(deltas) - 1:
                end_normal, end_items = fp.parse_stream_end()
                normal, items = normal + end_normal, [*items, *end_items]
            content += normal
            for item in items:
                if item.name:
                    calls.append([item.name, item.parameters])
                else:
                    calls[item.tool_index][1] += item.parameters
    summary = rp.detector.link.turn.summary
    out.update(reasoning=reasoning or None, content=content or None, calls=calls,
               summary=None if summary is None else {"recoveries": dict(summary.recoveries),
                                                     "outcomes": dict(summary.outcomes)})
    return out


def server_arguments_published() -> bool:
    """Whether this process has server arguments published (a server's process has)."""
    from sglang.srt import runtime_context

    try:
        runtime_context.get_serving()
    except Exception:
        return False
    return True
