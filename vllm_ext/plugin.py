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
from harmony_plugins.adapter_support.versions import release

NAME = "harmony-ext"
SUPPORTED = ((0, 32), (0, 33))
"""vLLM minor versions this adapter was checked against."""

logger = logging.getLogger("vllm.harmony_ext")



def register() -> None:
    """Entry point. Registers the parser names and installs the hook, or says why not."""
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
    install_turn_stop_hook()
    if install_hook() and install_prompt_hook() and install_items_hook():
        logger.info("harmony-ext: registered tool and reasoning parser %r on vLLM %s; "
                    "selecting either puts harmony-ext's parser on the request path.",
                    NAME, version)
    warn_if_bypassed(sys.argv, os.environ)


RUST_FRONTEND = "VLLM_USE_RUST_FRONTEND"
_PARSER_FLAGS = ("--tool-call-parser", "--reasoning-parser")
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
    if not on or environ.get(_WARNED) or not selected_on(argv):
        return False
    environ[_WARNED] = "1"
    logger.warning("harmony-ext: %s=1: vLLM's Rust front end parses Harmony itself and "
                   "does not know the parser name %r, so the server will not start; unset %s "
                   "to use harmony-ext, or select one of the Rust front end's parsers.",
                   RUST_FRONTEND, NAME, RUST_FRONTEND)
    return True


def selected_on(argv: list[str]) -> bool:
    """True when a command line selects ``harmony-ext`` as tool-call or reasoning parser."""
    for i, arg in enumerate(argv):
        flag, eq, value = arg.replace("_", "-").partition("=")
        if flag in _PARSER_FLAGS:
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if value == NAME:
                return True
    return False


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


def install_prompt_hook() -> bool:
    """The prompt-side hook (:mod:`vllm_ext.prompt`), or a log line saying why not."""
    from . import prompt

    problem = prompt.check()
    if problem:
        logger.warning("harmony-ext: chat prompts are rendered by vLLM's own Harmony renderer, "
                       "not harmony-ext's: %s.", problem)
        return True  # the parser hook stands on its own
    return prompt.install()


def install_turn_stop_hook() -> bool:
    """The turn stop (:mod:`vllm_ext.turn_stop`), or a log line saying why not."""
    from . import turn_stop

    problem = turn_stop.check()
    if problem:
        logger.warning("harmony-ext: a forged turn does not end the generation on this vLLM "
                       "(the response is parsed as before): %s.", problem)
        return True  # the parser hook stands on its own
    return turn_stop.install()


def install_items_hook() -> bool:
    """The Responses items hooks (:mod:`vllm_ext.items`), or a log line saying why not."""
    from . import items

    problem = items.check()
    if problem:
        logger.warning("harmony-ext: Responses API items are vLLM's own (message items carry "
                       "no phase; assistant messages sent back are rendered as answers): %s.",
                       problem)
        return True  # the parser hook stands on its own
    return items.install()


def install_hook() -> bool:
    """Wrap ``ParserManager._compose_parser`` once; True when the hook is in place.

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
    return True


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
    from . import items, prompt

    prompt.activate()
    items.activate()
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
