"""A hooked SGLang function's arguments, by name (not a tool call's: those are the core's).

SGLang's ``HookRegistry`` hands a hook the call's ``args`` and ``kwargs`` as the caller wrote
them (an AROUND hook after the original), so an argument may come by keyword or by position.
Every hook reads them here, from the original function's signature, read once per process
(:func:`signature`; the plugin reads each target's when it installs the hooks): no hook reads
a signature per request.
"""

from __future__ import annotations

import functools
import inspect
import pkgutil
from typing import Any


@functools.cache
def signature(target: str) -> inspect.Signature:
    """The signature of the function ``target`` names (``self`` included), read from its
    original (under any wrapper). Raises what resolving ``target`` raises."""
    return inspect.signature(inspect.unwrap(pkgutil.resolve_name(target)))


@functools.cache
def positions(target: str) -> dict[str, int]:
    """Parameter positions of the function ``target`` names (``self`` included)."""
    return {name: i for i, name in enumerate(signature(target).parameters)}


def argument(target: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The argument ``name`` of a call to ``target`` with ``args`` and ``kwargs``, or None
    when the call did not pass it."""
    if name in kwargs:
        return kwargs[name]
    index = positions(target).get(name)
    return args[index] if index is not None and index < len(args) else None


def bound(target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    """Every argument of a call to ``target``, by name, its defaults applied (to read several,
    or to call the original with one replaced). TypeError where they do not fit."""
    call = signature(target).bind(*args, **kwargs)
    call.apply_defaults()
    return call
