"""docs/multi-turn-sglang.md: the turn sent back, as SGLang hands it to the model.

    bash pages/run.sh multi-turn-sglang      # .venv-sglang; writes docs/multi-turn-sglang.md

For each round trip of ``harmony_ext_testing/sglang_round_trips.py`` (turn 1 parsed by
harmony-ext and sent back with the tool results, through SGLang's real ``OpenAIServingChat``
with the model scripted), the end of the prompt for turn 2 *after* (harmony-ext's parsers
selected, so its prompt rendering) and *before* (SGLang's own ``gpt-oss`` parsers and the
suite's stand-in template). Recorded, not judged: the tests
(``tests/sglang/test_round_trip.py``) hold *after* to contract section 8, token by token.
Nothing is written but the page (``--out``); the model folder is a temporary one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from harmony_ext_testing.client import WEATHER
from harmony_ext_testing.sglang_round_trips import (
    NEXT,
    ROUND_TRIPS,
    answered,
    history,
    prompt_ids,
    show,
    split,
)
from pages.sglang_comparison import sglang_chat_runner

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "bash pages/run.sh multi-turn-sglang"


def before_text(sglang_chat: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
           encoding: Any) -> str:
    """SGLang's own path (``gpt-oss`` parsers, stand-in template): its prompt from the user's
    message on, or the error it answers."""
    answer = sglang_chat(NEXT, stream=False, tools=tools, messages=messages,
                         tool_parser="gpt-oss", reasoning_parser="gpt-oss", send_raw=True)
    if not answer.requests:
        return f"(no prompt: HTTP {answer.body.get('code')}: {answer.body.get('message')})"
    text = show(encoding, answer.prompts[0])
    return text[text.index("<|start|>user"):]


def record(folder: Path) -> dict[str, dict[str, str]]:
    """round-trip id (and ``final_answer``) -> {"before": ..., "after": ...}."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    os.environ.pop("HARMONY_EXT_CHAT_TEMPLATE", None)  # harmony-ext renders, as in the tests
    encoding = tiktoken_encoding()
    chat = sglang_chat_runner(folder)
    rendered: dict[str, dict[str, str]] = {}
    for trip in ROUND_TRIPS:
        messages = history(chat, trip)
        _, tail = split(prompt_ids(chat, messages, list(trip.tools)), encoding)
        rendered[trip.id] = {"before": before_text(chat, messages, list(trip.tools), encoding),
                             "after": show(encoding, tail)}
        print(f"{trip.id}: recorded", file=sys.stderr)
    _, messages = answered(chat)
    _, tail = split(prompt_ids(chat, messages, [WEATHER]), encoding)
    rendered["final_answer"] = {"before": before_text(chat, messages, [WEATHER], encoding),
                                "after": show(encoding, tail)}
    return rendered


def render_page(rendered: dict[str, dict[str, str]]) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    lines = [
        "# Multi-turn on SGLang: the turn sent back, as the model reads it",
        "",
        f"Generated on {now} against SGLang {version('sglang')} (its real `OpenAIServingChat`, "
        "the model replaced by a scripted stand-in) by `pages/multi_turn_sglang.py`, from the "
        "cases of `harmony_ext_testing/sglang_round_trips.py`; regenerate with",
        f"`{COMMAND}`.",
        "",
        "Turn 1 is parsed by harmony-ext; the parsed message goes back with the tool results, as",
        "an agent loop sends it. Each block is the end of the prompt SGLang hands the model for",
        "turn 2, from the user's message on (the system and developer messages are left out).",
        "`<|end|>` is a control token; `<\\|end\\|>` is the same spelling as ordinary text tokens.",
        "",
        "*After*: `--tool-call-parser harmony-ext --reasoning-parser harmony-ext` on a gpt-oss",
        "model: harmony-ext renders the prompt with `openai_harmony` (`sglang_ext/prompt.py`).",
        "The tests hold it to a rendering written by hand from contract section 8, token by",
        "token. Calls use gpt-oss's canonical header (as vLLM 0.32/0.33 render it too):",
        "",
        "    <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>",
        "",
        "openai_harmony 0.0.11 on its own writes the newer form, which gpt-oss can echo back as",
        "a malformed header:",
        "",
        "    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json"
        "<|message|>",
        "",
        "*Before*: SGLang's own `gpt-oss` parsers, i.e. SGLang's chat-template path. gpt-oss's",
        "published chat template is not available offline, so this runs with the test suite's",
        "stand-in template (each message as `<|start|>ROLE<|message|>CONTENT<|end|>`, string",
        "content only): it shows what SGLang itself does to the messages before any template",
        "(a `reasoning` key is dropped by its request model; call arguments are parsed into a",
        "dict, and arguments that are not a JSON object are answered with HTTP 400), not what",
        "gpt-oss's own template would print. Of that template, public reports say: it reads",
        "analysis from a `thinking` key (SGLang passes `reasoning_content`, so it is lost),",
        "renders `content` of a tool-calling turn as analysis (the preamble becomes analysis),",
        "raises when both are present, and writes `arguments|tojson` (a string argument becomes",
        "a quoted JSON string).",
        "",
    ]
    for trip in ROUND_TRIPS:
        r = rendered[trip.id]
        lines += [f"## `{trip.id}`: {trip.title}", "",
                  f"Model output ({'streamed' if trip.stream else 'not streamed'}): "
                  f"`{trip.script}`", "", "Before:", "", "```", r["before"], "```", "",
                  "After:", "", "```", r["after"], "```", ""]
    r = rendered["final_answer"]
    lines += ["## `final_answer`: the analysis dropped after a final answer", "",
              "The tool turn of `preamble_call`, then the answer (analysis `Got it.`, final",
              "`Sunny in Paris.`) sent back with a new user message.", "", "Before:", "",
              "```", r["before"], "```", "", "After:", "", "```", r["after"], "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "multi-turn-sglang.md")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="multi-turn-sglang-") as folder:
        text = render_page(record(Path(folder)))
    args.out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
