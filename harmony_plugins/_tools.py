"""The request's tools, read once: which names a call may resolve to, and their schemas.

Engines hand tools over in several shapes: OpenAI chat (``{"type": "function", "function":
{...}}``), Responses (``{"type": "function", "name": ...}``, built-in tool types,
``namespace`` tools), plain function names, as dicts or as the engines' pydantic objects.
This module is the one place that reads those shapes; the parser sees only names and
``parameters`` schemas.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from . import harmony as hm

_BROWSER = (hm.BROWSER_SEARCH, hm.BROWSER_OPEN, hm.BROWSER_FIND)
BUILTIN_RECIPIENTS: Mapping[str, tuple[str, ...]] = {
    "code_interpreter": (hm.PYTHON,),
    "web_search_preview": _BROWSER,
    "web_search": _BROWSER,
    "container": (hm.CONTAINER_EXEC,),
}
"""Responses API built-in tool types, and the recipients gpt-oss uses for them."""



class Builtin(str):
    """A recipient a Responses built-in tool declares (``python``, ``browser.search``): called
    by its bare name. A function tool of the same name (a function named ``python``) is
    called ``functions.python``, so the two are told apart by this type, not the spelling."""

    __slots__ = ()

NAMESPACE_SEPARATOR = "__"
"""How a Responses ``namespace`` tool's functions are named flat (``space__name``)."""
ANY_OBJECT: Mapping[str, Any] = {"type": "object"}
"""The schema a grammar holds a call's arguments to where it holds no function's own: any JSON
object (:func:`held_schemas`)."""


_NOT_TOOLS = (int, float, bytes, list, tuple)  # a tuple: isinstance on a union costs more


def field(tool: Any, key: str) -> Any:
    """``tool[key]`` for a dict, ``tool.key`` for an object (None when absent)."""
    cls = tool.__class__
    if cls is dict or _is_mapping(cls):  # a plain dict: not even the cache asked
        return tool.get(key)
    return getattr(tool, key, None)


@functools.lru_cache(maxsize=64)
def _is_mapping(cls: type) -> bool:
    """Whether instances of ``cls`` are read as mappings: asked of ``Mapping`` once per
    class (an ABC check costs more than reading the field; engines hand over the same
    pydantic tool classes on every request)."""
    return issubclass(cls, Mapping)


def recipient(name: str, builtins: frozenset[str] = frozenset()) -> str:
    """The Harmony recipient of a declared callable: a declared built-in's own name
    (``browser.search``), else ``functions.NAME``."""
    return name if name in builtins else hm.function_recipient(name)


def builtin_names(tools: Iterable[Any] | None) -> frozenset[str]:
    """The names among the declared tools (:func:`declared_tools`' output, or names) that are
    built-in tools' recipients: those a Responses built-in tool declared, and plain names in a
    built-in namespace (``browser.search``: no function name holds a dot)."""
    return frozenset([t for t in tools or () if isinstance(t, Builtin) or (
        isinstance(t, str) and "." in t and hm.is_builtin_recipient(t))])


def declared_tools(tools: Iterable[Any] | None) -> list[Any]:
    """The request's tools as the parser takes them: function tools (with their
    ``parameters``, chat or Responses shape, dicts or pydantic objects), the recipient names
    of Responses built-in tools, and each Responses namespace's functions under their flat
    names. Tools of other kinds (MCP, file search) declare nothing callable. TypeError for a
    ``tools`` that is a string or a single dict (see :func:`tool_names`)."""
    if tools is None:
        return []
    _check(tools)
    out: list[Any] = []
    for tool in tools:
        if isinstance(tool, str):
            out.append(tool)
            continue
        kind = field(tool, "type")
        if kind == "namespace":
            space = field(tool, "name")
            for inner in field(tool, "tools") or ():
                if field(inner, "type") in (None, "function") and field(inner, "name"):
                    out.append({"name": f"{space}{NAMESPACE_SEPARATOR}{field(inner, 'name')}",
                                "parameters": field(inner, "parameters")})
        elif kind in BUILTIN_RECIPIENTS:
            out.extend(Builtin(name) for name in BUILTIN_RECIPIENTS[kind])
        else:
            out.append(tool)
    return out


def chat_request_tools(request: Any) -> list[Any]:
    """The tools a chat request declares: its ``tools``, and those given on its ``system``
    or ``developer`` messages (where Harmony declares them; SGLang reads them there too)."""
    tools = list(field(request, "tools") or ())
    for message in field(request, "messages") or ():
        if field(message, "role") in ("root", "system", "developer"):
            tools.extend(field(message, "tools") or ())
    return tools


def name_and_schema(tool: object) -> tuple[str | None, Any]:
    """(name, parameters) of one tool in any accepted shape; (None, None) if it has no name."""
    if tool.__class__ is dict:  # the usual tool: neither a name nor of no tool shape
        pass
    elif isinstance(tool, str):
        return tool, None
    elif tool is None or isinstance(tool, _NOT_TOOLS):
        raise TypeError(
            f"each tool must be a function name, an OpenAI tool object or a dict, "
            f"not {type(tool).__name__}")
    function = field(tool, "function")
    where = function if function is not None and not isinstance(function, str) else tool
    name = field(where, "name")
    if not isinstance(name, str) or not name:
        return None, None  # a builtin tool of the Responses API, say: nothing to call
    return name, field(where, "parameters")


def held_schemas(tools: Iterable[Any] | None, hold_all: bool = False) -> dict[str, Any]:
    """For a grammar over calls (:func:`harmony_plugins.answer_or_call`): each declared
    function's name, and the JSON schema its arguments are held to: its ``parameters`` where
    the function is ``strict`` (or ``hold_all``, a server that holds every function so) and
    declares them, else any JSON object. Built-in tools are no functions and are left out."""
    out: dict[str, Any] = {}
    for tool in declared_tools(tools):
        if isinstance(tool, str):  # a name alone, or a built-in tool's recipient
            if not isinstance(tool, Builtin):
                out[tool] = ANY_OBJECT
            continue
        name, params = name_and_schema(tool)
        if name is None:
            continue
        function = field(tool, "function")
        strict = field(function if function is not None else tool, "strict") is True
        held = (strict or hold_all) and (params.__class__ is dict or isinstance(params, Mapping))
        out[name] = params if held else ANY_OBJECT
    return out


def _check(tools: object) -> None:
    if tools.__class__ is not list and isinstance(tools, (str, bytes, bytearray, Mapping)):
        raise TypeError(
            f"tools must be a list of tools or function names, not a {type(tools).__name__}"
            " (wrap a single tool in a list)")


def tool_table(tools: Iterable[object] | None) -> tuple[frozenset[str], dict[str, Any]]:
    """Function names from an OpenAI ``tools`` array (chat or Responses shape) or names, and
    their ``parameters`` JSON Schemas by name (tools declared without one are left out;
    pydantic ``parameters`` are taken as they are if they are dicts), in one pass.

    Raises TypeError for a ``tools`` that is a string or a single dict (``"get"`` would
    otherwise declare ``g``, ``e`` and ``t``) or holds items of no tool shape.
    """
    if tools is None:
        return frozenset(), {}
    _check(tools)
    names = set()
    schemas: dict[str, Any] = {}
    for tool in tools:
        name, params = name_and_schema(tool)
        if name is not None:
            names.add(name)
            if params.__class__ is dict or isinstance(params, Mapping):
                schemas[name] = params
    return frozenset(names), schemas


def tool_names(tools: Iterable[object] | None) -> frozenset[str]:
    """The names of :func:`tool_table`."""
    return tool_table(tools)[0]
