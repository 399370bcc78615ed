"""An undeclared built-in call (``to=browser.search``) on SGLang: one count, the same one
whether the tools were known from the start, arrived late, or never come (contract 2, 3, 9).

The request declares only the weather function; the model calls ``browser.search`` on
``analysis``. Contract 2: a built-in recipient the request did not declare is no call and not
content; contract 3: dropped and counted. It is no function call, so it is counted once, as the
recovery ``undeclared_recipient``, and no outcome of ``harmony_ext_tool_calls_total`` moves
(``undeclared`` is the outcome of a call to a ``functions.*`` name the request did not declare;
``tools_unknown`` the rule of a possible function call whose tools never came). Three ways the
tools reach the parse, each non-streamed and streamed:

* known from the start: SGLang's real serving chain, which binds the request to the reasoning
  detector (only the model scripted);
* arriving late: SGLang's classes used directly, ``ReasoningParser`` built without the request
  and told a tool parser follows, then ``FunctionCallParser(tools, "harmony-ext")``;
* never: ``ReasoningParser`` alone, no tool parser after it.

Counts are read from prometheus_client as SGLang's ``/metrics`` serves them with
``--enable-metrics``, in a process set up that way (:mod:`tests.sglang.sglang_process`).
Without server arguments (a script or an RL framework driving the classes) SGLang has no
``/metrics``; there the turn's report to its observer (``Turn.summary``) is read instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sglang.sglang_process import run_script

SEARCH = '<|channel|>analysis to=browser.search<|message|>{"query": "x"}<|call|>'
ONE_COUNT = {"responses": 1, "leaks": 0, "recoveries": {"undeclared_recipient": 1},
             "outcomes": {}}
"""What one such response adds on ``/metrics``, written by hand from the contract."""
NOTHING_SURFACED = {"reasoning": None, "content": None, "calls": []}
"""Contract 2: no call, not content (and not chain of thought: it is a message to a tool)."""

SCRIPT = r"""
import json, sys
from tests.sglang import sglang_process as sp
from harmony_ext_testing.client import WEATHER
from tests.sglang.test_undeclared_builtin_count import SEARCH

sp.load_plugins()
model, tools = sys.argv[1], [WEATHER]
pieces = sp.token_pieces(model, SEARCH)
out = {}
for stream, deltas in ((False, [SEARCH]), (True, pieces)):
    mode = "streamed" if stream else "whole"
    out["known_from_the_start/" + mode] = sp.counted(
        lambda: sp.serve(model, deltas, stream=stream, tools=tools))
    text = pieces if stream else SEARCH
    sp.publish_server(model, "harmony-ext", "harmony-ext")
    out["arriving_late/" + mode] = sp.counted(
        lambda: sp.direct(text, tools, bind_request=False, tool_parser_active=True))
    sp.publish_server(model, None, "harmony-ext")
    out["never/" + mode] = sp.counted(
        lambda: sp.direct(text, tools, bind_request=False, tool_parser_active=False))
print(json.dumps(out))
"""

UNPUBLISHED = r"""
import json, sys
from tests.sglang import sglang_process as sp
from harmony_ext_testing.client import WEATHER
from tests.sglang.test_undeclared_builtin_count import SEARCH

sp.load_plugins()
model, tools = sys.argv[1], [WEATHER]
pieces = sp.token_pieces(model, SEARCH)
out = {"published": sp.server_arguments_published()}
for mode, text in (("whole", SEARCH), ("streamed", pieces)):
    out["arriving_late/" + mode] = sp.direct(text, tools, bind_request=False,
                                             tool_parser_active=True)
    out["never/" + mode] = sp.direct(text, tools, bind_request=False, tool_parser_active=False)
print(json.dumps(out))
"""
WAYS = [f"{way}/{mode}" for way in ("known_from_the_start", "arriving_late", "never")
        for mode in ("whole", "streamed")]


@pytest.fixture(scope="module")
def counted(gpt_oss_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """``{"WAY/MODE": [what was surfaced, what /metrics added]}``, one process with metrics."""
    return run_script(SCRIPT, gpt_oss_model_dir, tmp_path_factory.mktemp("metrics"))


@pytest.mark.parametrize("way", WAYS)
def test_one_identical_count_however_the_tools_arrive(counted: dict[str, Any], way: str
                                                      ) -> None:
    """Contract 3/9: ``undeclared_recipient`` once, no tool-call outcome, whether the tools
    were known from the start, arrived late or never came."""
    _, added = counted[way]
    assert added == ONE_COUNT


@pytest.mark.parametrize("way", WAYS)
def test_nothing_is_surfaced(counted: dict[str, Any], way: str) -> None:
    """Contract 2: a built-in recipient the request did not declare is no call, not content."""
    got, _ = counted[way]
    assert {k: got[k] for k in NOTHING_SURFACED} == NOTHING_SURFACED


def test_the_late_tool_parser_says_there_is_no_call(counted: dict[str, Any]) -> None:
    """``has_tool_call`` on the output is False once the tools arrive: ``browser.search`` can
    never resolve to a declared function, so it is no possible call."""
    got, _ = counted["arriving_late/whole"]
    assert got["has_tool_call"] is False


def test_direct_use_without_a_server_reports_the_same(gpt_oss_model_dir: Path,
                                                      tmp_path: Path) -> None:
    """With no server arguments in the process (SGLang's classes in a script), no ``/metrics``
    exists; the turn reports to its observer what a server would count."""
    got = run_script(UNPUBLISHED, gpt_oss_model_dir, tmp_path, metrics=False)
    assert got.pop("published") is False  # really no server arguments in that process
    for way, report in got.items():
        assert {k: report[k] for k in NOTHING_SURFACED} == NOTHING_SURFACED, way
        assert report["summary"] == {"recoveries": ONE_COUNT["recoveries"],
                                     "outcomes": ONE_COUNT["outcomes"]}, way
    assert got["arriving_late/whole"]["has_tool_call"] is False
