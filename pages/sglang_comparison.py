"""docs/sglang-comparison.md: harmony-ext against SGLang's built-in ``gpt-oss`` parsers.

    bash pages/run.sh sglang-comparison      # .venv-sglang; writes docs/sglang-comparison.md

Every case of ``harmony_ext_testing/sglang_cases.py`` is served by SGLang's real
``OpenAIServingChat`` with only the model scripted (the tests' own runner,
``harmony_ext_testing/sglang_serving.py``), once with ``harmony-ext`` and once with ``gpt-oss``
as tool and reasoning parser, streamed and not. What each returns is recorded, not judged: the
tests hold harmony-ext to the contract (``tests/sglang/test_harmony_ext_parsers.py``) and pin
the built-in's results (``tests/sglang/test_sglang_builtin.py``), and this page shows both side
by side. Nothing on the page depends on the run (no date, no timing; the parsers' cost is
``docs/bench-sglang.md``'s), so ``tests/sglang/test_comparison_page.py`` regenerates it on every
SGLang tier and compares it with the committed page. Nothing is written but the page
(``--out``); the model folder is a temporary one. SGLang is imported when the page is made, not
with the module (the core's tests import every generator).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harmony_plugins
from harmony_ext_testing.client import same_json
from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer
from harmony_ext_testing.sglang_cases import (
    CASES,
    NAME,
    Case,
    pieces_for,
    served,
    token_chunkings,
)
from harmony_ext_testing.sglang_serving import chat_runner, write_model_dir
from sglang_ext import request_context

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "bash pages/run.sh sglang-comparison"
BUILTIN = "gpt-oss"


def sglang_chat_runner(folder: Path) -> Any:
    """The tests' runner of SGLang's real chat serving
    (:func:`harmony_ext_testing.sglang_serving.chat_runner`), over a tiny gpt_oss model folder
    and o200k tokenizer written into ``folder``; SGLang's plugins loaded as every SGLang
    process loads them (registers harmony-ext)."""
    from sglang.srt.plugins import load_plugins

    load_plugins()
    hf_dir = write_hf_tokenizer(folder / "o200k_hf")
    model = folder / "sglang_gpt_oss"
    model.mkdir()
    write_model_dir(model, hf_dir)
    return chat_runner(model)


def record(chat: Any, pieces: Callable[[str], list[str]]) -> dict[str, dict[str, Any]]:
    """case id -> {"harmony-ext": ..., "gpt-oss": ...}: each case through ``chat`` (a
    :func:`harmony_ext_testing.sglang_serving.chat_runner`), cut into tokens by ``pieces``
    (:func:`harmony_ext_testing.sglang_cases.pieces_for`)."""
    results: dict[str, dict[str, Any]] = {}
    for case in CASES:
        request_context.update(link=None)  # each case a new request
        token_pieces = pieces(case.text)
        nonstream = served(chat, case, NAME, None, stream=False)
        streams = [served(chat, case, NAME, deltas, stream=True)
                   for deltas in list(token_chunkings(token_pieces, seeds=2))[1:]]
        results.setdefault(case.id, {})[NAME] = {
            "nonstream": nonstream, "stream": streams[0],
            "all_streams_agree": all(s == streams[0] for s in streams)}
        request_context.update(link=None)
        results[case.id][BUILTIN] = {
            "nonstream": served(chat, case, BUILTIN, None, stream=False),
            "stream": served(chat, case, BUILTIN, token_pieces, stream=True)}
        print(f"{case.id}: recorded", file=sys.stderr)
    return results


def cell(result: dict[str, Any]) -> str:
    if "error" in result:
        return "HTTP error"
    parts = []
    if result["reasoning"]:
        parts.append(f"R {short(result['reasoning'])}")
    if result["content"]:
        parts.append(f"C {short(result['content'])}")
    for name, arguments in result["calls"]:
        parts.append(f"call {name} {short(arguments, 28)}")
    parts.append(result["finish_reason"] or "?")
    return " · ".join(parts)


def short(text: str, limit: int = 40) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return "`" + json.dumps(text, ensure_ascii=False)[1:-1].replace("|", "\\|") + "`"


def differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    if "error" in got:
        return ["HTTP error"]
    out = []
    for key in ("reasoning", "content", "finish_reason"):
        if got[key] != want[key]:
            out.append(f"{key.replace('_', ' ')} wrong")
    if got["calls"] != want["calls"]:
        names = [n for n, _ in got["calls"]] == [n for n, _ in want["calls"]]
        if names and all(same_json(a, b) for (_, a), (_, b) in zip(got["calls"], want["calls"],
                                                                      strict=True)):
            out.append("arguments re-serialised")
        elif len(got["calls"]) < len(want["calls"]):
            out.append("call lost")
        else:
            out.append("calls wrong")
    return out


def verdict(case: Case, ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    want = case.expected()
    our_diff = differences(ours["nonstream"], want) + differences(ours["stream"], want)
    if not ours["all_streams_agree"]:
        our_diff.append("chunking changes the result")
    notes = []
    if our_diff:
        notes.append("**harmony-ext wrong**: " + ", ".join(sorted(set(our_diff))))
    non, st = differences(theirs["nonstream"], want), differences(theirs["stream"], want)
    if not non and not st:
        notes.append("both correct")
    else:
        if non == st:
            notes.append("built-in: " + ", ".join(non))
        else:
            if non:
                notes.append("built-in not streamed: " + ", ".join(non))
            if st:
                notes.append("built-in streamed: " + ", ".join(st))
    return "; ".join(notes) if our_diff or notes != ["both correct"] else "both correct"


def render_doc(results: dict[str, dict[str, Any]]) -> str:
    import sglang

    lines = [
        "# harmony-ext vs SGLang's built-in gpt-oss parsers",
        "",
        "Generated by `pages/sglang_comparison.py` (do not edit by hand); "
        f"regenerate with `{COMMAND}`.",
        f"SGLang {sglang.__version__}, harmony-ext {harmony_plugins.__version__}.",
        "",
        "Each output below (Harmony text as SGLang's detokenizer passes it on, after the prompt's "
        "`<|start|>assistant`) was served by SGLang's real `OpenAIServingChat` with only the model "
        "scripted: `--tool-call-parser`/`--reasoning-parser` `harmony-ext`, then `gpt-oss`. "
        "Columns show the non-streamed response (R reasoning, C content, calls, finish_reason); a "
        "second line gives the streamed result (one token per delta) where it differs. The "
        "verdict compares both with the contract (`docs/contract.md`); the expected values "
        "are a hand-written reading of the contract (`harmony_ext_testing/sglang_cases.py`). "
        "harmony-ext's rows are also checked by the tests "
        "(`tests/sglang/test_harmony_ext_parsers.py`), "
        "streamed in random token groups and, through the parser classes, in arbitrary "
        "character splits; the built-in's results are pinned case by case by "
        "`tests/sglang/test_sglang_builtin.py`, and `tests/sglang/test_comparison_page.py` "
        "regenerates this page and compares it with this file, on every SGLang tier.",
        "",
        "| case | harmony-ext | SGLang built-in (`gpt-oss`) | verdict |",
        "|---|---|---|---|",
    ]
    for case in CASES:
        ours, theirs = results[case.id][NAME], results[case.id]["gpt-oss"]
        our_cell = cell(ours["nonstream"])
        if ours["stream"] != ours["nonstream"]:
            our_cell += f"<br>streamed: {cell(ours['stream'])}"
        their_cell = cell(theirs["nonstream"])
        if theirs["stream"] != theirs["nonstream"]:
            their_cell += f"<br>streamed: {cell(theirs['stream'])}"
        note = case.note.replace("|", "\\|")
        lines.append(f"| `{case.id}`: {note} | {our_cell} | {their_cell} | "
                     f"{verdict(case, ours, theirs)} |")
    lines += ["", "What each parser costs per token as the output grows: "
              "[bench-sglang.md](bench-sglang.md) (`bash benchmarks/run.sh sglang`)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "sglang-comparison.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sglang-comparison-") as folder:
        chat = sglang_chat_runner(Path(folder))
        text = render_doc(record(chat, pieces_for(Path(folder) / "o200k_hf")))
    args.out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    if "harmony-ext wrong" in text:
        print("note: the page shows harmony-ext wrong somewhere; the tests say where",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
