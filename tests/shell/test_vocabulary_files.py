"""The vocabulary files harmony-ext writes for others, read by those others.

The core writes no file; what does (the edge :mod:`harmony_plugins.vocabulary_files`, for
openai-harmony and tiktoken offline, and the tests' Hugging Face tokenizer
files in :mod:`harmony_ext_testing.hf_tokenizer`) is tested here, by the libraries that read the
files. These tests write into temporary folders and set environment variables; the core's tests
(``tests/test_*.py``) do neither.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer
from harmony_plugins.harmony import SPECIAL_IDS
from harmony_plugins.vocab import o200k
from harmony_plugins.vocabulary_files import write_tiktoken_file
from tests.test_o200k import CORPUS, OFFICIAL_SHA256, tt_encode_like_hf

REPO = Path(__file__).resolve().parents[2]

TIKTOKEN_CACHE_NAME = "fb374d419588a4632f3f557e76b4b70aebbca790"
"""The file name tiktoken looks for in ``$TIKTOKEN_CACHE_DIR`` (the sha1 of its download URL)."""


@pytest.fixture(scope="session")
def tt():
    return o200k.tiktoken_encoding()


@pytest.fixture(scope="session")
def hf_dir(tmp_path_factory) -> Path:
    """A real o200k_harmony Hugging Face tokenizer folder, generated offline once."""
    return write_hf_tokenizer(tmp_path_factory.mktemp("o200k_hf"))


def test_the_written_file_is_the_official_one(tmp_path):
    path = write_tiktoken_file(tmp_path / "sub" / "o200k_base.tiktoken")
    assert path == tmp_path / "sub" / "o200k_base.tiktoken"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == OFFICIAL_SHA256
    assert [p.name for p in path.parent.iterdir()] == ["o200k_base.tiktoken"]  # no temp left


_LOAD_OFFLINE = """
import json, os, sys
from harmony_plugins.prompt import _render as render
from harmony_plugins.vocabulary_files import load_openai_harmony
problem = load_openai_harmony()
print(json.dumps({"problem": problem, "env": os.environ.get(render.VOCAB_ENV)}))
"""


_NO_NETWORK_SHIM = (
    "import openai_harmony\n"
    "_real = openai_harmony.load_harmony_encoding\n"
    "def _load(name, *a, **k):\n"
    "    import os\n"
    "    base = os.environ.get('TIKTOKEN_ENCODINGS_BASE')\n"
    "    if not base or not os.path.exists(os.path.join(base, 'o200k_base.tiktoken')):\n"
    "        raise RuntimeError('no network')\n"
    "    return _real(name, *a, **k)\n"
    "openai_harmony.load_harmony_encoding = _load\n")


def offline_env(tmp_path: Path) -> dict[str, str]:
    """An environment where openai-harmony's own load fails (its embedded vocabulary made to
    fail, as openai-harmony 0.0.8's download fails offline), with the user cache and the
    temporary folder inside ``tmp_path``."""
    (tmp_path / "shim").mkdir()
    (tmp_path / "shim" / "sitecustomize.py").write_text(_NO_NETWORK_SHIM)
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_ENCODINGS_BASE"}
    env["PYTHONPATH"] = f"{tmp_path / 'shim'}{os.pathsep}{REPO}"
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["TMPDIR"] = str(tmp_path / "tmp")
    return env


def load_offline(env: dict[str, str]) -> dict[str, str | None]:
    out = subprocess.run([sys.executable, "-c", _LOAD_OFFLINE], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def official(path: Path) -> bool:
    return hashlib.sha256(path.read_bytes()).hexdigest() == OFFICIAL_SHA256


def test_openai_harmony_gets_the_vocabulary_written_for_it(tmp_path):
    """Where openai-harmony cannot load, the engine glue writes the file to the user's cache,
    points TIKTOKEN_ENCODINGS_BASE at it, and the second load works. A later process reuses
    the file; a wrong file there is replaced; a variable the user set is kept."""
    env = offline_env(tmp_path)
    seen = load_offline(env)
    assert seen["problem"] is None
    folder = Path(seen["env"])
    assert folder.parent == tmp_path / "cache" / "harmony-ext"
    assert folder.name == "o200k-" + OFFICIAL_SHA256[:16]
    assert [p.name for p in folder.iterdir()] == ["o200k_base.tiktoken"]
    assert official(folder / "o200k_base.tiktoken")
    stamp = (folder / "o200k_base.tiktoken").stat().st_mtime_ns
    assert Path(load_offline(env)["env"]) == folder  # the next process: the same file, unwritten
    assert (folder / "o200k_base.tiktoken").stat().st_mtime_ns == stamp
    (folder / "o200k_base.tiktoken").write_bytes(b"truncated")
    assert load_offline(env)["problem"] is None
    assert official(folder / "o200k_base.tiktoken")
    assert list((tmp_path / "tmp").iterdir()) == []  # no temporary folder left behind
    env["TIKTOKEN_ENCODINGS_BASE"] = str(tmp_path / "empty")  # the user's: left alone
    seen = load_offline(env)
    assert seen["env"] == str(tmp_path / "empty") and "no network" in seen["problem"]


def test_where_openai_harmony_loads_or_is_missing_nothing_is_written(tmp_path):
    """Only a failed load is helped: where openai-harmony loads by itself, no file is written
    and no variable set; where it is not installed, the problem says so and nothing is
    tried."""
    env = offline_env(tmp_path)
    env["PYTHONPATH"] = str(REPO)  # openai-harmony as installed: it loads
    assert load_offline(env) == {"problem": None, "env": None}
    (tmp_path / "shim" / "sitecustomize.py").write_text(
        "import sys\nsys.modules['openai_harmony'] = None\n")  # not installed
    env["PYTHONPATH"] = f"{tmp_path / 'shim'}{os.pathsep}{REPO}"
    assert load_offline(env) == {"problem": "openai-harmony is not installed", "env": None}
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_falls_back_to_a_folder_removed_at_exit(tmp_path):
    """A cache that cannot be written (here ``XDG_CACHE_HOME`` names a file) is no failure:
    the vocabulary goes to a temporary folder, which the process removes when it exits."""
    env = offline_env(tmp_path)
    (tmp_path / "not-a-folder").write_text("")
    env["XDG_CACHE_HOME"] = str(tmp_path / "not-a-folder")
    seen = load_offline(env)
    assert seen["problem"] is None
    assert Path(seen["env"]).parent == tmp_path / "tmp"
    assert list((tmp_path / "tmp").iterdir()) == []


def test_tiktoken_registry_loads_offline_and_agrees(tmp_path, monkeypatch, tt):
    """Our file under TIKTOKEN_CACHE_DIR makes tiktoken's own o200k_harmony load offline;
    its regex equals our copy and it encodes identically (it also accepts
    `<|reserved_200018|>` as a second spelling of 200018)."""
    import tiktoken

    write_tiktoken_file(tmp_path / TIKTOKEN_CACHE_NAME)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    theirs = tiktoken.get_encoding("o200k_harmony")
    assert theirs._pat_str == o200k.O200K_PAT_STR
    assert theirs.special_tokens_set == set(SPECIAL_IDS) | {"<|reserved_200018|>"}
    assert theirs.encode_batch(CORPUS, allowed_special="all") == tt.encode_batch(
        CORPUS, allowed_special="all"
    )


def test_hf_config_files(hf_dir):
    config = json.loads((hf_dir / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert config["bos_token"] == "<|startoftext|>"
    assert config["eos_token"] == "<|return|>"
    assert config["pad_token"] == "<|endoftext|>"
    assert config["model_max_length"] >= 10**9
    decoder = config["added_tokens_decoder"]
    assert [int(k) for k in decoder] == list(range(199_998, 200_019))
    assert decoder["200018"]["content"] == "<|endofprompt|>"
    assert all(v["special"] and not v["normalized"] for v in decoder.values())
    special_map = json.loads((hf_dir / "special_tokens_map.json").read_text())
    assert special_map == {k: config[k] for k in ("bos_token", "eos_token", "pad_token")}
    model = json.loads((hf_dir / "tokenizer.json").read_text())["model"]
    assert model["type"] == "BPE" and model["ignore_merges"] is True
    assert len(model["vocab"]) == 199_998


def test_transformers_loads_the_directory(tt, hf_dir):
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(hf_dir))
    assert isinstance(tok, transformers.PreTrainedTokenizerFast)
    assert len(tok) == 200_019
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (199_998, 200_002, 199_999)
    for text in CORPUS:
        ids = tok.encode(text, add_special_tokens=False)
        assert ids == tt_encode_like_hf(tt, text), text
        assert tok.decode(ids) == text
    assert tok.encode("hi", add_special_tokens=True) == tt.encode("hi")
