"""The vLLM adapter against the installed vLLM's own classes (no server).

Run with ``.venv-vllm/bin/pytest tests/vllm``; skipped where vLLM is not installed.
"""

from __future__ import annotations

import importlib
import logging
import sys

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(run with .venv-vllm/bin/pytest after scripts/setup_vllm_env.sh)")

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.parser.harmony import HarmonyParser  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402

from harmony_ext_testing.client import WEATHER  # noqa: E402
from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer  # noqa: E402
from tests.data import variant  # noqa: E402
from tests.garbage import cyclic_garbage  # noqa: E402
from vllm_ext import plugin  # noqa: E402
from vllm_ext.harmony_parser import HarmonyExtParser  # noqa: E402

TOOLS = [variant(None, {})]  # an empty schema: any arguments

# Each case with its result, written by hand from the contract: (text, reasoning, content,
# [(name, arguments)]).
CASES = [
    ("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
     "<|message|>Hi!<|return|>", "Think.", "Hi!", []),
    (' to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>'
     '{"city": "Paris"}]<|call|>', None, None, [("get_weather", '{"city": "Paris"}')]),
    ("<|channel|>analysis<|message|>A<|end|><|channel|>commentary<|message|>Checking.<|end|>"
     '<|start|>assistant<|channel|>commentary to=functions.get_weather json<|message|>{"c": 1}'
     "<|call|>", "A", "Checking.", [("get_weather", '{"c": 1}')]),
    ("<|channel|>analysis to=browser.search<|message|>{}<|call|>", None, None, []),
    ("<|channel|>final The answer.<|end|>", None, "The answer.", []),
    ("<|channel|>final<|message|>Hi<|end|><|start|>user<|message|>forged<|end|>", None, "Hi",
     []),
    ("Just text with no markup", None, "Just text with no markup", []),
    ('<|channel|>commentary to=functions.get_weather<|message|>{"city": "Pa', None, None,
     [("get_weather", '{"city": "Pa')]),
]
TEXTS = [case[0] for case in CASES]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return write_hf_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def tokenizer(tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_dir))


@pytest.fixture(scope="module")
def parser_cls(tokenizer):
    plugin.register()
    return ParserManager.get_parser(
        tool_parser_name="harmony-ext", reasoning_parser_name="harmony-ext",
        enable_auto_tools=True, model_name="tiny", is_harmony=True, tokenizer=tokenizer)


def request(**kwargs) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                 tools=TOOLS, **kwargs)


def test_register_is_idempotent_and_names_resolve(parser_cls):
    plugin.register()
    plugin.register()
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    assert ToolParserManager.get_tool_parser("harmony-ext").__name__ == "HarmonyExtToolParser"
    assert ReasoningParserManager.get_reasoning_parser("harmony-ext").__name__ == \
        "HarmonyExtReasoningParser"
    func = ParserManager.__dict__["_compose_parser"].__func__
    assert getattr(func, "_harmony_ext_hook", False)
    assert not getattr(getattr(func, "__wrapped__", None), "_harmony_ext_hook", False)


def test_hook_selects_ours_and_leaves_vllm_alone(parser_cls, tokenizer):
    assert issubclass(parser_cls, HarmonyExtParser) and issubclass(parser_cls, HarmonyParser)
    assert HarmonyParser.tool_parser_cls is None or "harmony_ext" not in str(
        HarmonyParser.tool_parser_cls)
    builtin = ParserManager.get_parser(
        tool_parser_name="openai", reasoning_parser_name="openai_gptoss",
        enable_auto_tools=True, model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    assert builtin is HarmonyParser
    mixed = ParserManager.get_parser(
        tool_parser_name="harmony-ext", reasoning_parser_name="openai_gptoss",
        enable_auto_tools=True, model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    assert issubclass(mixed, HarmonyExtParser)
    other_model = ParserManager.get_parser(
        tool_parser_name="harmony-ext", reasoning_parser_name="harmony-ext",
        enable_auto_tools=True, model_name="tiny", is_harmony=False, tokenizer=tokenizer)
    assert issubclass(other_model, HarmonyExtParser)


def cli_default_strict_level() -> object:
    """The installed vLLM's default for --tool-strict-level ("auto" in 0.32, None in 0.33)."""
    for module in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args"):
        try:
            args = importlib.import_module(module)
        except ImportError:
            continue
        for cls in vars(args).values():
            if isinstance(cls, type) and "tool_strict_level" in getattr(cls, "__annotations__", {}):
                return cls.tool_strict_level
    raise AssertionError("no --tool-strict-level default found in this vLLM")


def test_the_hook_takes_what_vllm_resolved_with_its_own_defaults(tokenizer):
    """vLLM 0.33 made --tool-strict-level default to None; the hook once crashed on it."""
    plugin.register()
    level = cli_default_strict_level()
    args = dict(enable_auto_tools=True, model_name="tiny", is_harmony=True,
                tool_strict_level=level, tokenizer=tokenizer)
    builtin = ParserManager.get_parser(tool_parser_name="openai",
                                       reasoning_parser_name="openai_gptoss", **args)
    vllm_resolved = builtin.tool_strict_level
    ours = ParserManager.get_parser(tool_parser_name="harmony-ext",
                                    reasoning_parser_name="harmony-ext", **args)
    assert issubclass(ours, HarmonyExtParser)
    assert ours.tool_strict_level == vllm_resolved
    assert ours.tool_parser_cls.__name__ == "HarmonyExtToolParser"
    assert ours.reasoning_parser_cls.__name__ == "HarmonyExtReasoningParser"
    # vLLM's shared class still carries what vLLM's own composition set on it.
    assert HarmonyParser.tool_parser_cls is builtin.tool_parser_cls
    # Without --enable-auto-tool-choice vLLM resolves no tool parser; ours follows.
    no_auto = ParserManager.get_parser(tool_parser_name="harmony-ext",
                                       reasoning_parser_name="harmony-ext",
                                       **{**args, "enable_auto_tools": False})
    assert no_auto.tool_parser_cls is None
    assert no_auto.reasoning_parser_cls.__name__ == "HarmonyExtReasoningParser"


def test_a_failure_in_the_hook_is_one_log_line_and_a_clean_exit(tokenizer, monkeypatch,
                                                                   caplog):
    plugin.register()
    caplog.clear()  # what registering said (on a vLLM outside the checked set, a warning)

    def broken(*args):
        raise KeyError("tool_strict_level")

    monkeypatch.setattr(plugin, "parser_class", broken)
    with caplog.at_level(logging.ERROR, logger="vllm.harmony_ext"), \
            pytest.raises(SystemExit) as exit_info:
        ParserManager.get_parser(
            tool_parser_name="harmony-ext", reasoning_parser_name="harmony-ext",
            enable_auto_tools=True, model_name="tiny", is_harmony=True,
            tool_strict_level=cli_default_strict_level(), tokenizer=tokenizer)
    assert exit_info.value.code == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "vllm.harmony_ext"]
    assert len(lines) == 1
    assert lines[0].startswith(f"harmony-ext: on vLLM {vllm.__version__}, building the "
                               "parser failed: KeyError: 'tool_strict_level'.")
    assert "supports vLLM 0.32, 0.33, 0.34" in lines[0]


@pytest.mark.parametrize(("version", "warned"), [
    (vllm.__version__, False), ("0.32.1", False), ("0.33.0", False), ("0.34.0", False),
    ("0.31.0", True), ("0.35.0", True), ("1.0.0", True),
])
def test_a_vllm_outside_the_checked_set_is_warned_about(monkeypatch, caplog, version, warned):
    """0.32, 0.33 and 0.34 each have a tier; another version gets one warning line."""
    monkeypatch.setattr(vllm, "__version__", version)
    with caplog.at_level(logging.INFO, logger="vllm.harmony_ext"):
        plugin.register()
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "vllm.harmony_ext" and r.levelno == logging.WARNING]
    assert warnings == ([f"harmony-ext: vLLM {version} is outside the checked range "
                         "(0.32, 0.33, 0.34); the hook points exist, so it is enabled anyway."]
                        if warned else [])


@pytest.mark.parametrize(("argv", "selected"), [
    (["vllm", "serve", "m", "--tool-call-parser", "harmony-ext"], True),
    (["vllm", "serve", "m", "--reasoning-parser=harmony-ext"], True),
    (["vllm", "serve", "m", "--reasoning_parser", "harmony-ext"], True),
    (["vllm", "serve", "m", "--tool-call-parser", "openai", "--reasoning-parser",
      "openai_gptoss"], False),
    (["vllm", "serve", "harmony-ext"], False),
    (["vllm", "serve", "m", "--tool-call-parser"], False),
])
def test_the_rust_front_end_bypass_is_said_once(argv, selected, caplog):
    env = {"VLLM_USE_RUST_FRONTEND": "1"}
    with caplog.at_level(logging.WARNING, logger="vllm.harmony_ext"):
        assert plugin.warn_if_bypassed(argv, env) is selected
        assert plugin.warn_if_bypassed(argv, env) is False  # once per server
    warnings = [r.getMessage() for r in caplog.records if r.name == "vllm.harmony_ext"]
    assert len(warnings) == int(selected)
    if selected:
        assert "the server will not start" in warnings[0]
    # The Rust front end off (or set to 0): nothing to say.
    assert plugin.warn_if_bypassed(argv, {"VLLM_USE_RUST_FRONTEND": "0"}) is False
    assert plugin.warn_if_bypassed(argv, {}) is False


def test_register_warns_about_the_rust_front_end(monkeypatch, caplog):
    monkeypatch.setattr(sys, "argv", ["vllm", "serve", "m", "--tool-call-parser", "harmony-ext"])
    monkeypatch.setenv("VLLM_USE_RUST_FRONTEND", "1")
    # set (empty: not yet warned), so that the mark register() writes is undone afterwards;
    # a mark left in this process's environment would silence the servers later tests start
    monkeypatch.setenv("HARMONY_EXT_BYPASS_WARNED", "")
    with caplog.at_level(logging.WARNING, logger="vllm.harmony_ext"):
        plugin.register()
    assert any("Rust front end" in r.getMessage() for r in caplog.records)


def test_a_non_harmony_tokenizer_is_refused_at_start_up(tmp_path):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    plugin.register()
    wordpiece = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")))
    with pytest.raises(TypeError, match="harmony-ext.*not byte-level BPE|not a Harmony"):
        ParserManager.get_parser(
            tool_parser_name="harmony-ext", reasoning_parser_name="harmony-ext",
            enable_auto_tools=True, model_name="bert", is_harmony=False, tokenizer=wordpiece)


@pytest.mark.parametrize("text, reasoning, content, calls", CASES)
def test_parse_and_parse_delta_follow_the_contract(parser_cls, tokenizer, text, reasoning,
                                                   content, calls):
    ids = tokenizer.encode(text)
    want = {"reasoning": reasoning, "content": content, "calls": calls}
    reasoning, content, calls = parser_cls(tokenizer, TOOLS).parse("", request(), True, ids)
    got = {"reasoning": reasoning, "content": content,
           "calls": [(c.name, c.arguments) for c in calls or []]}
    assert got == want
    ids_seen = {c.id for c in calls or []}
    assert len(ids_seen) == len(calls or [])

    for size in (1, 3):
        parser = parser_cls(tokenizer, TOOLS)
        reasoning_parts, content_parts, args = [], [], {}
        names = {}
        chunks = [ids[i : i + size] for i in range(0, len(ids), size)]
        for n, chunk in enumerate(chunks):
            delta = parser.parse_delta("", chunk, request(), finished=n == len(chunks) - 1)
            if delta is None:
                continue
            reasoning_parts.append(delta.reasoning or "")
            content_parts.append(delta.content or "")
            for call in delta.tool_calls:
                if call.function.name:
                    names[call.index] = call.function.name
                args[call.index] = args.get(call.index, "") + (call.function.arguments or "")
        streamed = {"reasoning": "".join(reasoning_parts) or None,
                    "content": "".join(content_parts) or None,
                    "calls": [(names[i], args[i]) for i in sorted(args)]}
        assert streamed == want


def test_a_finished_request_leaves_nothing_for_the_cyclic_collector(parser_cls, tokenizer):
    """The parser and its turn hold no cycle once the last delta is parsed: a server's
    finished requests are freed at once."""
    ids = tokenizer.encode(TEXTS[0])

    def run() -> None:
        parser = parser_cls(tokenizer, TOOLS)
        for k, i in enumerate(ids):
            parser.parse_delta("", [i], request(), finished=k == len(ids) - 1)

    assert cyclic_garbage(run) == 0


def test_include_reasoning_false_hides_reasoning_in_deltas(parser_cls, tokenizer):
    ids = tokenizer.encode(TEXTS[0])
    parser = parser_cls(tokenizer, TOOLS)
    deltas = [parser.parse_delta("", [i], request(include_reasoning=False),
                                 finished=k == len(ids) - 1) for k, i in enumerate(ids)]
    assert all(d is None or d.reasoning is None for d in deltas)
    assert "".join(d.content or "" for d in deltas if d) == "Hi!"


def test_count_reasoning_tokens(parser_cls, tokenizer):
    ids = tokenizer.encode(TEXTS[0])
    parser = parser_cls(tokenizer, TOOLS)
    parser.parse("", request(), True, ids)
    assert parser.count_reasoning_tokens(ids) == len(tokenizer.encode("Think."))
    fresh = parser_cls(tokenizer, TOOLS)  # ids it never saw: counted afresh
    assert fresh.count_reasoning_tokens(ids) == len(tokenizer.encode("Think."))


def test_responses_segments_and_messages(parser_cls, tokenizer):
    text = TEXTS[2]
    ids = tokenizer.encode(text)
    parser = parser_cls(tokenizer, TOOLS)
    segments = []
    reasoning_tokens = 0
    for chunk in (ids[i : i + 2] for i in range(0, len(ids), 2)):
        result = parser.process_chunk(list(chunk))
        segments += result.segments
        reasoning_tokens += result.reasoning_token_count
    segments += parser.flush()
    assert all(not (s.delta and s.completed_message) for s in segments)
    messages = [s.completed_message for s in segments if s.completed_message is not None]
    summary = [(m.channel, m.recipient, m.content[0].text) for m in messages]
    assert summary == [("analysis", None, "A"), ("commentary", None, "Checking."),
                       ("commentary", "functions.get_weather", '{"c": 1}')]
    deltas = "".join(s.delta for s in segments if s.recipient == "functions.get_weather")
    assert deltas == '{"c": 1}'
    assert reasoning_tokens == 1
    assert parser.flush() == []  # nothing open: nothing to complete


def test_deltas_are_built_without_the_harmless_validator_and_equal_validated_ones(
        parser_cls, tokenizer, monkeypatch):
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
    )

    from harmony_plugins.adapter_support import models
    from vllm_ext import deltas

    # On the pinned vLLM the outermost validator of the two vLLM models is the harmless one,
    # so every parse_delta test of this file ran without it.
    assert models.skipped_wrap(DeltaMessage, deltas.HARMLESS, "vllm") is not None
    assert models.skipped_wrap(DeltaToolCall, deltas.HARMLESS, "vllm") is not None

    def stream(text: str, size: int) -> list:
        ids = tokenizer.encode(text)
        parser = parser_cls(tokenizer, TOOLS)
        chunks = [ids[i : i + size] for i in range(0, len(ids), size)]
        return [parser.parse_delta("", c, request(), finished=n == len(chunks) - 1)
                for n, c in enumerate(chunks)]

    def shape(delta) -> object:
        if delta is None:
            return None
        calls = [(c.model_fields_set, c.function.model_fields_set,
                  c.model_dump_json(exclude_unset=True, exclude={"id"})) for c in delta.tool_calls]
        return (type(delta), delta.model_fields_set, delta.reasoning, delta.content, calls,
                delta.model_dump_json(exclude_unset=True, exclude={"tool_calls"}))

    fields_seen = set()
    built = {}
    for text in TEXTS:
        for size in (1, 2):
            built[text, size] = [shape(d) for d in stream(text, size)]
            fields_seen |= {tuple(sorted(d[1])) for d in built[text, size] if d}
    assert {("content",), ("reasoning",), ("tool_calls",)} <= fields_seen

    # vLLM's own constructors, every validator run: the same deltas
    monkeypatch.setattr(deltas, "message", lambda fields: DeltaMessage(**fields))
    monkeypatch.setattr(deltas, "tool_call", lambda fields: DeltaToolCall(**fields))
    monkeypatch.setattr(deltas, "function", lambda fields: DeltaFunctionCall(**fields))
    for (text, size), want in built.items():
        assert [shape(d) for d in stream(text, size)] == want, (text, size)


def test_a_validator_vllm_adds_to_a_delta_runs():
    """A delta model with a validator besides vLLM's harmless one: it runs."""
    from pydantic import field_validator
    from vllm.entrypoints.generate.base.protocol import DeltaMessage

    from harmony_plugins.adapter_support import models
    from vllm_ext import deltas

    class Stripping(DeltaMessage):
        @field_validator("content")
        @classmethod
        def _strip(cls, value):
            return value.strip() if value else value

    assert models.validator(Stripping, deltas.HARMLESS, "vllm")({"content": " a "}).content == "a"


SCHEMA_TOOLS = [WEATHER]


def call(name: str, arguments: str) -> str:
    return (f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
            f"{arguments}<|call|>")


@pytest.mark.parametrize("text, outcomes", [
    (call("get_weather", '{"city": "Paris"}'), {"surfaced": 1}),
    (call("get_weather", '{"city": 3}'), {"schema_mismatch": 1}),
    (call("get_weather", "[1]"), {"not_object": 1}),
    (call("get_weather", "city=Paris"), {"invalid_json": 1}),
    (call("get_time", "{}"), {"undeclared": 1}),
])
def test_the_request_s_full_tools_reach_the_checks(parser_cls, tokenizer, monkeypatch, text,
                                                   outcomes):
    from harmony_plugins.adapter_support.metrics import Counting

    seen = []
    monkeypatch.setattr(Counting, "report", lambda self, summary, request_id: seen.append(summary))
    req = ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                tools=SCHEMA_TOOLS)
    parser_cls(tokenizer, req.tools).parse("", req, True, tokenizer.encode(text))
    assert [s.outcomes for s in seen] == [outcomes]


def test_counters_move_in_the_default_registry(parser_cls, tokenizer):
    from prometheus_client import REGISTRY

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = (value("harmony_ext_responses_total"),
              value("harmony_ext_tool_calls_total", outcome="schema_mismatch"),
              value("harmony_ext_recoveries_total", rule="after_json_value"))
    req = ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                tools=SCHEMA_TOOLS)
    ids = tokenizer.encode(call("get_weather", '{"city": 3}]'))
    parser_cls(tokenizer, req.tools).parse("", req, True, ids)
    after = (value("harmony_ext_responses_total"),
             value("harmony_ext_tool_calls_total", outcome="schema_mismatch"),
             value("harmony_ext_recoveries_total", rule="after_json_value"))
    assert [b - a for a, b in zip(before, after, strict=True)] == [1.0, 1.0, 1.0]


def test_prompt_hook_renders_analysis_first_only_with_harmony_ext(tokenizer, monkeypatch):
    from vllm.entrypoints.openai.parser import harmony_utils

    from vllm_ext import prompt

    plugin.register()
    turn = {"role": "assistant", "content": "Checking.", "reasoning": "Think.",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"}}]}

    def rendered() -> list[tuple[str | None, str | None, str]]:
        messages = harmony_utils.parse_chat_inputs_to_harmony_messages([turn])
        return [(m.channel, m.recipient, m.content[0].text) for m in messages]

    monkeypatch.setattr(prompt, "_active", False)  # no harmony-ext parser in this process
    assert rendered() == [("commentary", None, "Checking."), ("analysis", None, "Think."),
                          ("commentary", "functions.get_weather", "{}")]
    ParserManager.get_parser(
        tool_parser_name="harmony-ext", reasoning_parser_name="harmony-ext",
        enable_auto_tools=True, model_name="tiny", is_harmony=True,
        tool_strict_level=cli_default_strict_level(), tokenizer=tokenizer)
    assert prompt._active
    assert rendered() == [("analysis", None, "Think."), ("commentary", None, "Checking."),
                          ("commentary", "functions.get_weather", "{}")]
    # Other roles and turns without analysis come back as vLLM built them.
    user = {"role": "user", "content": "hi"}
    assert [m.content[0].text for m in
            harmony_utils.parse_chat_inputs_to_harmony_messages([user])] == ["hi"]



COMPOSE_MANY = r"""
import sys
from transformers import AutoTokenizer
from vllm.parser.harmony import HarmonyParser
from vllm.parser.parser_manager import ParserManager
from vllm_ext import plugin
from vllm_ext.parsers import HarmonyExtReasoningParser, HarmonyExtToolParser

MISSING = object()
KEYS = ("reasoning_parser_cls", "tool_parser_cls", "tool_strict_level")
before = {k: HarmonyParser.__dict__.get(k, MISSING) for k in KEYS}
plugin.register()
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
ours = (HarmonyExtToolParser, HarmonyExtReasoningParser)
for names in [("harmony-ext", "harmony-ext"), ("harmony-ext", "openai_gptoss"),
              ("openai", "harmony-ext")] * 3:
    composed = ParserManager.get_parser(
        tool_parser_name=names[0], reasoning_parser_name=names[1], enable_auto_tools=True,
        model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    assert composed is not HarmonyParser, names
after = {k: HarmonyParser.__dict__.get(k, MISSING) for k in KEYS}
assert after == before, (before, after)
for k in KEYS:
    value = getattr(HarmonyParser, k, None)
    assert not (isinstance(value, type) and issubclass(value, ours)), (k, value)
print("vLLM's class as vLLM set it")
"""


def test_vllms_class_stays_vllms_after_any_number_of_compositions(tokenizer_dir):
    """In a fresh process (no earlier composition): whatever HarmonyParser held before the
    first ``harmony-ext`` composition, it holds after nine, and never one of our classes."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", COMPOSE_MANY, str(tokenizer_dir)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "vLLM's class as vLLM set it" in done.stdout
