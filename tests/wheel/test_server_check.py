"""The wheel tier's check of a server's log (harmony_ext_testing/vllm_server.py) can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from harmony_ext_testing.vllm_server import _check_loaded_from_wheel


def _log(tmp_path: Path, *paths: str) -> Path:
    log = tmp_path / "server.log"
    log.write_text("".join(f"(APIServer pid=1) INFO [vllm_scripted.py:60] harmony-ext loaded "
                           f"from {p}/vllm_ext/__init__.py {p}/harmony_plugins/__init__.py\n"
                           for p in paths))
    return log


def test_a_server_on_the_wheel_passes(tmp_path):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    _check_loaded_from_wheel(_log(tmp_path, str(site), str(site)), tmp_path / "venv")


@pytest.mark.parametrize("where", ["/work/checkout", None], ids=["checkout", "no-line"])
def test_a_server_on_the_checkout_or_silent_fails(tmp_path, where):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    log = _log(tmp_path, str(site), where) if where else _log(tmp_path)
    with pytest.raises(pytest.fail.Exception, match="must run from the wheel"):
        _check_loaded_from_wheel(log, tmp_path / "venv")
