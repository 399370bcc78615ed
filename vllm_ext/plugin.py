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
from typing import Any

NAME = "harmony-ext"
SUPPORTED = ((0, 32), (0, 33))
"""vLLM minor versions this adapter was checked against."""

logger = logging.getLogger("vllm.harmony_ext")

_HOOK_MARK = "_harmony_ext_hook"


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
    if _minor(version) not in SUPPORTED:
        logger.warning("harmony-ext: vLLM %s is outside the checked range (%s); the hook "
                       "points exist, so it is enabled anyway.", version,
                       ", ".join(f"{a}.{b}" for a, b in SUPPORTED))
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    ToolParserManager.register_lazy_module(NAME, "vllm_ext.parsers", "HarmonyExtToolParser")
    ReasoningParserManager.register_lazy_module(NAME, "vllm_ext.parsers",
                                                "HarmonyExtReasoningParser")
    if install_hook():
        logger.info("harmony-ext: registered tool and reasoning parser %r on vLLM %s; "
                    "selecting either puts harmony-ext's parser on the request path.",
                    NAME, version)


def _minor(version: str) -> tuple[int, int] | None:
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


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
                        (ParserManager, "_compose_parser"),
                        (ParserManager, "get_tool_parser"),
                        (ParserManager, "get_reasoning_parser")):
        if not hasattr(owner, attr):
            return f"{owner.__name__}.{attr} does not exist"
    params = set(inspect.signature(ParserManager._compose_parser).parameters)
    wanted = {"tool_parser_name", "reasoning_parser_name", "enable_auto_tools", "model_name",
              "tool_strict_level"}
    if not wanted <= params:
        return f"ParserManager._compose_parser lacks parameters {sorted(wanted - params)}"
    return None


def install_hook() -> bool:
    """Wrap ``ParserManager._compose_parser`` once; True when the hook is in place."""
    from vllm.parser.parser_manager import ParserManager

    original = ParserManager.__dict__["_compose_parser"]
    func = original.__func__ if isinstance(original, classmethod) else original
    if getattr(func, _HOOK_MARK, False):
        return True
    signature = inspect.signature(func)

    @functools.wraps(func)
    def _compose_parser(cls: type, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(cls, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if NAME not in (a["tool_parser_name"], a["reasoning_parser_name"]):
            return func(cls, *args, **kwargs)
        return compose(cls, a)

    setattr(_compose_parser, _HOOK_MARK, True)
    ParserManager._compose_parser = classmethod(_compose_parser)  # type: ignore[method-assign]
    return True


def compose(manager: Any, a: dict[str, Any]) -> type | None:
    """Resolve the selected classes as vLLM does and return our parser class for them."""
    reasoning_cls = manager.get_reasoning_parser(a["reasoning_parser_name"])
    tool_cls = manager.get_tool_parser(a["tool_parser_name"], a["enable_auto_tools"],
                                       a["model_name"])
    if reasoning_cls is None and tool_cls is None:
        return None
    from vllm.tool_parsers.tool_strict_level import ToolStrictLevel

    strict = ToolStrictLevel.from_name(a["tool_strict_level"])
    if a["tool_parser_name"] == NAME and tool_cls is None:
        logger.warning("harmony-ext: --tool-call-parser %s has no effect without "
                       "--enable-auto-tool-choice; vLLM drops tool calls from chat "
                       "completions with tool_choice 'auto'.", NAME)
    return parser_class(reasoning_cls, tool_cls, strict)


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
