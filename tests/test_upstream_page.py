"""docs/upstream.md, the proposal to the engines, against the hooks the adapters install.

1. The targets the page names on its **Wraps:** lines are exactly the functions the adapters
   wrap in place, and the (kind, target) pairs on its **Hook:** lines exactly the ones the
   SGLang adapter registers with SGLang's ``HookRegistry``: nothing missing, nothing extra.
2. Every message the page quotes from a start-up check (a log line, ``harmony-ext: ...``, or a
   problem on a **Start-up check:** line) is one the adapters' code can write: an instance of a
   string literal or f-string of ``vllm_ext`` or ``sglang_ext``, the page's ``<placeholders>``
   standing for the code's ``{fields}`` and ``%s``.

Where the targets come from, and why that way. The adapters import their engines, so this core
test (which has neither engine) reads them without importing vLLM or SGLang:

- SGLang: :func:`sglang_ext.plugin._hook_points` is the list ``install_hooks`` registers, each
  entry (what, target, hook, kind, why missing); the plugin module imports no SGLang at module
  level, and its checks import SGLang inside ``try`` and say what is missing, so the list is
  built here as it is in a server. Taking the list the plugin installs, not strings found in the
  source, follows renamed modules and new hooks without a change here.
- In-place wraps (vLLM's way, and any SGLang one): every function of the two packages that calls
  ``hooks.wrap_once`` (the one helper that wraps an engine function,
  ``harmony_plugins/adapter_support/hooks.py``) is found with ``ast`` and run with ``wrap_once``
  replaced by a recorder and the engine's modules replaced by stand-ins (a finder on
  ``sys.meta_path`` answers ``import vllm...`` with modules whose every attribute is a named
  stand-in), for the duration of the call only. What the installers ask to wrap is what they
  wrap on a real vLLM: some targets are built in code (an imported class, a table of names),
  which strings read with ``ast`` alone would miss, and a module path in a string is no target.

Each check returns what it finds wrong; the tests at the end feed it altered pages and targets.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from harmony_plugins.adapter_support import hooks

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "upstream.md"
ADAPTERS = {"vllm_ext": "vllm", "sglang_ext": "sglang"}
"""Each adapter package and the engine it imports."""


# -- the hooks the adapters install -----------------------------------------------------------


class _Stand:
    """Any attribute of a stand-in engine module: its dotted name, and more of the same."""

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stand(f"{self._path}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Stand(f"{self._path}()")


class _StandModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stand(f"{self.__name__}.{name}")


class _Engine(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``import ENGINE...`` with stand-in modules."""

    def __init__(self, top: str) -> None:
        self.top = top

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == self.top or name.startswith(self.top + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return _StandModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


@contextmanager
def stand_in(top: str) -> Iterator[None]:
    """``import top...`` gives stand-ins inside the block; ``sys.modules`` as it was after."""
    def ours(name: str) -> bool:
        return name == top or name.startswith(top + ".")

    saved = {k: v for k, v in sys.modules.items() if ours(k)}
    for name in saved:
        del sys.modules[name]
    finder = _Engine(top)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [k for k in sys.modules if ours(k)]:
            del sys.modules[name]
        sys.modules.update(saved)


def installers(package: str) -> list[tuple[str, str]]:
    """(module, function) of every top-level function of ``package`` that calls
    ``wrap_once``."""
    found = []
    for path in sorted((ROOT / package).glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(n, ast.Attribute) and n.attr == "wrap_once"
                    for n in ast.walk(node)):
                found.append((f"{package}.{path.stem}", node.name))
    return found


def wrapped_targets(package: str, engine: str) -> list[str]:
    """The dotted names ``package``'s installers wrap, run against a stand-in ``engine``."""
    asked: list[str] = []

    def record(owner: Any, name: str, wrap: Any) -> bool:
        base = (owner.__name__ if isinstance(owner, types.ModuleType)
                else getattr(owner, "_path", f"<not {engine}: {owner!r}>"))
        asked.append(f"{base}.{name}")
        return True

    found = installers(package)
    for module, _ in found:
        with contextlib.suppress(ImportError):  # the real module, where it imports alone
            importlib.import_module(module)
    loaded = set(sys.modules)
    try:
        with stand_in(engine), mock.patch.object(hooks, "wrap_once", record):
            for module, function in found:
                getattr(importlib.import_module(module), function)()
    finally:  # a module that needed the stand-ins to import is not kept for other tests
        for name in set(sys.modules) - loaded:
            if name.startswith(package + "."):
                del sys.modules[name]
                parent, _, child = name.rpartition(".")
                if hasattr(sys.modules.get(parent), child):
                    delattr(sys.modules[parent], child)
    return asked


def registered_hooks() -> set[tuple[str, str]]:
    """(kind, target) of every hook the SGLang plugin registers with HookRegistry."""
    from sglang_ext import plugin

    return {(kind, target) for _what, target, _hook, kind, _why in plugin._hook_points()}


# -- what the page names ----------------------------------------------------------------------


def field(page: str, label: str) -> list[str]:
    """The text of every bullet ``- **label:** ...`` (up to the next bullet or heading)."""
    out, current = [], None
    for line in page.splitlines():
        if line.startswith(f"- **{label}:**"):
            current = [line]
            out.append(current)
        elif current is not None and line.startswith("  ") and line.strip():
            current.append(line)
        else:
            current = None
    return [" ".join(x.strip() for x in bullet) for bullet in out]


DOTTED = re.compile(r"`([A-Za-z_][\w]*(?:\.[\w]+)+)`")
KIND_TARGET = re.compile(r"\b(BEFORE|AFTER|AROUND|REPLACE) `([\w.]+)`")


def page_wraps(page: str, engine: str) -> set[str]:
    return {t for text in field(page, "Wraps") for t in DOTTED.findall(text)
            if t.startswith(engine + ".")}


def page_hooks(page: str) -> set[tuple[str, str]]:
    return {pair for text in field(page, "Hook") for pair in KIND_TARGET.findall(text)}


def target_problems(page: str, wraps: set[str], registered: set[tuple[str, str]]) -> list[str]:
    """Check 1."""
    named_wraps = set().union(*(page_wraps(page, e) for e in ADAPTERS.values()))
    named_hooks = page_hooks(page)
    return ([f"installed, not on the page: wraps {t}" for t in sorted(wraps - named_wraps)]
            + [f"on the page, not installed: wraps {t}" for t in sorted(named_wraps - wraps)]
            + [f"installed, not on the page: {k} {t}" for k, t in sorted(registered - named_hooks)]
            + [f"on the page, not installed: {k} {t}" for k, t in sorted(named_hooks - registered)])


# -- what the start-up checks say -------------------------------------------------------------

PERCENT = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[sdrfi]")
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")
HOLE = "\x00"


def templates(packages: tuple[str, ...] = tuple(ADAPTERS)) -> list[re.Pattern[str]]:
    """Every string literal and f-string of the adapters that holds a word, as a pattern whose
    fields (and ``%`` placeholders) match anything (``f"{a}.{b}"``, all fields, would match
    any quote with a dot)."""
    out = []
    for package in packages:
        for path in sorted((ROOT / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.JoinedStr):
                    pieces = [v.value if isinstance(v, ast.Constant) else None
                              for v in node.values]
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    texts = PERCENT.split(node.value)
                    pieces = [x for t in texts for x in (t, None)][:-1]
                else:
                    continue
                literal = "".join(p for p in pieces if p is not None)
                if re.search(r"[A-Za-z]{3}", literal):
                    out.append(re.compile("".join(
                        "(.+?)" if p is None else re.escape(p) for p in pieces), re.DOTALL))
    return out


def quotes(page: str) -> list[str]:
    """The messages the page quotes: every backticked log line or phrase with a
    ``<placeholder>``, and every backticked phrase of a **Start-up check:** bullet."""
    logs = [q for q in re.findall(r"`([^`]+)`", page)
            if q.startswith("harmony-ext:") or PLACEHOLDER.search(q)]
    checks = [q for text in field(page, "Start-up check")
              for q in re.findall(r"`([^`]+)`", text) if " " in q]
    return list(dict.fromkeys(logs + checks))


def quote_problems(page: str, patterns: list[re.Pattern[str]]) -> list[str]:
    """Check 2."""
    return [f"no adapter writes {q!r}" for q in quotes(page)
            if not any(p.fullmatch(PLACEHOLDER.sub(HOLE, q)) for p in patterns)]


# -- the tests ------------------------------------------------------------------------------


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def wraps() -> set[str]:
    return {t for package, engine in ADAPTERS.items() for t in wrapped_targets(package, engine)}


def test_the_page_names_every_hook_the_adapters_install_and_no_other() -> None:
    installed, registered = wraps(), registered_hooks()
    assert len(installed) >= 5 and len(registered) >= 10  # the adapters' hooks were read
    assert all(t.startswith(tuple(e + "." for e in ADAPTERS.values())) for t in installed)
    assert all(t.startswith("sglang.") for _, t in registered)
    assert target_problems(page(), installed, registered) == []


def test_what_the_page_quotes_the_adapters_can_write() -> None:
    assert len(quotes(page())) >= 20  # the quotes were read
    assert quote_problems(page(), templates()) == []


def test_the_stand_in_engine_is_gone_afterwards() -> None:
    before = {k for k in sys.modules if k.split(".")[0] in ADAPTERS.values()}
    wraps()
    assert {k for k in sys.modules if k.split(".")[0] in ADAPTERS.values()} == before
    assert not any(isinstance(f, _Engine) for f in sys.meta_path)


# -- the checks can fail --------------------------------------------------------------------


def test_a_hook_missing_from_the_page_or_extra_on_it_is_reported() -> None:
    installed, registered = wraps(), registered_hooks()
    text = page()
    gone = text.replace("`vllm.parser.parser_manager.ParserManager._compose_parser`",
                        "`ParserManager._compose_parser`")
    assert target_problems(gone, installed, registered) == [
        "installed, not on the page: wraps "
        "vllm.parser.parser_manager.ParserManager._compose_parser"]
    extra = text.replace("- **Wraps:** `vllm.renderers.online_renderer.OnlineRenderer."
                         "_make_request_with_harmony`",
                         "- **Wraps:** `vllm.renderers.online_renderer.OnlineRenderer."
                         "_make_request_with_harmony`, `vllm.entrypoints.chat_utils.apply`")
    assert target_problems(extra, installed, registered) == [
        "on the page, not installed: wraps vllm.entrypoints.chat_utils.apply"]
    kind = text.replace("AFTER `sglang.srt.server_args.prepare_server_args`",
                        "BEFORE `sglang.srt.server_args.prepare_server_args`")
    assert target_problems(kind, installed, registered) == [
        "installed, not on the page: AFTER sglang.srt.server_args.prepare_server_args",
        "on the page, not installed: BEFORE sglang.srt.server_args.prepare_server_args"]


def test_a_hook_the_page_lacks_is_reported_when_the_adapter_adds_it() -> None:
    more = wraps() | {"vllm.entrypoints.openai.serving_chat.OpenAIServingChat.create"}
    registered = registered_hooks() | {("AROUND", "sglang.srt.managers.io_struct.X")}
    assert target_problems(page(), more, registered) == [
        "installed, not on the page: wraps "
        "vllm.entrypoints.openai.serving_chat.OpenAIServingChat.create",
        "installed, not on the page: AROUND sglang.srt.managers.io_struct.X"]


def test_the_recorder_sees_a_new_wrap() -> None:
    from vllm_ext import prompt

    real = prompt.install

    def install() -> bool:
        real()
        from vllm.renderers.online_renderer import OnlineRenderer  # the stand-in

        hooks.wrap_once(OnlineRenderer, "render_chat", lambda f: f)
        return True

    with mock.patch.object(prompt, "install", install):
        assert "vllm.renderers.online_renderer.OnlineRenderer.render_chat" in wraps()


def test_a_quote_no_adapter_writes_is_reported() -> None:
    text = page()
    changed = text.replace("`vllm.renderers.online_renderer.tokens_input does not exist`",
                           "`vllm.renderers.online_renderer.tokens_input is missing`")
    assert quote_problems(changed, templates()) == [
        "no adapter writes 'vllm.renderers.online_renderer.tokens_input is missing'"]
    log = text.replace("not harmony-ext's: <problem>.", "not ours: <problem>.")
    assert quote_problems(log, templates()) == [
        "no adapter writes \"harmony-ext: chat prompts are rendered by vLLM's own Harmony "
        "renderer, not ours: <problem>.\""]
    placeholder = text.replace("`<target> has an unknown signature`",
                               "`<target> has an unknown <thing>`")
    assert quote_problems(placeholder, templates()) == [
        "no adapter writes '<target> has an unknown <thing>'"]
