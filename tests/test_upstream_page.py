"""docs/upstream.md, the proposal to the engines, against the hooks the adapters install.

1. The targets the page names on its **Wraps:** lines are exactly the engine functions the
   adapters wrap in place, and the (kind, target) pairs on its **Hook:** lines exactly the ones
   the SGLang adapter registers with SGLang's ``HookRegistry``: nothing missing, nothing extra.
2. Every message the page quotes from a start-up check (a log line, ``harmony-ext: ...``, or a
   problem on a **Start-up check:** line) is one the adapters' code can write, and each
   optional hook's warning is quoted.

Both read the adapters' own registries, which is what they install from, without importing an
engine (the registries import none): :func:`vllm_ext.plugin.wrapped_targets` and
:func:`sglang_ext.plugin.wrapped_targets` (each optional hook module names what it wraps,
``WRAPS``, and what is lost without it, ``OFF``, which its warning says) and
:func:`sglang_ext.plugin._hook_points` (what ``install_hooks`` registers: what, target, hook,
kind, why missing). That they are what the adapters really wrap and
register, the engine tiers check on the real engines (``tests/vllm/test_generation_guard.py``,
``test_every_target_the_adapter_names_is_wrapped``; ``tests/sglang``, the plugin's tests). The
other messages are matched against the adapters' string literals and f-strings.

Each check returns what it finds wrong; the tests at the end feed it altered pages and targets.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "upstream.md"
ADAPTERS = {"vllm_ext": "vllm", "sglang_ext": "sglang"}
"""Each adapter package and the engine it imports."""


# -- the hooks the adapters install -----------------------------------------------------------


def wraps() -> set[str]:
    """The engine functions the adapters wrap in place, from their registries."""
    from sglang_ext import plugin as sglang_plugin
    from vllm_ext import plugin as vllm_plugin

    return {*vllm_plugin.wrapped_targets(), *sglang_plugin.wrapped_targets()}


def registered_hooks() -> set[tuple[str, str]]:
    """(kind, target) of every hook the SGLang plugin registers with HookRegistry."""
    from sglang_ext import plugin

    return {(kind, target) for _what, target, _hook, kind, _why in plugin._hook_points()}


def optional_warnings() -> list[str]:
    """The line each optional hook logs when its check fails, as the page quotes it."""
    from sglang_ext import guard
    from vllm_ext import plugin

    return [f"harmony-ext: {module.OFF}: <problem>." for module in (*plugin.OPTIONAL, guard)]


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
                # A word besides the prefix: "harmony-ext: %s: %s." alone would match any quote
                # (the optional hooks' warnings come from the registry instead).
                if re.search(r"[A-Za-z]{3}", literal.replace("harmony-ext:", "")):
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


def quote_problems(page: str, patterns: list[re.Pattern[str]],
                   warnings: list[str]) -> list[str]:
    """Check 2."""
    quoted = quotes(page)
    return ([f"no adapter writes {q!r}" for q in quoted if q not in warnings
             and not any(p.fullmatch(PLACEHOLDER.sub(HOLE, q)) for p in patterns)]
            + [f"not on the page: {w!r}" for w in warnings if w not in quoted])


# -- the tests ------------------------------------------------------------------------------


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_page_names_every_hook_the_adapters_install_and_no_other() -> None:
    installed, registered = wraps(), registered_hooks()
    assert len(installed) == 13 and len(registered) >= 10  # the adapters' hooks were read
    assert all(t.startswith(("vllm.", "sglang.")) for t in installed)
    assert all(t.startswith("sglang.") for _, t in registered)
    assert target_problems(page(), installed, registered) == []


def test_what_the_page_quotes_the_adapters_can_write() -> None:
    assert len(quotes(page())) >= 20  # the quotes were read
    assert quote_problems(page(), templates(), optional_warnings()) == []


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


def test_a_hook_the_page_lacks_is_reported_when_the_adapter_adds_it(monkeypatch) -> None:
    from vllm_ext import prompt

    monkeypatch.setattr(prompt, "WRAPS", (*prompt.WRAPS,
                                          "vllm.renderers.online_renderer.OnlineRenderer.x"))
    registered = registered_hooks() | {("AROUND", "sglang.srt.managers.io_struct.X")}
    assert target_problems(page(), wraps(), registered) == [
        "installed, not on the page: wraps vllm.renderers.online_renderer.OnlineRenderer.x",
        "installed, not on the page: AROUND sglang.srt.managers.io_struct.X"]


def test_a_quote_no_adapter_writes_is_reported(monkeypatch) -> None:
    text = page()
    changed = text.replace("`vllm.renderers.online_renderer.tokens_input does not exist`",
                           "`vllm.renderers.online_renderer.tokens_input is missing`")
    assert quote_problems(changed, templates(), optional_warnings()) == [
        "no adapter writes 'vllm.renderers.online_renderer.tokens_input is missing'"]
    log = text.replace("not harmony-ext's: <problem>.", "not ours: <problem>.")
    assert quote_problems(log, templates(), optional_warnings()) == [
        "no adapter writes \"harmony-ext: chat prompts are rendered by vLLM's own Harmony "
        "renderer, not ours: <problem>.\"",
        "not on the page: \"harmony-ext: chat prompts are rendered by vLLM's own Harmony "
        "renderer, not harmony-ext's: <problem>.\""]
    placeholder = text.replace("`<target> has an unknown signature`",
                               "`<target> has an unknown <thing>`")
    assert quote_problems(placeholder, templates(), optional_warnings()) == [
        "no adapter writes '<target> has an unknown <thing>'"]
    from vllm_ext import guard

    monkeypatch.setattr(guard, "OFF", "the guard is off")
    assert quote_problems(text, templates(), optional_warnings()) == [
        "no adapter writes 'harmony-ext: a forged turn does not end the generation on this "
        "vLLM (the response is parsed as before): <problem>.'",
        "not on the page: 'harmony-ext: the guard is off: <problem>.'"]
