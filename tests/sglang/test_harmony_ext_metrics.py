"""harmony-ext's counters under SGLang (contract section 9, and the broken links between the two
detectors), with SGLang's real parser classes.

SGLang serves ``/metrics`` only with ``--enable-metrics``, and then always in
prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set before any process
imports prometheus_client). So each check runs in a fresh interpreter set up that way, drives
SGLang's ``ReasoningParser``/``FunctionCallParser`` chain by name with the published server
arguments, and reads the counters back the way SGLang's ``/metrics`` does
(``MultiProcessCollector``). Expected values are written by hand from the contract.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
from sglang.srt.runtime_context import publish
from sglang.srt.server_args import ServerArgs
from sglang_ext import plugin
from harmony_ext_testing import sglang_cases as sc

plugin.ensure_loaded()  # as SGLang's loader does: names registered, hooks applied
publish(ServerArgs(model_path=sys.argv[1], tool_call_parser="harmony-ext",
                   reasoning_parser="harmony-ext", device="cpu",
                   enable_metrics=sys.argv[2] == "on"), role="tokenizer")
by_id = {c.id: c for c in sc.CASES}
for case_id in ("trailing_junk", "undeclared_function", "call_after_analysis"):
    case = by_id[case_id]
    sc.chain_stream(case, "harmony-ext", [case.text[:20], case.text[20:]])
bad = sc.Case("bad_args", sc.CALL.replace('"Paris"', "3"), "schema mismatch")
sc.chain_nonstream(bad, "harmony-ext")

from prometheus_client import CollectorRegistry, multiprocess
registry = CollectorRegistry()
multiprocess.MultiProcessCollector(registry)
out = {}
for family in registry.collect():
    for s in family.samples:
        if s.name.startswith("harmony_ext_"):
            out[s.name + json.dumps(s.labels, sort_keys=True)] = s.value
print(json.dumps(out))
"""


def run(script: str, model_dir: Path, tmp_path: Path, metrics: str) -> dict[str, Any]:
    """``script`` in a fresh interpreter in multiprocess mode, ``metrics`` ("on"/"off") its
    second argument; the JSON of its last line."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
           "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests' / 'sglang'}"}
    done = subprocess.run([sys.executable, "-c", script, str(model_dir), metrics],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def counters(model_dir: Path, tmp_path: Path, metrics: str) -> dict[str, Any]:
    return run(SCRIPT, model_dir, tmp_path, metrics)


def test_counters_with_enable_metrics(gpt_oss_model_dir: Path, tmp_path: Path) -> None:
    got = counters(gpt_oss_model_dir, tmp_path, "on")
    assert got == {
        'harmony_ext_responses_total{}': 4.0,
        'harmony_ext_leaks_suspected_total{}': 0.0,
        'harmony_ext_recoveries_total{"rule": "after_json_value"}': 1.0,
        'harmony_ext_recoveries_total{"rule": "undeclared_function"}': 1.0,
        'harmony_ext_tool_calls_total{"outcome": "surfaced"}': 2.0,
        'harmony_ext_tool_calls_total{"outcome": "undeclared"}': 1.0,
        'harmony_ext_tool_calls_total{"outcome": "schema_mismatch"}': 1.0,
    }


def test_no_counters_without_enable_metrics(gpt_oss_model_dir: Path, tmp_path: Path) -> None:
    assert counters(gpt_oss_model_dir, tmp_path, "off") == {}


# -- broken links between the two detectors (sglang_ext/link.py) ---------------------------

LINKS = r"""
import json, sys
from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser
from sglang.srt.runtime_context import publish
from sglang.srt.server_args import ServerArgs
from sglang_ext import link, plugin, request_context
from harmony_ext_testing import sglang_cases as sc

plugin.ensure_loaded()
publish(ServerArgs(model_path=sys.argv[1], tool_call_parser="harmony-ext",
                   reasoning_parser="harmony-ext", device="cpu",
                   enable_metrics=sys.argv[2] == "on"), role="tokenizer")
by_id = {c.id: c for c in sc.CASES}
# changed: SGLang strips the normal text between the detectors (once)
case = by_id["preamble_then_call"]
rp = ReasoningParser("harmony-ext", request=sc.request_for(case), tool_call_parser_active=True)
fp = FunctionCallParser([Tool(**sc.WEATHER)], "harmony-ext")
for piece in ("<|channel|>commentary<|message|>Checking the weather. ",
              case.text.split("<|end|>", 2)[-1]):
    _, normal = rp.parse_stream_chunk(piece)
    fp.parse_stream_chunk(normal.strip())
# missing: a tool detector's text without the reasoning detector's link (twice)
for _ in range(2):
    fp = FunctionCallParser([Tool(**sc.WEATHER)], "harmony-ext")
    request_context.update(link=None)
    fp.parse_stream_chunk(by_id["call_first"].text)

from prometheus_client import CollectorRegistry, multiprocess
registry = CollectorRegistry()
multiprocess.MultiProcessCollector(registry)
out = {}
for family in registry.collect():
    for s in family.samples:
        if s.name.startswith("harmony_ext_link_errors"):
            out[s.name + json.dumps(s.labels, sort_keys=True)] = s.value
print(json.dumps({"LOST": link.LOST, "metrics": out}))
"""


def link_errors(model_dir: Path, tmp_path: Path, metrics: str) -> dict[str, Any]:
    return run(LINKS, model_dir, tmp_path, metrics)


def test_broken_links_are_counted_with_enable_metrics(gpt_oss_model_dir: Path,
                                                      tmp_path: Path) -> None:
    assert link_errors(gpt_oss_model_dir, tmp_path, "on") == {
        "LOST": {"missing": 2, "changed": 1},
        "metrics": {'harmony_ext_link_errors_total{"kind": "changed"}': 1.0,
                    'harmony_ext_link_errors_total{"kind": "missing"}': 2.0},
    }


def test_broken_links_without_enable_metrics_are_in_lost_only(gpt_oss_model_dir: Path,
                                                                tmp_path: Path) -> None:
    assert link_errors(gpt_oss_model_dir, tmp_path, "off") == {
        "LOST": {"missing": 2, "changed": 1}, "metrics": {}}
