"""The ``vllm.general_plugins`` entry point: register ``harmony-ext`` and put it on the path.

vLLM runs :func:`register` once in every one of its processes (CLI, API servers, engine
core, workers), before it validates arguments. It must be cheap and safe to run twice.

For gpt-oss models vLLM never calls a tool or reasoning parser's own parsing code: its
``ParserManager._compose_parser`` always returns vLLM's ``HarmonyParser``. So registering
names is not enough; :func:`install_hook` wraps ``_compose_parser`` so that when a
``harmony-ext`` class is selected it returns our :class:`~vllm_ext.harmony_parser.
HarmonyExtParser` subclass instead (for any model type), and leaves every other choice to
vLLM untouched.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import Any, NoReturn

from harmony_plugins.adapter_support import hooks
from harmony_plugins.adapter_support.command_line import may_select, selects
from harmony_plugins.adapter_support.versions import release

from . import guard, items, messages_api, prompt

NAME = "harmony-ext"
SUPPORTED = ((0, 32), (0, 33), (0, 34))
"""vLLM minor versions this adapter was checked against (each has a test tier)."""

logger = logging.getLogger("vllm.harmony_ext")


def register() -> None:
    """Entry point. Registers the parser names and installs the hooks, or says why not."""
    try:
        import vllm
    except ImportError:  # pragma: no cover - the entry point only runs inside vLLM
        return
    version = getattr(vllm, "__version__", "unknown")
    problem = check_vllm()
    if problem:
        logger.error("harmony-ext: not enabled on vLLM %s: %s. The names %r will not be "
                     "registered; supported: vLLM %s.", version, problem, NAME,
                     ", ".join(f"{a}.{b}" for a, b in SUPPORTED))
        return
    if release(version)[:2] not in SUPPORTED:
        logger.warning("harmony-ext: vLLM %s is outside the checked range (%s); the hook "
                       "points exist, so it is enabled anyway.", version,
                       ", ".join(f"{a}.{b}" for a, b in SUPPORTED))
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    ToolParserManager.register_lazy_module(NAME, "vllm_ext.parsers", "HarmonyExtToolParser")
    ReasoningParserManager.register_lazy_module(NAME, "vllm_ext.parsers",
                                                "HarmonyExtReasoningParser")
    install_hook()
    for module in OPTIONAL:
        if module is not guard or may_select(sys.argv, NAME):  # the scheduler's hook
            install_or_warn(module)
    logger.info("harmony-ext: registered tool and reasoning parser %r on vLLM %s; "
                "selecting either puts harmony-ext's parser on the request path.",
                NAME, version)
    warn_if_bypassed(sys.argv, os.environ)


WRAPS = ("vllm.parser.parser_manager.ParserManager._compose_parser",)
"""The engine function :func:`install_hook` wraps in place."""
OPTIONAL = (prompt, items, messages_api, guard)
"""The hooks the adapter works without: each module names what it wraps (``WRAPS``), what is
lost without it (``OFF``), and has a ``check()`` and an ``install()``. With :data:`WRAPS`,
every engine function the adapter wraps (``docs/upstream.md`` lists them)."""


def install_or_warn(module: Any) -> None:
    """An optional hook installed, or one log line saying what is lost and why."""
    problem = module.check()
    if problem:
        logger.warning("harmony-ext: %s: %s.", module.OFF, problem)
    else:
        module.install()


def wrapped_targets() -> tuple[str, ...]:
    """Every engine function this adapter wraps in place, as dotted names."""
    return WRAPS + tuple(target for module in OPTIONAL for target in module.WRAPS)


RUST_FRONTEND = "VLLM_USE_RUST_FRONTEND"
_WARNED = "HARMONY_EXT_BYPASS_WARNED"


def warn_if_bypassed(argv: list[str], environ: MutableMapping[str, str]) -> bool:
    """Say it when harmony-ext is selected but vLLM's Rust front end is asked to serve.

    With ``VLLM_USE_RUST_FRONTEND=1`` vLLM's HTTP server and its Harmony parsing are a Rust
    binary that knows only its own parser names: vLLM 0.33 refuses to start with a
    ``harmony-ext`` parser selected ("tool parser `harmony-ext` is not registered"). The
    plugin runs before vLLM parses its arguments, so the selection is read from the command
    line; the warning is given once per server (the child processes inherit the mark).
    """
    try:
        on = bool(int(environ.get(RUST_FRONTEND, "0") or "0"))
    except ValueError:
        on = False
    if not on or environ.get(_WARNED) or not selects(argv, NAME):
        return False
    environ[_WARNED] = "1"
    logger.warning("harmony-ext: %s=1: vLLM's Rust front end parses Harmony itself and "
                   "does not know the parser name %r, so the server will not start; unset %s "
                   "to use harmony-ext, or select one of the Rust front end's parsers.",
                   RUST_FRONTEND, NAME, RUST_FRONTEND)
    return True


def check_vllm() -> str | None:
    """What is missing from this vLLM for the adapter to work, or None."""
    try:
        from vllm.parser.parser_manager import ParserManager
        from vllm.reasoning import ReasoningParserManager
        from vllm.tool_parsers import ToolParserManager
    except ImportError as e:
        return f"cannot import vLLM's parser registries ({e})"
    for owner, attr in ((ToolParserManager, "register_lazy_module"),
                        (ReasoningParserManager, "register_lazy_module"),
                        (ParserManager, "_compose_parser")):
        if not hasattr(owner, attr):
            return f"{owner.__name__}.{attr} does not exist"
    params = set(inspect.signature(ParserManager._compose_parser).parameters)
    wanted = {"tool_parser_name", "reasoning_parser_name"}
    if not wanted <= params:
        return f"ParserManager._compose_parser lacks parameters {sorted(wanted - params)}"
    return None


def install_hook() -> None:
    """Wrap ``ParserManager._compose_parser`` once.

    The wrapper lets vLLM resolve the request-independent choices itself (parser names,
    ``--enable-auto-tool-choice``, ``--tool-strict-level``, whatever a later vLLM adds) and
    only swaps the class it returns for ours when a ``harmony-ext`` name is selected, so a
    change in vLLM's argument handling reaches us as vLLM's own behaviour, not a crash.
    """
    from vllm.parser.parser_manager import ParserManager

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def _compose_parser(cls: type, *args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(cls, *args, **kwargs).arguments
            except TypeError:  # not a call vLLM makes: let vLLM answer it
                return func(cls, *args, **kwargs)
            names = (bound.get("tool_parser_name"), bound.get("reasoning_parser_name"))
            if NAME not in names:
                return func(cls, *args, **kwargs)
            try:
                return compose(func, cls, args, kwargs, tool_selected=names[0] == NAME)
            except Exception as e:
                fail(f"building the parser failed: {type(e).__name__}: {e}")

        return _compose_parser

    hooks.wrap_once(ParserManager, "_compose_parser", wrap)


_RESOLVED = ("reasoning_parser_cls", "tool_parser_cls", "tool_strict_level")
"""What vLLM's composed parser class carries: the selected classes and the strict level."""


def compose(func: Any, manager: type, args: tuple[Any, ...], kwargs: dict[str, Any], *,
            tool_selected: bool) -> type | None:
    """vLLM's own composition, with its result's class swapped for our parser class.

    For gpt-oss vLLM returns its shared ``HarmonyParser`` after setting the resolved classes
    on it as class attributes; those are put back as they were, so vLLM's class is never
    left pointing at ours.
    """
    from vllm.parser.harmony import HarmonyParser

    own = HarmonyParser.__dict__
    saved = {k: own[k] for k in _RESOLVED if k in own}
    try:
        composed = func(manager, *args, **kwargs)
        if composed is None:
            return None
        missing = [k for k in _RESOLVED if not hasattr(composed, k)]
        if missing:
            raise TypeError(f"vLLM's parser class {composed.__name__} has no {', '.join(missing)}")
        resolved = [getattr(composed, k) for k in _RESOLVED]
    finally:  # what vLLM set on its own class, and nothing else, whatever happened
        for k in _RESOLVED:
            if k in saved:
                setattr(HarmonyParser, k, saved[k])
            elif k in own:
                delattr(HarmonyParser, k)
    if tool_selected and resolved[1] is None:
        logger.warning("harmony-ext: --tool-call-parser %s has no effect without "
                       "--enable-auto-tool-choice; vLLM drops tool calls from chat "
                       "completions with tool_choice 'auto'.", NAME)
    prompt.activate()
    items.activate()
    messages_api.activate()
    return parser_class(*resolved)


def fail(what: str) -> NoReturn:
    """One clear line in vLLM's log, then a clean exit instead of a traceback in start-up."""
    import vllm

    logger.error("harmony-ext: on vLLM %s, %s. harmony-ext supports vLLM %s; uninstall it, "
                 "update it, or select another parser.", getattr(vllm, "__version__", "?"),
                 what, ", ".join(f"{a}.{b}" for a, b in SUPPORTED))
    raise SystemExit(1)


@functools.cache
def parser_class(reasoning_cls: type | None, tool_cls: type | None, strict: Any) -> type:
    """Our HarmonyParser subclass carrying the selected classes as its own attributes."""
    from vllm_ext.harmony_parser import HarmonyExtParser

    return type("HarmonyExtParserBound", (HarmonyExtParser,), {
        "reasoning_parser_cls": reasoning_cls,
        "tool_parser_cls": tool_cls,
        "tool_strict_level": strict,
        "__module__": HarmonyExtParser.__module__,
    })
