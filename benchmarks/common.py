"""What every benchmark shares: the token streams, the timing, the one percentile, the page.

Every implementation is fed the same o200k_harmony token streams, built here from a seeded
generator (so each engine's venv builds identical streams without a hand-off file): one
assistant output of a given shape, as the engine hands it to the parser after the prompt's
``<|start|>assistant``.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the checkout's packages, whatever the interpreter
    sys.path.insert(0, str(ROOT))

K = 1024
SHAPES = {
    "reasoning": "long reasoning, then a short final answer (about 160 tokens)",
    "final": "short reasoning (about 100 tokens), then a long final answer",
    "call": "reasoning (1/4), then one write_file call whose arguments are the rest",
    "calls": "reasoning (1/4), then 8 calls in a row, arguments the rest",
}
TOOLS = [
    {"type": "function", "function": {
        "name": "search_docs", "description": "Search the documentation.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a file in the workspace.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"]}}},
]

WORDS = (  # noqa: SIM905 - a word list reads better as one string
    "the of and to in is that for it as with on this be are by from at or not which value "
    "function request response parser token stream model output should would must check "
    "return result error case first then because however maybe simple fast slow list dict "
    "string number field index cache buffer state header body message channel weather Paris "
    "file path write read query search limit docs données naïve café 数据 分析 結果 😀 🚀 → ≤ ∑"
).split()
CODE = [
    "def {w}_fn(x, y=None):", "    if x is None:", "        return []",
    "    total = sum(v * 2 for v in x)  # {w}", "    result[\"{w}\"] = total / len(x)",
    "for i in range({d}):", "    print(f\"{{i}}: {w} {{x!r}}\")", "import json, os, re",
    "    raise ValueError('bad {w}')", "    path = os.path.join(root, '{w}.txt')  # 数据", "",
]


def _prose(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 24))]
    return " ".join(words).capitalize() + (".\n\n" if rng.random() < 0.2 else ". ")


def _code(rng: random.Random) -> str:
    return rng.choice(CODE).format(w=rng.choice(WORDS[:60]), d=rng.randint(0, 9999)) + "\n"


def _args(rng: random.Random) -> str:
    """The inside of a JSON string as the model writes it: escaped code or prose."""
    raw = "".join(_code(rng) for _ in range(3)) if rng.random() < 0.7 else _prose(rng)
    return json.dumps(raw, ensure_ascii=False)[1:-1]


def _lines(enc: Any, k: int, line: Callable[[], str]) -> list[int]:
    """Whole lines of ordinary tokens, as many as fit in about ``k`` tokens (at least one),
    so that no cut splits a character or an escape."""
    out: list[int] = []
    while True:
        ids = enc.encode_ordinary(line())
        if out and len(out) + len(ids) > k:
            return out
        out += ids


def build_stream(enc: Any, shape: str, n: int, seed: int) -> list[int]:
    """About ``n`` token ids of one assistant output of ``shape``, ending with the stop token
    the engine stops on (``<|return|>`` or ``<|call|>``)."""
    rng = random.Random(seed)

    def sp(text: str) -> list[int]:
        return enc.encode(text, allowed_special="all")

    def prose(k: int) -> list[int]:
        return _lines(enc, k, lambda: _prose(rng) if rng.random() < 0.85 else _code(rng))

    def call(name: str, head: str, tail: str, k: int) -> list[int]:
        return (sp(f"<|start|>assistant<|channel|>commentary to=functions.{name} "
                   f"<|constrain|>json<|message|>{head}")
                + _lines(enc, k, lambda: _args(rng)) + sp(tail + "<|call|>"))

    analysis = sp("<|channel|>analysis<|message|>")
    answer = sp("<|end|><|start|>assistant<|channel|>final<|message|>")
    if shape == "reasoning":
        return analysis + prose(n - 180) + answer + prose(160) + sp("<|return|>")
    if shape == "final":
        return analysis + prose(100) + answer + prose(n - 120) + sp("<|return|>")
    head = analysis + prose(n // 4) + sp("<|end|>")
    if shape == "call":
        return head + call("write_file", '{"path": "src/app.py", "content": "', '"}',
                           n - len(head) - 30)
    if shape == "calls":
        each = (n - len(head)) // 8 - 30
        for i in range(8):
            head += (call("search_docs", '{"query": "', '", "limit": 5}', each) if i % 2 == 0
                     else call("write_file", f'{{"path": "notes/{i}.md", "content": "', '"}',
                               each))
        return head
    raise ValueError(f"unknown shape {shape!r}")


def token_pieces(enc: Any, ids: list[int]) -> list[str]:
    """The text each token completes, as an incremental detokenizer hands it over: special
    tokens spelled literally, a character cut between tokens held until its last byte."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    specials = {enc.encode_single_token(s): s for s in enc.special_tokens_set}
    return [decoder.decode(b"", final=True) + specials[t] if t in specials
            else decoder.decode(enc.decode_single_token_bytes(t)) for t in ids]


def streams(shapes: list[str], lengths: list[int]) -> dict[tuple[str, int], dict[str, Any]]:
    """``{(shape, n): {"ids": [...], "pieces": [...]}}``, the same in every venv."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    out = {}
    for s_index, shape in enumerate(shapes):
        for n in lengths:
            ids = build_stream(enc, shape, n, seed=1000 * s_index + n)
            pieces = token_pieces(enc, ids)
            assert "".join(pieces) == enc.decode(ids), (shape, n)
            out[shape, n] = {"ids": ids, "pieces": pieces}
    return out


def normalize_args(text: str) -> str:
    """Arguments compared as JSON values where they are JSON (some parsers re-serialise)."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text


def message(reasoning: list[str], content: list[str], calls: list[list[str]]) -> dict[str, Any]:
    """What a parser made of a stream, in one comparable form."""
    return {"reasoning": "".join(reasoning) or None, "content": "".join(content) or None,
            "calls": [[name, normalize_args(args)] for name, args in calls]}


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The fields in which two messages differ (empty: the same message)."""
    return [key for key in ("reasoning", "content", "calls") if a.get(key) != b.get(key)]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile, the one definition every benchmark here uses (q=50 is the
    median; with 3 repeats it is the middle run, never an average of two)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def cpu_us_per_token(run: Callable[[], object], tokens: int, repeats: int,
                     min_cpu_s: float = 0.3) -> float:
    """Median CPU microseconds per token of ``run`` (one whole request), after one warm-up:
    at least ``repeats`` runs, more for short streams until ``min_cpu_s`` is spent (at most
    50). CPU time of this thread, so other processes on a shared machine count little."""
    run()
    samples: list[float] = []
    while len(samples) < repeats or (sum(samples) * tokens / 1e6 < min_cpu_s
                                     and len(samples) < 50):
        start = time.thread_time()
        run()
        samples.append((time.thread_time() - start) / tokens * 1e6)
    return percentile(samples, 50)


def fmt(us: float) -> str:
    return f"{us:#.3g}" if us < 100 else f"{us:,.0f}"


def page(title: str, command: str, intro: str, versions: dict[str, str],
         sections: list[str]) -> str:
    """A result page: what made it, on what, then the tables."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join([
        f"# {title}", "",
        f"Generated by `{command}`; do not edit by hand. {intro}", "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- machine: {os.cpu_count()} CPUs, {platform.platform()}, load average {load}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())), "",
        *sections])


def version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(dist)
    except PackageNotFoundError:
        return "not installed"
