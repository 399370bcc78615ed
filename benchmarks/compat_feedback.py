"""Per-token cost of ``compat.StreamableParser`` on a tool's result fed back, by its length.

    python -m benchmarks.compat_feedback                     # results of 2k and 16k tokens
    python -m benchmarks.compat_feedback --lengths 1k,4k,16k

Why: a caller that runs its tool loop through the drop-in parser (SGLang's built-in tools, an
RL harness) feeds it the model's call, the tool's result rendered as a message of its own, and
the model's next turn. Such a result can be long (a page fetched, a file read), and its cost
per token should not grow with it. Each stream is the call, a result of about N tokens
(``<|start|>functions.search_docs to=assistant<|channel|>commentary<|message|>...<|end|>``)
and a short answer, fed token by token, reading after each what a server reads (the content
delta, channel and recipient). The last figure is the longest result's cost per token over the
shortest's (flat: about 1x). No timing is judged; the exit status is 1 only when the parser
loses the result's text.
"""

from __future__ import annotations

import argparse
import random
import sys
from functools import partial
from typing import Any

from benchmarks.bench import label, lengths
from benchmarks.common import TOOLS, _lines, _prose, cpu_us_per_token, fmt

CALL = ('<|channel|>commentary to=functions.search_docs <|constrain|>json<|message|>'
        '{"query": "weather in Paris"}<|call|>')
RESULT = "<|start|>functions.search_docs to=assistant<|channel|>commentary<|message|>"
ANSWER = "<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>"


def stream(enc: Any, n: int) -> tuple[list[int], str]:
    """The token ids of the call, a result of about ``n`` tokens and the answer; and the
    result's text."""
    rng = random.Random(n)
    body = _lines(enc, n, lambda: _prose(rng))
    special = partial(enc.encode, allowed_special="all")
    return special(CALL) + special(RESULT) + body + special(ANSWER), enc.decode(body)


def feed(parser_class: Any, role: Any, ids: list[int]) -> Any:
    """One request: a fresh parser fed every token, read as a server reads it."""
    parser = parser_class(None, role, tools=TOOLS)
    process = parser.process
    for token in ids:
        process(token)
        parser.last_content_delta  # noqa: B018 - what a server reads per token
        parser.current_channel  # noqa: B018
        parser.current_recipient  # noqa: B018
    return parser.process_eos()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="2k,16k", help="comma-separated result lengths "
                    "in tokens (1k = 1024); the ratio is the last over the first")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per length (median)")
    args = ap.parse_args(argv)
    import openai_harmony as oh

    from harmony_plugins.compat import StreamableParser
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    cost = {}
    for n in lengths(args.lengths):
        ids, text = stream(enc, n)
        got = [m.content[0].text for m in feed(StreamableParser, oh.Role.ASSISTANT, ids).messages]
        if text not in got:
            print(f"compat_feedback: the {label(n)} result was not kept whole", file=sys.stderr)
            return 1
        cost[n] = cpu_us_per_token(partial(feed, StreamableParser, oh.Role.ASSISTANT, ids),
                                   len(ids), args.repeats)
        print(f"compat.StreamableParser, a tool result of {label(n)} tokens fed back: "
              f"{fmt(cost[n])} us/token ({len(ids):,} tokens)", flush=True)
    first, last = min(cost), max(cost)
    print(f"compat.StreamableParser, tool result fed back: {label(last)} / {label(first)} "
          f"per token {cost[last] / cost[first]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
