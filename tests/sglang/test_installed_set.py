"""The SGLang tier's venv holds what `pip install sglang==VERSION` brings (issue 57).

SGLang's requirements are read from its installed metadata; the one change the set-up script
makes is read from its ``PINS=(...)`` line. So harmony-ext's SGLang paths (the Responses drop-in,
prompt rendering, the offline vocabulary) run on the ``openai-harmony`` SGLang pins, never on
vLLM's ``oss-harmony`` fork, which installs the same import name. Also here: the ``render``
extra changes nothing in an SGLang install, openai-harmony as SGLang installs it cannot fetch its
vocabulary offline and gets harmony-ext's, and the venv takes the disk the disk check counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sglang
from packaging.requirements import Requirement

from tests import installed

PINS = installed.script_list("setup_sglang_env.sh", "PINS")
REPLACED = dict(item.split("=", 1) for item in installed.script_case_list(
    "setup_sglang_env.sh", sglang.__version__, "REPLACE"))


def test_every_requirement_of_sglang_is_installed_as_it_asks() -> None:
    assert installed.requirements("sglang")  # the metadata was read, not an empty list
    assert installed.unmet("sglang", REPLACED, PINS) == []


def test_what_the_set_up_takes_otherwise() -> None:
    """By hand: on SGLang 0.5.22, cuda-tile as flashinfer-python asks for it (>=1.4.0) in place
    of SGLang's pin of 1.6.0rc5 (a PyPI stub that fetches its wheel from NVIDIA's index);
    nothing on 0.5.23. Control: without the replacement, 0.5.22's own pin is not met."""
    by_hand = {"0.5.22": {"cuda-tile": "cuda-tile>=1.4.0"}, "0.5.23": {}}[sglang.__version__]
    assert by_hand == REPLACED
    if REPLACED:
        assert installed.unmet("sglang", {}, PINS) == [
            f"cuda-tile==1.6.0rc5: {installed.installed('cuda-tile')}"]


def test_the_rule_fails_where_a_requirement_is_not_met() -> None:
    """Control: a pin the installed set does not meet, and a change of a name SGLang does not
    require, are each reported."""
    assert installed.unmet("sglang", REPLACED, ["openai-harmony==0.0.8"]) == [
        f"openai-harmony==0.0.4 and openai-harmony==0.0.8: {installed.installed('openai-harmony')}"]
    assert installed.unmet("sglang", REPLACED, ["oss-harmony==0.0.11"]) == [
        "the set-up script changes oss-harmony, which sglang does not require"]


def test_openai_harmony_is_the_one_sglang_pins_and_no_fork_beside_it() -> None:
    pin = [r for r in installed.requirements("sglang") if r.name == "openai-harmony"]
    assert [str(r.specifier) for r in pin] == ["==0.0.4"]  # SGLang 0.5.22 and 0.5.23 pin it
    assert installed.installed("openai-harmony") == "0.0.4"
    assert installed.installed("oss-harmony") is None
    assert installed.providers("openai_harmony") == ["openai-harmony"]


def test_the_render_extra_installs_nothing_here_and_render_vllm_would() -> None:
    """pip installs nothing for a requirement the installed set meets: `render` is one.
    Control: `render-vllm` (oss-harmony, what `render` was before) is not, and would replace
    SGLang's openai_harmony."""
    assert [installed.met(r) for r in installed.extra("render")] == [True]
    assert [installed.met(r) for r in installed.extra("render-vllm")] == [False]
    assert not installed.met(Requirement("oss-harmony>=0.0.11,<0.1"))


_OFFLINE = """
import json, os
import openai_harmony as oh
try:
    oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    own = "loaded"
except Exception as error:
    own = type(error).__name__
from sglang_ext import prompt
ids = prompt.render_request({"messages": [{"role": "user", "content": "Hi"}]})
print(json.dumps({"own": own, "ids": len(ids), "base": os.environ.get("TIKTOKEN_ENCODINGS_BASE")}))
"""


def test_offline_openai_harmony_fails_alone_and_gets_harmony_ext_s_vocabulary(
        tmp_path: Path) -> None:
    """openai-harmony 0.0.4 downloads its vocabulary when first asked for the gpt-oss encoding.
    With every proxy pointing at a closed port (so the download fails here and on a CI runner
    alike) and empty caches, its own load fails (the control), and harmony-ext's prompt hook
    renders a prompt all the same, from the vocabulary it ships, written into the user cache."""
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_ENCODINGS_BASE"}
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens on it here
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy"):
        env[name] = closed
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    for name in ("HOME", "XDG_CACHE_HOME", "TMPDIR", "TIKTOKEN_RS_CACHE_DIR"):
        env[name] = str(tmp_path / name.lower())
        (tmp_path / name.lower()).mkdir()
    env["PYTHONPATH"] = str(installed.ROOT)
    out = subprocess.run([sys.executable, "-c", _OFFLINE], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["own"] == "HarmonyError"
    assert seen["ids"] > 0
    folder = Path(seen["base"])
    assert folder.parent == tmp_path / "xdg_cache_home" / "harmony-ext"
    assert (folder / "o200k_base.tiktoken").stat().st_size > 1_000_000


def test_the_venv_takes_the_disk_the_disk_check_counts() -> None:
    """scripts/venv.sh's figure for this venv is its measured size, rounded up to a GiB."""
    venv = installed.venv_of(sglang.__file__)
    figure = installed.figure_gib(venv.name)
    assert figure - 1 < installed.measured_gib(venv) <= figure
