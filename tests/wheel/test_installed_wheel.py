"""The built wheel, installed alone into a fresh environment, is a working product.

``HARMONY_EXT_DIST`` names the folder scripts/build_dist.sh filled (the sdist and the wheel
that CI checks with twine); without it the wheel is built here from a copy of the checkout.
The environment gets the wheel with ``--no-index``, so a runtime dependency, or a file
the product needs but the wheel lacks, fails here. Every command runs outside the checkout,
with no PYTHONPATH, so nothing of the checkout can stand in for the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.data import KNOWN_IDS

REPO = Path(__file__).resolve().parents[2]

# docs/tokenizer.md: real gpt-oss output as o200k_harmony ids (tests.data), and
# what it says.
KNOWN_VIEW = {
    "reasoning": 'User asks: "What is 2 + 2?" Simple arithmetic. Provide answer.',
    "content": "2 + 2 = 4.",
    "tool_calls": [],
    "finish_reason": "stop",
}
CALL_TEXT = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
             '{"city":"Paris"}]<|call|>')


def _build(out: Path) -> None:
    """The sdist and wheel built from a copy of the checkout's files (a build writes into the
    tree it builds); only the wheel where the ``build`` package is missing."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    tree = out / "tree"
    for name in filter(None, files):
        if (REPO / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tree / name)
    try:
        import build  # noqa: F401  (the test extra has it)

        command = [sys.executable, "-m", "build", "--outdir", str(out), str(tree)]
    except ImportError:
        command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                   str(tree)]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("HARMONY_EXT_DIST")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    _build(out)
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob("harmony_ext-*.whl")
    return found


@pytest.fixture(scope="module")
def env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and nothing else of ours."""
    root = tmp_path_factory.mktemp("wheel-venv")
    venv.create(root, with_pip=True)
    subprocess.run([str(root / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", "--no-index", str(wheel)],
                   check=True, capture_output=True, cwd=root)
    return root


def run(env: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(list(args), input=stdin, capture_output=True, text=True, cwd=env,
                          env=clean, timeout=120)


def test_the_wheel_holds_the_product_the_licence_and_the_vocabulary(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "harmony_plugins/data/o200k_base.tiktoken.xz" in names
    assert "harmony_plugins/data/o200k_starts.xz" in names  # the guard reads it at import
    for must in ("harmony_plugins/cli.py", "harmony_plugins/adapter_support/metrics.py",
                 "vllm_ext/plugin.py", "sglang_ext/plugin.py"):
        assert must in names
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"harmony_plugins", "vllm_ext", "sglang_ext"}
    assert not [n for n in names if "scripted" in n or n.startswith("tests/")]


def test_the_sdist_holds_the_licence_and_changelog_and_no_tests(dist: Path):
    sdists = list(dist.glob("harmony_ext-*.tar.gz"))
    if not sdists and not os.environ.get("HARMONY_EXT_DIST"):
        pytest.skip("no sdist: the build package is missing (pip install -e '.[test]')")
    (sdist,) = sdists
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"LICENSE", "CHANGELOG.md", "pyproject.toml",
            "harmony_plugins/data/o200k_base.tiktoken.xz",
            "harmony_plugins/data/o200k_starts.xz"} <= names
    assert not [n for n in names if n.startswith(("tests/", "harmony_ext_testing/"))]


def test_demo_runs(env: Path):
    out = run(env, str(env / "bin" / "harmony-ext"), "demo")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.startswith("tools declared: ['get_weather']\n\n"
                                 "== reasoning, then the final answer\n"
                                 "   model output (29 tokens): ")
    # Each sample is parsed from text and from ids, and both agree.
    lines = out.stdout.splitlines()
    text = [line.split(": ", 1)[1] for line in lines if line.startswith("   text streamed")]
    ids = [line.split(": ", 1)[1] for line in lines if line.startswith("   ids  streamed")]
    assert len(text) == 4 and text == ids
    assert json.loads(text[0]) == {"reasoning": "User asks for 2 + 2. Simple.",
                                   "content": "2 + 2 = 4.", "tool_calls": [],
                                   "finish_reason": "stop"}


def test_parse_ids_runs_on_the_shipped_vocabulary(env: Path):
    out = run(env, str(env / "bin" / "harmony-ext"), "parse", "--input", "ids",
              stdin=json.dumps(KNOWN_IDS))
    assert (out.returncode, out.stderr) == (0, "")
    assert json.loads(out.stdout) == KNOWN_VIEW


def test_parse_text_runs(env: Path):
    out = run(env, str(env / "bin" / "harmony-ext"), "parse", "--tool", "get_weather",
              stdin=CALL_TEXT + "\n")
    # The stray "]" after the arguments is dropped by a recovery rule, and the report says so.
    assert (out.returncode, out.stderr) == (0, 'harmony-ext: rule after_json_value: "]"\n'
                                               "harmony-ext: call 0: surfaced\n")
    view = json.loads(out.stdout)
    assert view["finish_reason"] == "tool_calls" and view["content"] is None
    [call] = view["tool_calls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}


def test_the_python_api_and_the_entry_points_come_from_the_wheel(env: Path):
    code = f"""
import json, sys
from importlib import metadata
import harmony_plugins, vllm_ext, sglang_ext
from harmony_plugins import parse_ids
try:
    import harmony_ext_testing
    testing = harmony_ext_testing.__file__
except ImportError:
    testing = None
dist = metadata.distribution("harmony-ext")
print(json.dumps({{
    "files": [harmony_plugins.__file__, vllm_ext.__file__, sglang_ext.__file__],
    "testing": testing,
    "view": parse_ids({KNOWN_IDS!r}),
    "version": [harmony_plugins.__version__, dist.version],
    "requires": dist.requires,
    "plugins": sorted(f"{{e.group}}={{e.value}}" for e in dist.entry_points
                      if e.group != "console_scripts"),
}}))
"""
    out = run(env, str(env / "bin" / "python"), "-c", code)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    site = str(env / "lib")
    assert all(f.startswith(site) and "site-packages" in f for f in seen["files"]), seen
    assert seen["testing"] is None  # the tests' instruments are not installed
    assert seen["view"] == KNOWN_VIEW
    assert seen["version"][0] == seen["version"][1]
    assert [r for r in seen["requires"] or () if "extra ==" not in r] == []  # none at run time
    assert seen["plugins"] == ["sglang.srt.plugins=sglang_ext.plugin:register",
                               "vllm.general_plugins=vllm_ext.plugin:register"]


def test_an_optional_library_missing_is_one_clear_line(env: Path):
    code = "from harmony_plugins.vocab import o200k; o200k.tiktoken_encoding()"
    out = run(env, str(env / "bin" / "python"), "-c", code)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: harmony-ext: tiktoken_encoding() needs tiktoken: "
        "pip install 'harmony-ext[tiktoken]'")
