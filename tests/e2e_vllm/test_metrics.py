"""harmony-ext's counters on a real vLLM server's ``/metrics`` (contract section 9).

The shared tiny server (one API server: prometheus_client's default registry) gets the
scripted requests of :mod:`tests.e2e_vllm.metrics`, streamed and not; ``/metrics`` must show
exactly the increments written there. The two-API-server sum is checked in
``test_api_servers.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")
pytest.importorskip("prometheus_client", reason="comes with vLLM: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import run_chat  # noqa: E402
from tests.e2e_vllm.metrics import SCRIPTED, expected_increase, increase, scrape  # noqa: E402


def test_counters_move_with_scripted_requests(openai_client: Any, vllm_server: str) -> None:
    before = scrape(vllm_server)
    for case, _ in SCRIPTED:
        for stream in (False, True):
            run = run_chat(openai_client, case, stream=stream)
            assert "error" not in run.outcome, run.outcome
    assert increase(before, scrape(vllm_server)) == expected_increase(rounds=1, per_request=2)
