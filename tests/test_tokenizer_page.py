"""docs/tokenizer.md, the page on the shipped vocabulary, against the code it describes.

1. The figures the page gives are the code's: the published sha256 (``o200k.O200K_BASE_SHA256``),
   the token counts (``harmony.py``), the sizes of the shipped file and of the file inside it,
   the cache folder's name, the Hugging Face build's added tokens, the name tiktoken gives its
   download, and the known sequence (``KNOWN_IDS``, ``KNOWN_TEXT``), ids and text.
2. Every repository path the page names exists, and every name of the project's code it names
   (``Vocab.o200k_harmony()``, ``harmony_plugins.data.o200k_base_xz()``, ``tiktoken_file()``)
   is there to be found.
3. Every mention of the page in the checkout's files resolves to it.

Each check returns what it finds wrong; the tests at the end feed it altered pages. Reading the
shipped file is the code's own reader (no file is written, no environment changed).
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import json
import re
from pathlib import Path
from typing import Any

from harmony_ext_testing import hf_tokenizer
from harmony_plugins import harmony as hm
from harmony_plugins.data import o200k_base_xz
from harmony_plugins.vocab import o200k
from tests import oracles
from tests.test_contract_page import checkout_files

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs/tokenizer.md"
TICKED = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```(\w+)\n(.*?)\n```$", re.MULTILINE | re.DOTALL)


def figures() -> dict[str, str]:
    """What the page must say, by what it is: each value from the code or its data."""
    sha = o200k.O200K_BASE_SHA256
    added = hf_tokenizer.HF_ADDED_TOKEN_IDS
    lines = o200k.tiktoken_file_bytes().count(b"\n")
    return {
        "the published sha256": sha,
        "the ordinary tokens": f"{hm.ORDINARY_TOKENS:,} byte-level BPE tokens",
        "the special tokens": f"{len(hm.SPECIAL_IDS):,} special tokens (ids "
                              f"{min(hm.SPECIAL_IDS.values())} to {max(hm.SPECIAL_IDS.values())})",
        "the ids": f"{hm.VOCAB_SIZE:,} ids in all",
        "the shipped file's size": f"({len(o200k_base_xz()):,} bytes)",
        "the file's size": f"{len(o200k.tiktoken_file_bytes()):,} bytes",
        "the file's lines": f"{lines:,} lines",
        "the cache folder": f"o200k-{sha[:16]}/",
        "the added tokens": f"special tokens {added.start} to {added.stop - 1} added in id order, "
                            f"{len(added)} of them",
        "the tokenizer's length": f"`len(tokenizer)` is {added.stop:,}",
        "tiktoken's cache name": hashlib.sha1(oracles.O200K_BASE_URL.encode()).hexdigest(),
        "the known sequence's length": f"Its {len(hf_tokenizer.KNOWN_IDS)} o200k_harmony ids",
    }


def figure_problems(page: str) -> list[str]:
    """Check 1."""
    flat = " ".join(page.split())
    problems = [f"the page does not give {what}: {text!r}"
                for what, text in figures().items() if " ".join(text.split()) not in flat]
    blocks = FENCE.findall(page)
    ids = [json.loads(body) for lang, body in blocks if lang == "json"]
    texts = [body for lang, body in blocks if lang == "text"]
    if ids != [hf_tokenizer.KNOWN_IDS]:
        problems.append(f"the page's ids are not KNOWN_IDS: {ids}")
    if hf_tokenizer.KNOWN_TEXT not in texts:
        problems.append("the page does not show KNOWN_TEXT")
    return problems


NAMESPACES = ("harmony_plugins", "harmony_plugins.vocab.o200k", "harmony_plugins.data",
              "harmony_plugins.harmony", "harmony_plugins.vocabulary_files",
              "harmony_ext_testing.hf_tokenizer", "tests.oracles")
"""The modules whose names the page uses bare (``Vocab``, ``tiktoken_file()``)."""
PROJECT = ("harmony_plugins", "harmony_ext_testing", "tests")
NAME = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(?P<call>\(\w*\))?$")
FILE_NAME = re.compile(r"\.(py|md|toml|json|xz|tiktoken)$")


def _resolve(dotted: str) -> Any:
    """A dotted name of the project, imported; LookupError if there is none."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                raise LookupError(dotted)
            found = getattr(found, attr)
        return found
    raise LookupError(dotted)


def name_problems(page: str) -> list[str]:
    """Check 2: paths exist; the project's names resolve."""
    bare: dict[str, Any] = {}
    for module in NAMESPACES:
        bare.update(vars(importlib.import_module(module)))
    problems = []
    for text in sorted(set(TICKED.findall(page))):
        if "/" in text and " " not in text and not text.startswith(("$", "~", "<")):
            if not (ROOT / text.rstrip("/")).exists():
                problems.append(f"no such path: {text}")
            continue
        found = NAME.match(text)
        if found is None or FILE_NAME.search(text) or found["name"] in dir(builtins):
            continue  # not a name of the code: a file's name, a builtin
        name, first = found["name"], found["name"].split(".")[0]
        try:
            if first in PROJECT:
                _resolve(name)
            elif first in bare:
                obj: Any = bare[first]
                for attr in name.split(".")[1:]:
                    obj = getattr(obj, attr)
            elif found["call"] and "." not in name:
                raise LookupError(name)  # a function of ours, or a typo
        except (LookupError, AttributeError):
            problems.append(f"no such name in the code: {text}")
    return problems


MENTION = re.compile(r"[\w./-]*tokenizer\.md")


def mention_problems(files: dict[Path, str]) -> list[str]:
    """Check 3: each mention names the page by a path that leads to it, from the checkout's
    root or from the mentioning file's folder."""
    problems = []
    for path, text in sorted(files.items()):
        for number, line in enumerate(text.splitlines(), 1):
            for mention in MENTION.findall(line):
                targets = {(ROOT / mention).resolve(), (path.parent / mention).resolve()}
                if PAGE.resolve() not in targets:
                    problems.append(f"{path.relative_to(ROOT)}:{number}: {mention}")
    return problems


# -- the tests ------------------------------------------------------------------------------


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_page_gives_the_code_s_figures() -> None:
    assert figure_problems(page()) == []


def test_the_page_names_only_what_exists() -> None:
    assert "no such" not in " ".join(name_problems(page()))
    assert name_problems(page()) == []


def test_every_mention_of_the_page_resolves_to_it() -> None:
    files = {f: f.read_text(encoding="utf-8", errors="replace") for f in checkout_files()
             if f != Path(__file__).resolve()}  # this file's mentions are the checks' samples
    mentions = [m for text in files.values() for m in MENTION.findall(text)]
    assert len(mentions) >= 10  # the citations in the code and tests were read
    assert mention_problems(files) == []


# -- the checks can fail --------------------------------------------------------------------


def test_a_wrong_figure_is_reported() -> None:
    wrong = page().replace("1,151,196 bytes", "1,151,197 bytes")
    assert figure_problems(wrong) == [
        "the page does not give the shipped file's size: '(1,151,196 bytes)'"]
    ids = page().replace("[200005, 35644,", "[200005, 35645,")
    assert figure_problems(ids)[0].startswith("the page's ids are not KNOWN_IDS")
    text = page().replace("Provide answer.<|end|>", "Provide answers.<|end|>")
    assert figure_problems(text) == ["the page does not show KNOWN_TEXT"]


def test_a_missing_path_or_name_is_reported() -> None:
    added = page() + "\n`harmony_plugins/vocab/o300k.py`, `o200k_base_piece()`, " \
                     "`harmony_plugins.vocab.o200k.checked_files()`, `Vocab.from_gguf`\n"
    assert name_problems(added) == [
        "no such name in the code: Vocab.from_gguf",
        "no such name in the code: harmony_plugins.vocab.o200k.checked_files()",
        "no such path: harmony_plugins/vocab/o300k.py",
        "no such name in the code: o200k_base_piece()",
    ]


def test_a_mention_that_leads_elsewhere_is_reported() -> None:
    files = {ROOT / "tests" / "x.py": "see docs/tokenizer.md\nsee tokenizer.md\n",
             ROOT / "docs" / "y.md": "[the page](tokenizer.md)",
             ROOT / "README.md": "[it](doc/tokenizer.md)"}
    assert mention_problems(files) == ["README.md:1: doc/tokenizer.md",
                                       "tests/x.py:2: tokenizer.md"]
