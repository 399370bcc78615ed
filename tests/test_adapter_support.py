"""harmony_plugins.adapter_support: the helpers both adapters share (no engine needed)."""

from __future__ import annotations

import logging
import types

import pytest

from harmony_plugins.adapter_support.command_line import may_select, selects
from harmony_plugins.adapter_support.hooks import MARK, wrap_once, wrapped
from harmony_plugins.adapter_support.once import Once
from harmony_plugins.adapter_support.versions import release


def test_release_reads_the_leading_numbers():
    assert release("0.5.23") == (0, 5, 23)
    assert release("0.5.22rc1") == (0, 5, 22)
    assert release("0.5.9.post2") == (0, 5, 9)
    assert release("0.33.0+cpu") == (0, 33, 0)
    assert release("0.6") == (0, 6)
    assert release("unknown") == ()
    assert release("0.5.21") < (0, 5, 22) <= release("0.6")


def _twice(func):
    def wrapper(*args):
        return 2 * func(*args)
    return wrapper


def test_wrap_once_wraps_a_module_function_once():
    module = types.SimpleNamespace(f=lambda x: x + 1)
    assert wrap_once(module, "f", _twice)
    assert not wrap_once(module, "f", _twice)  # a second plugin load: left alone
    assert module.f(1) == 4 and wrapped(module.f) and getattr(module.f, MARK)


def test_wrap_once_keeps_a_classmethod_a_classmethod():
    class Manager:
        base = 10

        @classmethod
        def compose(cls, x):
            return cls.base + x

    class Child(Manager):
        base = 20

    assert wrap_once(Manager, "compose", _twice)
    assert not wrap_once(Manager, "compose", _twice)
    assert isinstance(Manager.__dict__["compose"], classmethod)
    assert (Manager.compose(1), Child.compose(1)) == (22, 42)


def test_once_says_each_thing_once(caplog):
    once = Once(logging.getLogger("harmony_ext.test_once"))
    with caplog.at_level(logging.INFO, logger="harmony_ext.test_once"):
        assert once("a", logging.WARNING, "first %s", "a")
        assert not once("a", logging.WARNING, "first %s", "again")
        assert once("b", logging.INFO, "second")
        once.forget("a")
        assert once("a", logging.ERROR, "third")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "first a"), (logging.INFO, "second"), (logging.ERROR, "third")]


def test_the_adapters_observer_writes_the_responses_log_line(caplog):
    """Contract section 9: one log line per response that needed a rule, naming the request,
    each rule with what it touched, each call's outcome and the suspected leaks (a WARNING when
    it holds one), written by the adapters' observer in the adapter's logger; none for a
    response that needed no rule."""
    from harmony_plugins import Summary
    from harmony_plugins.adapter_support.metrics import Counting

    observe = Counting(logging.getLogger("harmony_ext.test_counting"), count=False)
    forged = Summary({"undeclared_function": 1, "forged_turn": 1, "after_json_value": 2},
                     {"undeclared": 1, "surfaced": 1}, [],
                     {("undeclared_function", "lookup"): 1, ("after_json_value", "get_weather"): 2,
                      ("forged_turn", "user"): 1},
                     [("lookup", "undeclared"), ("get_weather", "surfaced")])
    with caplog.at_level(logging.INFO, logger="harmony_ext.test_counting"):
        observe.for_request("chatcmpl-42")(forged)
        observe.for_request("chatcmpl-43")(Summary({}, {"surfaced": 1}, [], {},
                                                   [("get_weather", "surfaced")]))
        observe(Summary({}, {}, ["<|end|>"]))
        observe.for_request("7")(Summary({"after_end_of_turn": 1}, {"schema_mismatch": 1}, [],
                                         {("after_end_of_turn", ""): 1},
                                         [("Web Search", "schema_mismatch")]))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "harmony-ext: request=chatcmpl-42 rules=undeclared_function(lookup),"
                       "after_json_value(get_weather)*2,forged_turn(user) "
                       "calls=lookup:undeclared,get_weather:surfaced"),
        (logging.WARNING, "harmony-ext: request=- leaks=1 first='<|end|>'"),
        (logging.INFO, 'harmony-ext: request=7 rules=after_end_of_turn '
                       'calls="Web Search":schema_mismatch'),
    ]


def test_a_long_line_lists_the_first_rules_and_counts_the_rest():
    from harmony_plugins import Summary
    from harmony_plugins.adapter_support.metrics import SHOWN, report_line

    names = [f"f{i}" for i in range(SHOWN + 3)]
    summary = Summary({"undeclared_function": len(names)}, {"undeclared": len(names)}, [],
                      {("undeclared_function", n): 1 for n in names},
                      [(n, "undeclared") for n in names])
    line = report_line(summary, "r")
    assert line is not None
    rules_part, calls_part = line.split(" ")[2:]
    assert rules_part.split(",")[SHOWN - 1:] == [f"undeclared_function(f{SHOWN - 1})", "+3_more"]
    assert calls_part.split(",")[SHOWN - 1:] == [f"f{SHOWN - 1}:undeclared", "+3_more"]


def test_the_adapters_observer_never_fails_a_response(caplog):
    """Counting must never fail a response: a failure while counting is logged, not raised."""
    from harmony_plugins import Summary
    from harmony_plugins.adapter_support.metrics import Counting

    class Broken(Counting):
        def _count(self, summary: Summary) -> None:
            raise ValueError("registry gone")

    observe = Broken(logging.getLogger("harmony_ext.test_counting"))
    with caplog.at_level(logging.INFO, logger="harmony_ext.test_counting"):
        observe(Summary({}, {"surfaced": 1}, []))
    assert [r.getMessage() for r in caplog.records] == [
        "harmony-ext: reporting the response's counts failed"]
    assert "registry gone" in caplog.text


HX = "harmony-ext"


@pytest.mark.parametrize("argv, named", [
    (["vllm", "serve", "m", "--tool-call-parser", HX], True),
    (["vllm", "serve", "m", "--reasoning-parser", HX, "--port", "8000"], True),
    (["m", "--tool-call-parser=harmony-ext"], True),
    (["m", "--reasoning_parser", HX], True),  # underscores accepted
    (["m", "--tool_call_parser=harmony-ext"], True),
    (["m", "--tool-call-parser", "gpt-oss", "--reasoning-parser", HX], True),  # the second
    (["m", "--tool-call-parser", "gpt-oss", "--reasoning-parser", "gpt-oss"], False),
    (["m", "--tool-call-parser", "harmony-extra"], False),  # the name exactly
    (["m", "--tool-call-parser=harmony-ex"], False),
    (["m", "--served-model-name", HX], False),  # another option's value
    (["m", "--tool-call-parser", "gpt-oss", HX], False),  # a word after the value
    ([HX], False), ([], False),
    (["m", "--tool-call-parser"], False),  # the flag last, its value missing
    (["m", "--tool-call-parser="], False),
    (["m", "--tool-call-parser", "--reasoning-parser", HX], True),
    (["m", "--enable-auto-tool-choice", HX], False),
])
def test_a_command_line_selects_a_parser_by_either_option(argv, named):
    """Both engines spell the options ``--tool-call-parser`` and ``--reasoning-parser``
    (underscores accepted), the value after the option or after ``=``."""
    assert selects(argv, HX) is named
    assert may_select(argv, HX) is named  # no --config: exactly what it names


@pytest.mark.parametrize("argv", [["m", "--config", "c.yaml"], ["m", "--config=c.yaml"],
                                  ["--config", "c.yaml", "--tool-call-parser", "gpt-oss"]])
def test_a_configuration_file_may_select_it(argv):
    """A ``--config`` file is read by the engine only, so it may name the parser."""
    assert not selects(argv, HX)
    assert may_select(argv, HX)


@pytest.mark.parametrize("argv", [["m", "--configs", "c.yaml"], ["m", "--config-file=c"],
                                  ["m", "config", "c.yaml"]])
def test_other_options_that_begin_like_config_do_not(argv):
    assert not may_select(argv, HX)
