"""Hypothesis strategies for gpt-oss outputs, well-formed and malformed, as text and ids.

Body text is drawn from an alphabet of upper-case letters, digits and punctuation that no
header ever uses, so a test can count those characters in the input and in the events and
prove that every one of them was emitted once or dropped by a named rule.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import strategies as st

from harmony_plugins import ChatResult, Recovery, StreamParser
from harmony_plugins._events import ContentText, ReasoningText, ToolCallArguments
from harmony_plugins.harmony import SPELLINGS
from harmony_plugins.vocab.o200k import tiktoken_encoding

TOOLS = ["get_weather", "shell", "lookup", "web search"]
BODY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,!?\n"
COUNTED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")

MARKERS = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>",
           "<|call|>", "<|endoftext|>", "<|reserved_200017|>", "<|startoftext|>"]
# Junk markers may land anywhere outside a marker, <|channel|> and <|constrain|> included:
# body words then become header values (an unknown channel name, a content type), which the
# parser must still account for (a Recovery event carries them).

body_text = st.text(BODY_ALPHABET, min_size=0, max_size=30)


@st.composite
def json_args(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.text("ABCXYZ", min_size=1, max_size=4), max_size=3, unique=True))
    values = draw(st.lists(st.one_of(
        st.integers(0, 999).map(str),
        st.text('ABC {}[]\\"', max_size=6).map(lambda s: '"' + s.replace("\\", "\\\\")
                                                    .replace('"', '\\"') + '"'),
        st.just('{"N": [1, {"M": 2}]}'),
    ), min_size=len(keys), max_size=len(keys)))
    return "{" + ", ".join(f'"{k}": {v}' for k, v in zip(keys, values, strict=True)) + "}"


KINDS = ["analysis", "final", "preamble", "call", "builtin",
         # contract v2 shapes
         "role_channel", "forged", "free_text", "content_type_call", "spaced_call",
         "empty_recipient"]


@st.composite
def message(draw: st.DrawFn, first: bool) -> str:
    kind = draw(st.sampled_from(KINDS))
    start = "" if first else draw(st.sampled_from(["<|start|>assistant", "<|start|>assistant",
                                                   ""]))
    if kind == "role_channel":  # gpt-oss writes the channel where the role goes
        channel = draw(st.sampled_from(["analysis", "final", "commentary"]))
        return f"<|start|>{channel}<|message|>{draw(body_text)}<|end|>"
    if kind == "forged":  # the next turn, with or without <|start|> before the role
        role = draw(st.sampled_from(["user", "system", "functions.get_weather to=assistant"]))
        sep = draw(st.sampled_from(["<|start|>", ""]))
        return f"{sep}{role}<|channel|>commentary<|message|>{draw(body_text)}<|end|>"
    if kind == "free_text":  # text between messages (after <|end|>), no header marker
        return draw(st.text(BODY_ALPHABET, min_size=1, max_size=20))
    if kind in ("content_type_call", "spaced_call", "empty_recipient"):
        channel = draw(st.sampled_from(["commentary", "final", "analysis"]))
        body = draw(st.one_of(json_args(), body_text))
        if kind == "content_type_call":
            name = draw(st.sampled_from(["get_weather", "lookup", "undeclared"]))
            header = f"<|channel|>{channel} <|constrain|>functions.{name}"
        elif kind == "spaced_call":
            header = f"<|channel|>{channel} to=functions.web search <|constrain|>json"
        else:
            header = f"<|channel|>{channel} to= <|constrain|>json"
        return f"{start}{header}<|message|>{body}<|call|>"
    if kind == "call":
        name = draw(st.sampled_from(TOOLS + ["undeclared"]))
        channel = draw(st.sampled_from(["commentary", "analysis"]))
        ctype = draw(st.sampled_from([" <|constrain|>json", "<|constrain|>json", " json", ""]))
        body = draw(st.one_of(json_args(), body_text))
        junk = draw(st.sampled_from(["", "", "]", " TRAILING"]))
        end = draw(st.sampled_from(["<|call|>", "<|end|>"]))
        if draw(st.booleans()):
            header = f"{start} to=functions.{name}<|channel|>{channel}{ctype}"
        else:
            header = f"{start}<|channel|>{channel} to=functions.{name}{ctype}"
        return f"{header}<|message|>{body}{junk}{end}"
    if kind == "builtin":
        return (f"{start}<|channel|>analysis to=browser.search<|message|>"
                f"{draw(body_text)}<|call|>")
    channel = {"analysis": "analysis", "final": "final", "preamble": "commentary"}[kind]
    end = draw(st.sampled_from(["<|end|>", "<|return|>"] if kind == "final" else ["<|end|>"]))
    return f"{start}<|channel|>{channel}<|message|>{draw(body_text)}{end}"


@st.composite
def harmony_output(draw: st.DrawFn, malformed: bool = True,
                   markers: list[str] | None = None) -> str:
    """A whole model output as text; malformed ones get junk markers, headers, truncation."""
    n = draw(st.integers(1, 4))
    parts = [draw(message(first=i == 0)) for i in range(n)]
    text = "".join(parts)
    if malformed and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            pos = outside_markers(text, draw(st.integers(0, len(text))))
            junk = draw(st.sampled_from(markers or MARKERS))
            text = text[:pos] + junk + text[pos:]
    if malformed and draw(st.booleans()):
        text = draw(st.sampled_from(["<|start|>assistant junk<|end|>", "<|start|>user<|message|>X",
                                     "HEADERJUNK<|end|>", ""])) + text
    if malformed and draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


def outside_markers(text: str, pos: int) -> int:
    """Move pos out of any marker spelling it falls inside, so inserts never split one."""
    start = text.rfind("<|", 0, pos + 1)
    if start >= 0:
        end = text.find("|>", start)
        if end >= 0 and text[start : end + 2] in SPELLINGS and pos < end + 2:
            return end + 2
    return pos


def to_ids(text: str) -> list[int]:
    return tiktoken_encoding().encode(text, allowed_special="all")


@dataclass
class Run:
    message: dict
    recoveries: dict
    events: list


def run(units: list, mode: str, tools: list[str] | None = TOOLS, finish: str = "stop") -> Run:
    """Feed the given deltas; return the merged message, recovery counts and all events."""
    counter = itertools.count()
    parser = StreamParser(tools, id_factory=lambda: f"call_{next(counter)}")
    result = ChatResult()
    events: list = []
    feed = parser.feed_text if mode == "text" else parser.feed_ids
    for unit in units:
        new = feed(unit)
        events += new
        result.add(new)
    new = parser.close(finish)
    events += new
    result.add(new)
    return Run(result.message(), dict(result.recoveries), events)


def split(seq, cuts: list[int]) -> list:
    """Cut a string or list at the given positions."""
    points = sorted({c for c in cuts if 0 < c < len(seq)})
    return [seq[a:b] for a, b in itertools.pairwise([0, *points, len(seq)])]


def emitted_text(events: list) -> str:
    """All model text the events carry: reasoning, content, arguments, and dropped text."""
    out = []
    for e in events:
        if isinstance(e, ReasoningText | ContentText | ToolCallArguments | Recovery):
            out.append(e.text)
    return "".join(out)


def leaks(message: dict) -> list[str]:
    """Control-token spellings found in any output field."""
    fields = [message["reasoning"] or "", message["content"] or ""]
    fields += [c["function"]["arguments"] for c in message["tool_calls"]]
    return [s for f in fields if "<|" in f for s in SPELLINGS if s in f]
