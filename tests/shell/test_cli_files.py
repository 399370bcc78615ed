"""The command line with files: the model output, ids and tools read from the paths given.

Tests of the I/O edge (they write their inputs into temporary folders); the command line's
behaviour on standard input is tested with the core (tests/test_contract.py, test_cli.py).
"""

from __future__ import annotations

import json

import pytest

from tests.test_cli import _cli as _cli_bytes
from tests.test_cli import _one_line_usage_error
from tests.test_contract import CLI_EXPECTED, CLI_TEXT, PARIS, cli, cli_json, encoding, norm


def test_cli_ids_file(tmp_path):
    ids = encoding().encode(CLI_TEXT, allowed_special="all")
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(ids))
    assert norm(cli_json("--input", "ids", "--tool", "get_weather", str(path))) == CLI_EXPECTED


def test_cli_tools_file(tmp_path):
    text = CLI_TEXT + ("<|start|>assistant<|channel|>commentary to=functions.get_time"
                       '<|message|>{"tz":"UTC"}<|call|>')
    expected = dict(CLI_EXPECTED, tool_calls=[("get_weather", PARIS),
                                              ("get_time", '{"tz":"UTC"}')])
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("get_weather", "get_time")]))
    assert norm(cli_json("--tools", str(tools), stdin=text)) == expected
    # --tool and --tools together: the union.
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "get_time"}}]))
    assert norm(cli_json("--tools", str(tools), "--tool", "get_weather", stdin=text)) == expected


def test_cli_recovers_a_forced_bare_object_only_for_a_constraining_schema(tmp_path):
    """Contract 10, --recover-text-calls: a bare JSON object where --tool-choice forces a call
    is a call to a function whose schema names properties and accepts it (required, or that
    function named); never to one whose schema takes any object, nor where nothing is forced."""
    bare = '<|channel|>final<|message|>{"city":"Paris"}<|return|>'
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}},
        {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}}]))
    for choice, calls in [("required", [["get_weather", PARIS]]),
                          ("get_weather", [["get_weather", PARIS]]), ("note", []),
                          ("auto", []), ("none", [])]:
        out = cli_json("--tools", str(tools), "--recover-text-calls", "--tool-choice", choice,
                       stdin=bare)
        assert [[c["function"]["name"], c["function"]["arguments"]]
                for c in out["tool_calls"]] == calls, choice
        assert out["content"] == (None if calls else PARIS), choice


def test_cli_text_file_and_dash(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text(CLI_TEXT, encoding="utf-8")
    assert norm(cli_json("--input", "text", "--tool", "get_weather", str(path))) == CLI_EXPECTED
    assert norm(cli_json("--tool", "get_weather", "-", stdin=CLI_TEXT)) == CLI_EXPECTED



def test_cli_bad_tools_json_exit_2(tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text("[{not json")
    proc = cli("--tools", str(tools), stdin="x")
    assert proc.returncode == 2
    assert proc.stderr.strip() and "Traceback" not in proc.stderr




@pytest.mark.parametrize("data", ['[{"type": "function", "function": {"name": "f", '
                                  '"x": ' + "9" * 5000 + "}}]",
                                  "[" * 100_000 + "]" * 100_000, '"get"', "[5]"])
def test_cli_tools_unusable_is_a_usage_error(tmp_path, data):
    path = tmp_path / "tools.json"
    path.write_text(data)
    _one_line_usage_error(_cli_bytes("--tools", str(path), stdin="x"))
