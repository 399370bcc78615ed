"""harmony-ext's counters under SGLang (contract section 9), with SGLang's real parser classes.

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
import sglang_cases as sc

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


def counters(model_dir: Path, tmp_path: Path, metrics: str) -> dict[str, Any]:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
           "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests' / 'sglang'}"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(model_dir), metrics],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


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
