"""``scripts/bench_server.py`` end to end, at the smallest size (about two minutes).

Its own servers (built-in parsers and harmony-ext), one measured cell and one profiled cell;
the report goes to a temporary folder. No timing is asserted: the checks are that every
token streamed, that both parsers gave the client the same text, and that the two
instruments (the parse meter and the CPU-time sampler) saw the parser at work.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e_vllm.conftest import ROOT, VENV

pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")


def test_one_small_cell_and_one_profile_from_real_servers(tmp_path: Path) -> None:
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is missing: run scripts/setup_vllm_env.sh")
    out = tmp_path / "report.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_server.py"),
         "--configs", "builtin,harmony-ext", "--cells", "call:1k:1", "--repeats", "1",
         "--min-tokens", "1024", "--profile-cells", "call:1k:1", "--profile-min-tokens", "2048",
         "--budget-minutes", "20", "--profile-minutes", "5", "--meter-every", "1",
         "--venv-vllm", str(VENV), "--out", str(out)],
        capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    data = json.loads(out.with_suffix(".json").read_text())

    [cell] = data["cells"]
    assert (cell["shape"], cell["tokens"], cell["concurrency"], cell["status"]) == \
        ("call", 1024, 1, "ok")
    runs = {r["config"]: r for r in cell["runs"]}
    assert set(runs) == {"builtin", "harmony-ext"}
    for r in runs.values():
        assert r["tokens"] == r["expected_tokens"] == 1024
        # One parse_delta per decode step of the request: at least one, at most one a token
        # (plus the finishing call); with --meter-every 1 every call is timed.
        assert 0 < r["parse_calls"] <= r["tokens"] + r["requests"]
        assert r["parse_timed_calls"] == r["parse_calls"]
        assert 0 < r["parse_share_pct"] < 100
    # vLLM's own parser is the oracle for what the client gets: the same characters of
    # reasoning and of write_file arguments, none of them as content.
    assert runs["harmony-ext"]["got"] == runs["builtin"]["got"]
    assert runs["harmony-ext"]["got"]["arguments"] > 0
    assert runs["harmony-ext"]["got"]["reasoning"] > 0
    assert "content" not in runs["harmony-ext"]["got"]

    [profile] = data["profiles"]
    assert profile["status"] == "ok"
    for config, result in profile["results"].items():
        assert result["samples"] > 20, config
        assert result["shares"].get("parser", 0) > 0, config
        assert (tmp_path / result["raw"]).exists()

    # The plot is drawn by whichever Python has matplotlib (.venv with the `bench` extra);
    # without one the run says so and still succeeds.
    plotter = ROOT / ".venv" / "bin" / "python"
    can_plot = plotter.exists() and subprocess.run(
        [str(plotter), "-c", "import matplotlib"], capture_output=True, check=False
    ).returncode == 0
    assert out.with_suffix(".png").exists() == can_plot, proc.stderr[-2000:]
    if not can_plot:
        assert "no plot" in proc.stderr

    report = out.read_text()
    assert "one repeat: no spread to judge by" in report  # --repeats 1 judges nothing
    for heading in ("## Summary", "## API-server CPU us/token",
                    "## Where the API server's CPU goes: call, 1024 tokens, concurrency 1"):
        assert heading in report
