"""Outputs cut by ``max_tokens`` (tests/cut_cases.py) through SGLang's serving chain.

Contract sections 4, 5 and 9: a response the engine cut at its token limit inside a call's
arguments keeps the partial arguments as the model wrote them, finishes ``length``, and counts
each call's outcome and each recovery, the same on every engine path (the core and
``harmony-ext parse --finish length`` are held to the same cases in tests/test_cuts.py). Here
each case goes through SGLang's real ``OpenAIServingChat`` (only the model scripted, its finish
reason ``{"type": "length"}`` as SGLang's scheduler reports a cut), harmony-ext selected as both
parsers, non-streamed and streamed (one token per delta, one character per delta, random token
groups). The counters are read as SGLang's ``/metrics`` serves them with ``--enable-metrics``,
in a process set up that way (:mod:`tests.sglang.sglang_process`): what each response added.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cut_cases import CUTS, Cut
from tests.sglang.sglang_process import run_script

SCRIPT = r"""
import json, sys
from tests.cut_cases import CUTS, TOOLS
from tests.sglang import sglang_process as mp
from harmony_ext_testing.sglang_cases import char_chunkings, token_chunkings

mp.load_plugins()
model = sys.argv[1]
out = {}
for cut in CUTS:
    pieces = mp.token_pieces(model, cut.text)
    runs = {"whole": (False, [cut.text]), "one_token_per_delta": (True, pieces),
            "one_char_per_delta": (True, list(cut.text))}
    for n, deltas in enumerate(list(token_chunkings(pieces, seeds=2))[2:]):
        runs[f"token_groups_{n}"] = (True, deltas)
    for name, (stream, deltas) in runs.items():
        finish = {"type": "length", "length": len(deltas)}
        got, added = mp.counted(lambda: mp.serve(model, deltas, stream=stream, tools=TOOLS,
                                                 finish=finish))
        out[f"{cut.id}/{name}"] = {"got": got, "counted": added}
print(json.dumps(out))
"""
RUNS = ("whole", "one_token_per_delta", "one_char_per_delta", "token_groups_0",
        "token_groups_1")


@pytest.fixture(scope="module")
def served(gpt_oss_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, Any]:
    """Every cut, every way, through the serving chain in one process with metrics on:
    ``{"CUT/RUN": {"got": what the client saw, "counted": what /metrics added}}``."""
    return run_script(SCRIPT, gpt_oss_model_dir, tmp_path_factory.mktemp("metrics"))


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("cut", CUTS, ids=[c.id for c in CUTS])
def test_a_cut_output_is_served_as_written(served: dict[str, Any], cut: Cut, run: str) -> None:
    """Contract 4/5: the partial arguments as the model wrote them (streamed pieces add up to
    them), reasoning and content as routed, and ``finish_reason: "length"``."""
    got = served[f"{cut.id}/{run}"]["got"]
    assert got == {"reasoning": cut.reasoning, "content": cut.content,
                   "calls": [list(c) for c in cut.calls], "finish_reason": cut.finish_reason}
    assert cut.finish_reason == "length"


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("cut", CUTS, ids=[c.id for c in CUTS])
def test_a_cut_output_is_counted_as_written(served: dict[str, Any], cut: Cut, run: str) -> None:
    """Contract 9: one response on ``/metrics``, with the case's call outcomes and recoveries
    (a call cut inside its arguments is ``invalid_json``; nothing counted twice)."""
    assert served[f"{cut.id}/{run}"]["counted"] == {
        "responses": 1, "leaks": 0, "recoveries": cut.recoveries, "outcomes": cut.outcomes}
