"""The ``harmony-ext`` command line (section 7 of the contract), plus ``demo``.

Exit status: 0 for any model output, however malformed; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import __version__
from .openai import ChatResult
from .parser import StreamParser

DEMO_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

DEMO_OUTPUTS = [
    (
        "reasoning, then the final answer",
        "<|channel|>analysis<|message|>User asks for 2 + 2. Simple.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>",
    ),
    (
        "a preamble, then a tool call with the recipient in the role section",
        "<|channel|>commentary<|message|>Let me check.<|end|>"
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>',
    ),
    (
        "malformed: a call on analysis with trailing junk, then the model forges a tool result",
        '<|channel|>analysis to=functions.get_weather<|message|>{"city": "Oslo"}]<|call|>'
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"t": 3}',
    ),
    (
        "malformed: no <|message|> after final, and a builtin tool the request did not declare",
        "<|channel|>analysis to=browser.search<|message|>{\"query\": \"x\"}<|end|>"
        "<|channel|>final The answer is 42.<|end|>",
    ),
]


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def _build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="harmony-ext",
        description="Turn gpt-oss (Harmony) model output into the OpenAI chat view.",
    )
    ap.add_argument("--version", action="version", version=f"harmony-ext {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "parse",
        help="parse one model output",
        description="Parse one model output (what the engine generated after the prompt's "
        "<|start|>assistant) and print the OpenAI view of it as JSON.",
    )
    p.add_argument("file", nargs="?", default="-",
                   help="input file, or - for standard input (default). In text mode a single "
                   "trailing newline, as editors and echo add, is not part of the output.")
    p.add_argument("--input", choices=("text", "ids"), default="text",
                   help="text with special tokens spelled literally (default), or a JSON array "
                   "of o200k_harmony token ids")
    p.add_argument("--tool", action="append", default=[], metavar="NAME",
                   help="a function the request declared (repeatable)")
    p.add_argument("--tools", metavar="FILE", help="the request's OpenAI tools JSON array")
    p.add_argument("--finish", choices=("stop", "length"), default="stop",
                   help="why the engine stopped (default: stop)")
    p.add_argument("--stream", action="store_true",
                   help="print chat.completion.chunk JSON lines, one delta per input token "
                   "(text mode: per character)")
    sub.add_parser("demo", help="parse a few embedded sample outputs and print the results")
    return ap


def _read_input(path: str, mode: str) -> str | list[int]:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    text = raw.decode("utf-8", errors="replace")
    if mode == "text":
        return text[:-1] if text.endswith("\n") else text
    try:
        ids = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--input ids needs a JSON array of token ids: {e}") from None
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        raise UsageError("--input ids needs a JSON array of integers, e.g. [200005, 35644]")
    return ids


def _read_tools(args: argparse.Namespace) -> list[Any]:
    tools: list[Any] = list(args.tool)
    if args.tools:
        try:
            data = json.loads(Path(args.tools).read_text(encoding="utf-8"))
        except OSError as e:
            raise UsageError(f"cannot read --tools {args.tools}: {e.strerror}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UsageError(f"--tools {args.tools} is not JSON: {e}") from None
        if isinstance(data, dict) and isinstance(data.get("tools"), list):
            data = data["tools"]
        if not isinstance(data, list):
            raise UsageError(f"--tools {args.tools} must hold an OpenAI tools array")
        tools.extend(data)
    return tools


def _units(data: str | list[int]) -> Iterator[str | list[int]]:
    """One input unit at a time: a token (ids) or a character (text)."""
    if isinstance(data, str):
        yield from data
    else:
        for token in data:
            yield [token]


def _feed(parser: StreamParser, unit: str | list[int]) -> list[Any]:
    return parser.feed_text(unit) if isinstance(unit, str) else parser.feed_ids(unit)


def _chunk(chunk_id: str, created: int, delta: dict[str, Any], finish: str | None) -> str:
    return json.dumps({
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": "gpt-oss",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }, ensure_ascii=False)


def run_parse(data: str | list[int], tools: list[Any], finish: str, stream: bool) -> None:
    parser = StreamParser(tools)
    result = ChatResult()
    if not stream:
        result.add(parser.feed_text(data) if isinstance(data, str) else parser.feed_ids(data))
        result.add(parser.close(finish))
        print(json.dumps(result.message(), ensure_ascii=False))
        return
    chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    print(_chunk(chunk_id, created, {"role": "assistant"}, None))
    for unit in _units(data):
        delta = result.add(_feed(parser, unit))
        if delta:
            print(_chunk(chunk_id, created, delta, None))
    delta = result.add(parser.close(finish))
    if delta:
        print(_chunk(chunk_id, created, delta, None))
    print(_chunk(chunk_id, created, {}, result.finish_reason))


def run_demo() -> None:
    from .o200k import tiktoken_encoding

    encoding = tiktoken_encoding()
    print(f"tools declared: {[t['function']['name'] for t in DEMO_TOOLS]}\n")
    for title, text in DEMO_OUTPUTS:
        ids = encoding.encode(text, allowed_special="all")
        print(f"== {title}\n   model output ({len(ids)} tokens): {text}")
        for mode, data in (("text", text), ("ids", ids)):
            parser = StreamParser(DEMO_TOOLS, id_factory=lambda: "call_demo")
            result = ChatResult()
            for unit in _units(data):
                result.add(_feed(parser, unit))
            result.add(parser.close())
            print(f"   {mode:4} streamed: {json.dumps(result.message(), ensure_ascii=False)}")
        print(f"   recoveries: {result.recoveries or 'none'}\n")


def main(argv: list[str] | None = None) -> int:
    ap = _build_parser()
    args = ap.parse_args(argv)
    try:
        if args.command == "demo":
            run_demo()
            return 0
        data = _read_input(args.file, args.input)
        run_parse(data, _read_tools(args), args.finish, args.stream)
    except UsageError as e:
        ap.error(str(e))  # prints usage and exits with status 2
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
