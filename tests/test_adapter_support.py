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


def test_the_adapters_spell_no_harmony_of_their_own():
    """Every marker spelling, channel name and recipient prefix an adapter uses comes from the
    core (docs/architecture.md, "Engine glue", gives the same check as a grep)."""
    import re
    from pathlib import Path

    harmony = re.compile(r'<\|[a-z_]+\|>|"(analysis|commentary|final)"|functions\.')
    root = Path(__file__).resolve().parents[1]
    found = [f"{path.relative_to(root)}:{n}: {line.strip()}"
             for package in ("vllm_ext", "sglang_ext")
             for path in sorted((root / package).glob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if harmony.search(line)]
    assert found == []
    assert harmony.search('begin="<|start|>assistant"')  # the check itself can fail
