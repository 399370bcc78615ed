"""docs/multi-turn-vllm.md: the turn sent back, as the model reads it on vLLM.

    bash pages/run.sh multi-turn-vllm        # .venv-vllm; writes docs/multi-turn-vllm.md

Starts two tiny CPU vLLM servers (harmony-ext's parsers, and vLLM's built-in ones, where
harmony-ext's prompt hook is inactive); for each round trip of
``harmony_ext_testing/vllm_round_trips.py`` turn 1 is parsed by harmony-ext and sent back with
the tool results, and the end of the prompt each server renders for turn 2 is recorded: *after*
and *before*. Nothing is judged here: the tests (``tests/e2e_vllm/test_round_trip.py``) hold
*after* to contract section 8, token by token. Nothing but the page (``--out``) is written; the
servers' logs go to a temporary folder.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

from harmony_ext_testing.renderings import token_ids, user
from harmony_ext_testing.vllm_cases import server_version
from harmony_ext_testing.vllm_round_trips import (
    ROUND_TRIPS,
    USER,
    answered,
    client_for,
    history,
    prompt_ids,
    show,
)
from harmony_ext_testing.vllm_server import BUILTIN_ENV, STORE_ENV, tiny_vllm_server

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "bash pages/run.sh multi-turn-vllm"


def record(ext_url: str, builtin_url: str) -> dict[str, dict[str, str]]:
    """round-trip id -> {"before": ..., "after": ...}; ``final_answer`` -> {"after": ...}."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    encoding = tiktoken_encoding()
    marker = token_ids(encoding, user(USER))

    def from_user(ids: list[int]) -> str:
        """The prompt from the user's (first) message on, decoded."""
        starts = [i for i in range(len(ids)) if ids[i:i + len(marker)] == marker]
        return show(encoding, ids[starts[0]:] if starts else ids)

    ext, builtin = client_for(ext_url), client_for(builtin_url)
    rendered: dict[str, dict[str, str]] = {}
    for trip in ROUND_TRIPS:
        messages = history(ext, trip)
        rendered[trip.id] = {"before": from_user(prompt_ids(builtin, messages, trip.tools)),
                             "after": from_user(prompt_ids(ext, messages, trip.tools))}
        print(f"{trip.id}: recorded", file=sys.stderr)
    _, messages = answered(ext)
    rendered["final_answer"] = {"after": from_user(prompt_ids(ext, messages,
                                                              ROUND_TRIPS[0].tools))}
    return rendered


def render_page(rendered: dict[str, dict[str, str]], vllm_version: str) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    lines = [
        "# Multi-turn on vLLM: the turn sent back, as the model reads it",
        "",
        f"Generated on {now} against vLLM {vllm_version} (CPU, tiny gpt-oss model, scripted "
        "output) by `pages/multi_turn_vllm.py`, from the cases of",
        f"`harmony_ext_testing/vllm_round_trips.py`; regenerate with `{COMMAND}`.",
        "",
        "Turn 1 is parsed by harmony-ext; the `openai` client sends the parsed message back with",
        "the tool results. Each block is the end of the prompt vLLM renders for turn 2 (from the",
        "user's message on): *before* from a server with vLLM's own parsers (harmony-ext's",
        "prompt hook inactive), *after* with `--tool-call-parser harmony-ext",
        "--reasoning-parser harmony-ext`. The tests hold *after* to the rendering written by",
        "hand from contract section 8, token by token.",
        "",
    ]
    for trip in ROUND_TRIPS:
        r = rendered[trip.id]
        same = "same as after" if r["before"] == r["after"] else "differs"
        lines += [f"## `{trip.id}`: {trip.title}", "", f"Model output: `{trip.script}`", "",
                  f"Before ({same}):", "", "```", r["before"], "```", "", "After:", "", "```",
                  r["after"], "```", ""]
    if "final_answer" in rendered:
        lines += ["## `final_answer`: the analysis dropped after a final answer", "", "After:",
                  "", "```", rendered["final_answer"]["after"], "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "multi-turn-vllm.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="multi-turn-vllm-") as folder:
        logs = Path(folder)
        with tiny_vllm_server(logs / "harmony-ext.log", env=STORE_ENV) as ext, \
                tiny_vllm_server(logs / "builtin.log", env=BUILTIN_ENV) as builtin:
            version = server_version(ext)
            rendered = record(ext, builtin)
    args.out.write_text(render_page(rendered, version))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
