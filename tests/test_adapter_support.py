"""harmony_plugins.adapter_support: the helpers both adapters share (no engine needed)."""

from __future__ import annotations

import logging
import types

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
    """Contract section 9: one log line per response that needed a recovery (and a warning for
    a suspected leak), written by the adapters' observer in the adapter's logger; none for a
    clean response."""
    from harmony_plugins import Summary
    from harmony_plugins.adapter_support.metrics import Counting

    observe = Counting(logging.getLogger("harmony_ext.test_counting"), count=False)
    with caplog.at_level(logging.INFO, logger="harmony_ext.test_counting"):
        observe(Summary({"free_text": 1, "after_json_value": 2}, {"surfaced": 1}, []))
        observe(Summary({}, {"surfaced": 1}, []))
        observe(Summary({}, {}, ["<|end|>"]))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "harmony-ext recovered malformed model output: after_json_value=2, "
                       "free_text=1"),
        (logging.WARNING, "harmony-ext: 1 suspected markup leak(s) in visible text, first: "
                          "'<|end|>'"),
    ]


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
