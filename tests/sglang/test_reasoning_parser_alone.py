"""A declared call parsed by SGLang's ``harmony-ext`` reasoning detector alone is never counted
``undeclared`` (contract 2, 4, 9; issue 23).

With ``--reasoning-parser harmony-ext`` and no tool parser (SGLang builds the reasoning parser
with ``tool_call_parser_active`` false), no call can be surfaced, whatever the request declares:
the parse never gets the tools. A call to the declared weather function is then no
``undeclared`` call (it names a declared function) and no ``surfaced`` one (nothing surfaced
it): the core counts it by the rule ``tools_unknown`` alone, once, with no tool-call outcome,
when the parse ends. Nor is it shown as content or reasoning. Checked with the request bound to
the reasoning parser (as in a server: SGLang's real serving chain, and ``ReasoningParser`` given
the request) and without it (``ReasoningParser`` used directly), non-streamed and streamed (the
stream's end calling the detector's ``finish``).

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

CALL = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
        '{"city":"Paris"}<|call|>')
ONE_COUNT = {"responses": 1, "leaks": 0, "recoveries": {"tools_unknown": 1}, "outcomes": {}}
"""What one such response adds on ``/metrics``, written by hand from the contract."""
NOTHING_SURFACED = {"reasoning": None, "content": None, "calls": []}
"""No tool parser: no call surfaced; a call is never content or reasoning (contract 2, 6)."""

SCRIPT = r"""
import json, sys
from tests.sglang import sglang_process as sp
from harmony_ext_testing.client import WEATHER
from tests.sglang.test_reasoning_parser_alone import CALL

sp.load_plugins()
model, tools = sys.argv[1], [WEATHER]
pieces = sp.token_pieces(model, CALL)
out = {}
for stream, deltas in ((False, [CALL]), (True, pieces)):
    mode = "streamed" if stream else "whole"
    out["served/" + mode] = sp.counted(
        lambda: sp.serve(model, deltas, stream=stream, tools=tools, tool_parser=None))
    text = pieces if stream else CALL
    sp.publish_server(model, None, "harmony-ext")
    for bind in (True, False):
        way = "bound" if bind else "unbound"
        out[way + "/" + mode] = sp.counted(
            lambda: sp.direct(text, tools, bind_request=bind, tool_parser_active=False))
print(json.dumps(out))
"""

UNPUBLISHED = r"""
import json, sys
from tests.sglang import sglang_process as sp
from harmony_ext_testing.client import WEATHER
from tests.sglang.test_reasoning_parser_alone import CALL

sp.load_plugins()
model, tools = sys.argv[1], [WEATHER]
pieces = sp.token_pieces(model, CALL)
out = {"published": sp.server_arguments_published()}
for mode, text in (("whole", CALL), ("streamed", pieces)):
    for bind in (True, False):
        out[("bound/" if bind else "unbound/") + mode] = sp.direct(
            text, tools, bind_request=bind, tool_parser_active=False)
print(json.dumps(out))
"""
WAYS = [f"{way}/{mode}" for way in ("served", "bound", "unbound")
        for mode in ("whole", "streamed")]


@pytest.fixture(scope="module")
def counted(gpt_oss_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """``{"WAY/MODE": [what was surfaced, what /metrics added]}``, one process with metrics."""
    return run_script(SCRIPT, gpt_oss_model_dir, tmp_path_factory.mktemp("metrics"))


@pytest.mark.parametrize("way", WAYS)
def test_a_declared_call_is_never_counted_undeclared(counted: dict[str, Any], way: str
                                                     ) -> None:
    """Contract 9: ``tools_unknown`` once, no tool-call outcome (``undeclared`` above all),
    with the request bound to the reasoning parser or not, streamed or not."""
    _, added = counted[way]
    assert "undeclared" not in added["outcomes"]
    assert added == ONE_COUNT


@pytest.mark.parametrize("way", WAYS)
def test_nothing_is_surfaced(counted: dict[str, Any], way: str) -> None:
    """No tool parser, so no call; the call's header and arguments are not content."""
    got, _ = counted[way]
    assert {k: got[k] for k in NOTHING_SURFACED} == NOTHING_SURFACED


def test_direct_use_without_a_server_reports_the_same(gpt_oss_model_dir: Path,
                                                      tmp_path: Path) -> None:
    """With no server arguments in the process (SGLang's classes in a script), no ``/metrics``
    exists; the turn reports to its observer what a server would count."""
    got = run_script(UNPUBLISHED, gpt_oss_model_dir, tmp_path, metrics=False)
    assert got.pop("published") is False  # really no server arguments in that process
    assert sorted(got) == sorted(w for w in WAYS if not w.startswith("served/"))
    for way, report in got.items():
        assert {k: report[k] for k in NOTHING_SURFACED} == NOTHING_SURFACED, way
        assert report["summary"] == {"recoveries": ONE_COUNT["recoveries"],
                                     "outcomes": ONE_COUNT["outcomes"]}, way
