"""A real vLLM OpenAI server (CPU, tiny gpt-oss model) for end-to-end tests.

Run these with ``.venv-vllm/bin/pytest tests/e2e_vllm`` after
``scripts/setup_vllm_env.sh``. Without ``.venv-vllm`` (or without the ``openai``
client in the running interpreter) they skip. Start-up takes about a minute; the
server is shared by the whole session and always stopped at the end. How a server is started
and stopped is ``harmony_ext_testing/vllm_server.py`` (the page generators start theirs too).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The shared helpers' asserts read as the tests' own (neither module is imported yet).
pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases",
                               "harmony_ext_testing.vllm_round_trips")

from harmony_ext_testing.vllm_runner import missing  # noqa: E402
from harmony_ext_testing.vllm_server import (  # noqa: E402
    BUILTIN_ENV,
    STORE_ENV,
    VENV,
    tiny_vllm_server,
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A vLLM the scripted model cannot drive (harmony_ext_testing/vllm_runner.py): every test
    here is skipped at collection, with the reason, rather than failing to start a server."""
    reason = missing() if importlib.util.find_spec("vllm") is not None else None
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def vllm_server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the shared server's output (vLLM's own log, ours in it) is written."""
    return tmp_path_factory.mktemp("vllm") / "server.log"


@pytest.fixture(scope="session")
def vllm_server(vllm_server_log: Path) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT``) of the shared tiny vLLM server (its Responses
    store enabled, ``STORE_ENV``, and its scale-out routes, ``--enable-scale-out``, whose
    derender route parses with harmony-ext)."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is missing: run scripts/setup_vllm_env.sh")
    with tiny_vllm_server(vllm_server_log, "--enable-scale-out", env=STORE_ENV) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def builtin_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a second server running vLLM's built-in gpt-oss parsers."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is missing: run scripts/setup_vllm_env.sh")
    log_path = tmp_path_factory.mktemp("vllm-builtin") / "server.log"
    with tiny_vllm_server(log_path, env=BUILTIN_ENV) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def vllm_version(vllm_server: str) -> str:
    """The version the shared server reports (``GET /version``)."""
    # Imported here: the test modules ask pytest to rewrite its asserts before they import it.
    from harmony_ext_testing.vllm_cases import server_version

    return server_version(vllm_server)


@pytest.fixture(scope="session")
def openai_client(vllm_server: str) -> Any:
    """An ``openai.OpenAI`` client bound to the shared server."""
    openai = pytest.importorskip("openai", reason="run with .venv-vllm/bin/pytest")
    return openai.OpenAI(base_url=f"{vllm_server}/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="session")
def comparison(vllm_server: str, builtin_server: str) -> dict[str, dict[str, Any]]:
    """Every case of docs/vllm-comparison.md and the agent's runs, through the two servers, as
    the page's generator records them (``pages/vllm_comparison.py``'s ``record``): row key ->
    ``ext`` / ``builtin`` -> the outcome. Recorded once per session: the page's test compares
    the page it makes with the committed one, the built-in's test pins each row, the agent's
    test each run."""
    from pages.vllm_comparison import record

    return record(vllm_server, builtin_server)
