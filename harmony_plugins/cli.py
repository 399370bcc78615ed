"""The ``harmony-ext`` command line (section 7 of the contract), plus ``demo`` and ``render``.

Exit status: 0 for any model output, however malformed; 2 for a usage error (one message
line after the subcommand's usage); 1 when the output cannot be written (a full disk, a
closed pipe), with one line on stderr. JSON is written with ``ensure_ascii`` when standard
output cannot encode all of Unicode (``PYTHONIOENCODING=ascii``).
"""

from __future__ import annotations

import argparse
import codecs
import datetime
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import __version__
from . import harmony as hm
from ._checks import schema_check_available
from ._demo import DEMO_OUTPUTS, DEMO_TOOLS
from ._events import LeakSuspected, Recovery, ToolCallEnd
from ._openai import ChatResult
from ._parser import StreamParser


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


_ENSURE_ASCII = False  # set by main() from standard output's encoding


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=_ENSURE_ASCII)


def _unicode_stdout() -> bool:
    """Whether standard output can encode any character (a UTF encoding)."""
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def _load_json(text: str, what: str) -> Any:
    """json.loads, with every way it can fail as a UsageError naming ``what``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{what} is not JSON: {e}") from None
    except RecursionError:
        raise UsageError(f"{what} is nested too deep") from None
    except ValueError as e:  # an integer of more than 4300 digits, say
        raise UsageError(f"{what} is not usable JSON: {e}") from None


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
        f"{hm.START_TOKEN}{hm.ASSISTANT}) and print the OpenAI view of it as JSON. What "
        "harmony-ext applied (each recovery rule with its text, each call's outcome, each "
        "suspected leak) is printed on standard error, one line each.",
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
    p.add_argument("--tool-choice", default="auto", metavar="auto|required|none|NAME",
                   help="what the request's tool_choice forced (default: auto); none surfaces "
                   "no call")
    p.add_argument("--recover-text-calls", action="store_true",
                   help="turn a visible message that is wholly a call written as text "
                   f"({hm.RECIPIENT}{hm.FUNCTIONS_PREFIX}NAME {{...}}; with --tool-choice "
                   "required or NAME also a bare JSON object) into that call, if the tool's "
                   "schema accepts it (needs jsonschema)")
    p.add_argument("--stream", action="store_true",
                   help="print chat.completion.chunk JSON lines, one delta per input token "
                   "(text mode: per character)")
    p.set_defaults(usage=p)
    sub.add_parser("demo", help="parse a few embedded sample outputs and print the results")
    r = sub.add_parser(
        "render",
        help="print the Harmony prompt a chat completions request becomes",
        description="Print the Harmony prompt a chat completions request (JSON: messages, "
        "tools, tool_choice, reasoning_effort) becomes with harmony-ext, markers spelled "
        "literally; a control-token spelling in the request's text is printed with its bars "
        "escaped (<\\|...\\|>). Tool definitions need openai-harmony.",
    )
    r.add_argument("file", nargs="?", default="-",
                   help="the request JSON file, or - for standard input (default)")
    r.add_argument("--ids", action="store_true",
                   help="print the o200k_harmony token ids (a JSON array) instead")
    r.add_argument("--date", metavar="YYYY-MM-DD",
                   help="the system message's current date (default: today, UTC)")
    r.set_defaults(usage=r)
    return ap


def _read_input(path: str, mode: str) -> str | list[int]:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    text = raw.decode("utf-8", errors="replace")
    if mode == "text":
        return text[:-1] if text.endswith("\n") else text
    ids = _load_json(text, "the --input ids input")
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        raise UsageError("--input ids needs a JSON array of integers, e.g. [200005, 35644]")
    return ids


def _read_tools(args: argparse.Namespace) -> list[Any]:
    tools: list[Any] = list(args.tool)
    if args.tools:
        try:
            text = Path(args.tools).read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot read --tools {args.tools}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise UsageError(f"--tools {args.tools} is not UTF-8: {e}") from None
        data = _load_json(text, f"--tools {args.tools}")
        if isinstance(data, dict) and isinstance(data.get("tools"), list):
            data = data["tools"]
        if not isinstance(data, list):
            raise UsageError(f"--tools {args.tools} must hold an OpenAI tools array")
        tools.extend(data)
    try:
        StreamParser(tools)  # the parser's own checks of the tools' shapes
    except TypeError as e:
        raise UsageError(f"--tools {args.tools}: {e}") from None
    return tools


def _tool_choice(value: str) -> Any:
    """``--tool-choice`` as a request's ``tool_choice``: a mode, or a named function."""
    if value in ("auto", "required", "none"):
        return value
    return {"type": "function", "function": {"name": value}}


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
    return _dumps({
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": "gpt-oss",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })


def run_parse(data: str | list[int], tools: list[Any], finish: str, stream: bool,
              tool_choice: Any = None, recover_text_calls: bool = False) -> list[str]:
    """Print the OpenAI view of one output; returns the report of what was applied."""
    parser = StreamParser(tools, tool_choice=tool_choice,
                          recover_text_calls=recover_text_calls)
    result = ChatResult()
    events: list[Any] = []
    if not stream:
        events += parser.feed_text(data) if isinstance(data, str) else parser.feed_ids(data)
        events += parser.close(finish)
        result.add(events)
        print(_dumps(result.message()))
        return report(events)
    chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    print(_chunk(chunk_id, created, {"role": "assistant"}, None))
    for unit in _units(data):
        fed = _feed(parser, unit)
        events += fed
        delta = result.add(fed)
        if delta:
            print(_chunk(chunk_id, created, delta, None))
    fed = parser.close(finish)
    events += fed
    delta = result.add(fed)
    if delta:
        print(_chunk(chunk_id, created, delta, None))
    print(_chunk(chunk_id, created, {}, result.finish_reason))
    return report(events)


def report(events: list[Any]) -> list[str]:
    """What harmony-ext applied to the output, one line each, for the person debugging it
    (printed on standard error, so standard output stays the OpenAI view): each recovery
    rule with the text it concerns (docs/rules.md says what each means), each call's outcome,
    each suspected leak. Nothing when nothing applied."""
    lines = []
    for event in events:
        if isinstance(event, Recovery):
            text = f": {_excerpt(event.text)}" if event.text else ""
            lines.append(f"harmony-ext: rule {event.rule}{text}")
        elif isinstance(event, ToolCallEnd):
            lines.append(f"harmony-ext: call {event.index}: {event.outcome}")
        elif isinstance(event, LeakSuspected):
            lines.append(f"harmony-ext: suspected leak: {_excerpt(event.excerpt)}")
    return lines


def _excerpt(text: str, limit: int = 80) -> str:
    """A text as a JSON string, cut at ``limit`` characters (marked)."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return json.dumps(cut, ensure_ascii=True)


def run_demo() -> None:
    print(f"tools declared: {[t['function']['name'] for t in DEMO_TOOLS]}\n")
    for title, text, ids in DEMO_OUTPUTS:
        print(f"== {title}\n   model output ({len(ids)} tokens): {text}")
        for mode, data in (("text", text), ("ids", ids)):
            parser = StreamParser(DEMO_TOOLS, id_factory=lambda: "call_demo")
            result = ChatResult()
            for unit in _units(data):
                result.add(_feed(parser, unit))
            result.add(parser.close())
            print(f"   {mode:4} streamed: {_dumps(result.message())}")
        print(f"   recoveries: {result.recoveries or 'none'}\n")


def _read_request(path: str, date: str | None) -> tuple[dict[str, Any], datetime.date | None]:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    request = _load_json(raw.decode("utf-8", errors="replace"), f"the request {path}")
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise UsageError("the request must be a JSON object with a 'messages' array")
    try:
        return request, datetime.date.fromisoformat(date) if date else None
    except ValueError:
        raise UsageError(f"--date {date!r} is not YYYY-MM-DD") from None


def run_render(request: dict[str, Any], today: datetime.date | None, ids: bool) -> None:
    """Raises NotRenderable (the request) or MissingExtra (openai-harmony, an encoder)."""
    from .prompt import _chat, _model
    from .prompt import _render as render
    from .vocabulary_files import load_openai_harmony

    messages = _chat.from_request(request, today=today)
    load_openai_harmony()  # offline, openai-harmony 0.0.8 needs its vocabulary written for it
    if not ids:
        print(render.prompt_text(messages))
        return
    try:
        from .vocab.o200k import tiktoken_encoding

        ordinary = tiktoken_encoding().encode_ordinary
    except ImportError:
        if render.loaded_encoding()[0] is None:
            raise render.MissingExtra("--ids needs an encoder: pip install "
                                      "'harmony-ext[tiktoken]'") from None
        ordinary = render.ordinary
    pieces = _model.prompt_pieces(messages, render.tools_section)
    print(_dumps(_model.encode(pieces, ordinary)))


def _silence_stdout() -> None:
    """After a write error: point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    global _ENSURE_ASCII
    ap = _build_parser()
    args = ap.parse_args(argv)
    _ENSURE_ASCII = not _unicode_stdout()
    try:
        if args.command == "demo":
            run_demo()
        elif args.command == "render":
            from .prompt import MissingExtra, NotRenderable

            try:
                request, today = _read_request(args.file, args.date)
                run_render(request, today, args.ids)
            except (UsageError, NotRenderable) as e:
                args.usage.error(str(e))  # exits 2
            except MissingExtra as e:
                print(f"harmony-ext render: {e}", file=sys.stderr)
                return 1
        else:
            try:
                data = _read_input(args.file, args.input)
                tools = _read_tools(args)
            except UsageError as e:
                args.usage.error(str(e))  # the parse usage line and the message; exits 2
            applied = run_parse(data, tools, args.finish, args.stream,
                                _tool_choice(args.tool_choice), args.recover_text_calls)
            if args.recover_text_calls and not schema_check_available():
                applied.insert(0, "harmony-ext: --recover-text-calls needs jsonschema "
                                  "(pip install 'harmony-ext[schema]'): nothing recovered")
            sys.stdout.flush()  # the OpenAI view first: a write error stops before the report
            for line in applied:
                print(line, file=sys.stderr)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head`): nothing more to say
        _silence_stdout()
    except OSError as e:
        _silence_stdout()
        print(f"harmony-ext: cannot write the output: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
