"""The performance benchmark's machinery, on tiny streams: a correctness cross-check, no timing.

``scripts/bench.py`` builds the token streams and runs ``scripts/bench_workers.py`` once per
implementation in the venv that has its engine. Here every pair the benchmark compares runs
through the real workers on 512-token streams of each shape, and must parse each stream to the
same message (reasoning, content, calls) as its counterpart; engines whose venv is missing are
skipped. Nothing here looks at how long anything took.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bench  # noqa: E402

N = 512
CONF = {
    "lengths": [N], "ours_extra": [], "repeats": {N: 1}, "budget_s": 60.0,
    "concurrent": {"streams": 8, "length": N, "size": 1, "budget_s": 60.0},
    "memory": None,
}
EXPECTED_CALLS = {"reasoning": 0, "final": 0, "call": 1, "calls": 8}


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "streams.json"
    bench.write_streams(path, [N])
    return path


@pytest.fixture(scope="module")
def results(streams: Path) -> dict[str, dict]:
    """Each implementation's worker output, run at most once per test session."""
    cache: dict[str, dict] = {}

    def get(impl: str) -> dict:
        if impl not in cache:
            venv = bench.IMPLS[impl][0]
            if bench.venv_python(venv) is None:
                pytest.skip(f"{venv} does not exist")
            plan = bench.worker_plan(impl, CONF, memory=False)
            cache[impl] = bench.run_worker(impl, streams, plan, streams.parent, timeout=600)
        return cache[impl]

    return get  # type: ignore[return-value]


def test_streams_are_well_formed_harmony_output(streams: Path) -> None:
    from harmony_plugins import parse_ids
    from harmony_plugins.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    data = json.loads(streams.read_text())
    assert [t["function"]["name"] for t in data["tools"]] == [
        "get_weather", "search_docs", "write_file"]
    for shape, by_length in data["streams"].items():
        stream = by_length[str(N)]
        ids, pieces = stream["ids"], stream["pieces"]
        assert abs(len(ids) - N) <= 8, shape
        assert len(pieces) == len(ids)
        assert "".join(pieces) == enc.decode(ids)
        stop = "<|call|>" if EXPECTED_CALLS[shape] else "<|return|>"
        assert pieces[-1] == stop
        out = parse_ids(ids, tools=data["tools"])
        assert out["reasoning"]
        assert len(out["tool_calls"]) == EXPECTED_CALLS[shape]
        assert bool(out["content"]) == (EXPECTED_CALLS[shape] == 0)
        for call in out["tool_calls"]:
            json.loads(call["function"]["arguments"])


@pytest.mark.parametrize("impl", list(bench.IMPLS))
def test_worker_output_shape(results, impl: str) -> None:
    r = results(impl)
    if r["status"] == "skipped":
        pytest.skip(r["reason"])
    assert r["status"] == "ok", r.get("reason")
    assert r["versions"]
    cells = {(c["shape"], c["size"]): c for c in r["cells"]}
    assert set(cells) == {(s, z) for s in bench.SHAPES for z in (1, 8)}
    for cell in cells.values():
        assert cell["status"] == "ok"
        assert cell["n"] == N and 1 <= cell["repeats"] <= 2  # a slowed run is redone once
        assert cell["median_us"] > 0 and cell["p95_us"] >= cell["median_us"]
    assert r["concurrent"]["status"] == "ok"
    assert r["concurrent"]["tokens"] > 0
    floor = impl.endswith("-floor")  # the engine's chain with detectors that parse nothing
    for item in r["messages"]:
        message = item["message"]
        assert "error" not in message, message
        if floor:
            assert not message["reasoning"] and not message["content"] and not message["calls"]
            continue
        assert message["reasoning"]
        assert len(message["calls"]) == EXPECTED_CALLS[item["shape"]]


@pytest.mark.parametrize("ours,theirs", bench.CHECK_PAIRS,
                         ids=[f"{a}-vs-{b}" for a, b in bench.CHECK_PAIRS])
def test_both_sides_of_a_pair_parse_the_same_message(results, ours: str, theirs: str) -> None:
    a, b = results(ours), results(theirs)
    for r in (a, b):
        if r["status"] == "skipped":
            pytest.skip(f"{r['impl']}: {r['reason']}")
        assert r["status"] == "ok", r.get("reason")
    rows = bench.messages_agree({ours: a, theirs: b}, [(ours, theirs)])
    assert len(rows) == 2 * len(bench.SHAPES)
    assert all(verdict == "same message" for _, _, verdict in rows), rows


def test_report_lists_every_implementation_and_says_why_one_was_skipped(tmp_path: Path) -> None:
    results = {
        "core-ids": {"impl": "core-ids", "status": "ok", "versions": {"harmony-ext": "x"},
                     "cells": [{"shape": s, "n": N, "tokens": N, "size": z, "status": "ok",
                                "median_us": 1.0, "p95_us": 1.5, "repeats": 1}
                               for s in bench.SHAPES for z in (1, 8)]},
        "vllm-builtin": {"impl": "vllm-builtin", "status": "skipped",
                         "reason": "not installed (no .venv-vllm)"},
    }
    out = tmp_path / "bench.md"
    conf = dict(CONF, memory={"length": N, "size": 8, "budget_s": 1.0})
    bench.write_report(out, results, conf, True, {s: {N: N} for s in bench.SHAPES}, 1.0, None)
    text = out.read_text()
    for impl in bench.IMPLS:
        assert f"| {impl} |" in text
    assert "skipped (not installed (no .venv-vllm))" in text
    assert "## Claims" in text and "not measured" in text
