"""harmony-ext parse on standard input: bad input is a one-line usage error, never a traceback.

The command line with files: tests/shell/test_cli_files.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str, stdin: str = "", env: dict | None = None, stdout=subprocess.PIPE):
    import os

    exe = Path(sys.executable).parent / "harmony-ext"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run scripts/setup_env.sh (the core tier installs the "
                    "command; a skip would pass the tier without the CLI)", pytrace=False)
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([str(exe), "parse", *args], input=stdin.encode(), stdout=stdout,
                          stderr=subprocess.PIPE, env=full_env, timeout=60)


def _one_line_usage_error(proc) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    assert "usage: harmony-ext parse" in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1


@pytest.mark.parametrize("stdin", ["[" + "1" * 5000 + "]", "[" * 100_000 + "]" * 100_000])
def test_cli_ids_unusable_json_is_a_usage_error(stdin):
    _one_line_usage_error(_cli("--input", "ids", stdin=stdin))


def test_cli_usage_error_shows_the_parse_usage():
    proc = _cli("--input", "ids", stdin="nope")
    _one_line_usage_error(proc)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_cli_write_error_is_one_line():
    with open("/dev/full", "wb") as full:
        proc = _cli(stdin="<|channel|>final<|message|>Hi", stdout=full)
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert "Traceback" not in err and "Exception ignored" not in err
    assert len(err.strip().splitlines()) == 1
    # the system's words for the error, not the exception's repr ("[Errno 28] ...")
    assert err.strip() == "harmony-ext: cannot write the output: No space left on device"


@pytest.mark.parametrize("stream", [False, True])
def test_cli_ascii_stdout(stream):
    text = "<|channel|>final<|message|>caf\u00e9 \U0001f99c"
    args = ("--stream",) if stream else ()
    proc = _cli(*args, stdin=text, env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode("ascii").splitlines()
    if stream:
        content = "".join(json.loads(line)["choices"][0]["delta"].get("content") or ""
                          for line in lines)
    else:
        content = json.loads(lines[0])["content"]
    assert content == "caf\u00e9 \U0001f99c"


def test_cli_stream_prints_a_chunk_for_each_delta_that_shows_something():
    """Text mode, one character per delta: the role chunk, one chunk per visible character
    (none for the header and the markers), then the finish chunk. Written from the contract's
    section 7."""
    proc = _cli("--stream", stdin="<|channel|>final<|message|>Hi<|return|>")
    assert proc.returncode == 0, proc.stderr.decode()
    chunks = [json.loads(line)["choices"] for line in proc.stdout.decode().splitlines()]
    assert [[c["index"] for c in choices] for choices in chunks] == [[0]] * 4  # one choice
    assert [(c[0]["delta"], c[0]["finish_reason"]) for c in chunks] == [
        ({"role": "assistant"}, None), ({"content": "H"}, None), ({"content": "i"}, None),
        ({}, "stop")]


@pytest.mark.parametrize("stdin, content", [
    ("<|channel|>final<|message|>Hi", "Hi"),
    ("<|channel|>final<|message|>Hi\n", "Hi"),  # the newline an editor or echo adds
    ("<|channel|>final<|message|>Hi\n\n", "Hi\n"),  # only that one
    ("<|channel|>final<|message|>Hi\r\n", "Hi\r"),
])
def test_cli_drops_one_trailing_newline_of_its_input(stdin, content):
    proc = _cli(stdin=stdin)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout)["content"] == content


REPORTED = ('<|channel|>final<|message|>Use <|end|> there.<|end|><|start|>assistant'
            '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
            '{"city":"Paris"}]<|call|>')


@pytest.mark.parametrize("stream", [False, True])
def test_cli_reports_what_it_applied_on_stderr(stream):
    """Contract section 7 (v5): the rules that fired with their text, each call's outcome and
    each suspected leak, one line each, on standard error; standard output is the OpenAI
    view alone. Written by hand from docs/rules.md."""
    args = ("--stream",) if stream else ()
    proc = _cli("--tool", "get_weather", *args, stdin=REPORTED)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines() == [
        "harmony-ext: rule free_text",
        "harmony-ext: rule after_json_value: \"]\"",
        "harmony-ext: call 0: surfaced",
    ]
    lines = proc.stdout.decode().splitlines()
    assert all(json.loads(line) for line in lines)  # every stdout line is the OpenAI view


_WITHOUT_JSONSCHEMA = ("import sys; sys.modules['jsonschema'] = None; "  # import fails
                      "from harmony_plugins.cli import main; sys.argv[0] = 'harmony-ext'; main()")


def test_cli_says_first_that_text_calls_need_jsonschema():
    """``--recover-text-calls`` without jsonschema recovers nothing and says so, before the
    rest of the report (the call below is written as text: it stays content)."""
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_JSONSCHEMA, "parse", "--recover-text-calls",
         "--tool", "get_weather"],
        input=REPORTED.replace("Use <|end|> there.", "to=functions.get_weather "
                               '{"city":"Rome"}').encode(),
        capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines() == [
        "harmony-ext: --recover-text-calls needs jsonschema (pip install "
        "'harmony-ext[schema]'): nothing recovered",
        "harmony-ext: rule after_json_value: \"]\"",
        "harmony-ext: call 0: surfaced",
    ]
    view = json.loads(proc.stdout)
    assert view["content"] == 'to=functions.get_weather {"city":"Rome"}'


def test_cli_reports_a_leak_and_an_undeclared_call():
    text = ("<|channel|>final<|message|>Type <|call|> to call.<|end|><|start|>assistant"
            "<|channel|>commentary to=functions.other<|message|>{}<|call|>")
    ids_text = json.dumps(_encode(text))
    proc = _cli("--input", "ids", "--tool", "get_weather", stdin=ids_text)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr.decode().splitlines() == [
        "harmony-ext: suspected leak: \"<|call|>\"",
        "harmony-ext: rule undeclared_function: \"{}\"",
    ]


def test_cli_reports_nothing_when_nothing_applied():
    proc = _cli(stdin="<|channel|>final<|message|>Hi<|return|>")
    assert proc.returncode == 0 and proc.stderr.decode() == ""


def _encode(text: str) -> list[int]:
    """Token ids, the control token <|call|> inside the answer written as ordinary text."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    head, rest = text.split("Type ", 1)
    plain, tail = rest.split(" to call.", 1)
    return (enc.encode(head + "Type ", allowed_special="all")
            + enc.encode(plain, disallowed_special=()) + enc.encode(" to call." + tail,
                                                                    allowed_special="all"))


def test_cli_recovers_a_call_written_as_text_only_when_asked():
    """Contract sections 7 and 10: --recover-text-calls, with --tool-choice saying what the
    request forced. A function declared by --tool has no schema: it takes any object, so a
    named call to it is recovered, but a bare JSON object never becomes its call, forced or not
    (tests/shell/test_cli_files.py gives a schema with --tools)."""
    text = '<|channel|>final<|message|>to=functions.get_weather {"city":"Paris"}<|return|>'
    asked = json.loads(_cli("--tool", "get_weather", "--recover-text-calls", stdin=text).stdout)
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in asked["tool_calls"]] == [
        ("get_weather", '{"city":"Paris"}')]
    assert (asked["content"], asked["finish_reason"]) == (None, "tool_calls")
    plain = json.loads(_cli("--tool", "get_weather", stdin=text).stdout)
    assert (plain["tool_calls"], plain["content"]) == ([], 'to=functions.get_weather '
                                                           '{"city":"Paris"}')
    bare = '<|channel|>final<|message|>{"city":"Paris"}<|return|>'
    for choice, calls in [("required", 0), ("get_weather", 0), ("auto", 0), ("none", 0)]:
        out = json.loads(_cli("--tool", "get_weather", "--recover-text-calls", "--tool-choice",
                              choice, stdin=bare).stdout)
        assert len(out["tool_calls"]) == calls, choice
    proc = _cli("--tool", "get_weather", "--recover-text-calls", stdin=text)
    assert "harmony-ext: rule call_written_as_text" in proc.stderr.decode().splitlines()


PARSE_OPTIONS = {"-h", "--help", "--input", "--tool", "--tools", "--finish", "--tool-choice",
                 "--recover-text-calls", "--stream"}
"""What ``harmony-ext parse`` takes, by hand from README's command-line section and
docs/core-api.md: the input's kind, the request's tools and ``tool_choice``, the finish, the
text-call recovery, streamed output; and the file (standard input by default)."""


def test_cli_help_lists_the_options():
    """README: ``--help`` lists the options. Exactly these: an option added or dropped without
    the docs fails here; ``demo --help`` (a control) lists none of ``parse``'s."""
    import re

    proc = _cli("--help")
    assert proc.returncode == 0, proc.stderr.decode()
    shown = proc.stdout.decode()
    assert set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", shown.split("options:", 1)[1])) \
        == PARSE_OPTIONS
    assert "file" in shown.split("positional arguments:", 1)[1].split("options:")[0]
    exe = Path(sys.executable).parent / "harmony-ext"
    demo = subprocess.run([str(exe), "demo", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert demo.returncode == 0
    assert set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", demo.stdout.split("options:", 1)[1])) \
        == {"-h", "--help"}


@pytest.mark.parametrize("encoding, escaped", [("utf-8", False), ("latin-1", True),
                                               ("x-no-such-codec", True), (None, True)])
def test_the_output_is_ascii_json_unless_standard_output_takes_any_character(
        monkeypatch, encoding, escaped):
    """A standard output that cannot encode every character (not a UTF encoding, one Python
    does not know, or none said) gets JSON with its non-ASCII characters escaped, which any
    encoding can write; a UTF one gets them as they are."""
    import io
    import json as json_module

    from harmony_plugins import cli

    class Out(io.StringIO):
        """Standard output as a terminal or pipe of that encoding would say it."""

        @property
        def encoding(self) -> str | None:  # type: ignore[override]
            return encoding

    out = Out()
    stdin = io.TextIOWrapper(io.BytesIO("<|channel|>final<|message|>Café.<|return|>".encode()),
                             encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr(cli, "_ENSURE_ASCII", cli._ENSURE_ASCII)  # put back after the test
    assert cli.main(["parse", "-"]) == 0
    printed = out.getvalue()
    assert json_module.loads(printed)["content"] == "Café."
    assert ("Caf\\u00e9." in printed, "Café." in printed) == (escaped, not escaped)
