"""A hooked SGLang function's argument, by name (not a tool call's: those are the core's).

SGLang's ``HookRegistry`` hands BEFORE and AFTER hooks the call's ``args`` and ``kwargs`` as
the caller wrote them, so an argument may come by keyword or by position; its position is read
once from the original function's signature.
"""

from __future__ import annotations

import functools
import inspect
import pkgutil
from typing import Any


@functools.cache
def positions(target: str) -> dict[str, int]:
    """Parameter positions of the function ``target`` names (``self`` included), read from
    its original (under any wrapper). Raises what resolving ``target`` raises."""
    func = inspect.unwrap(pkgutil.resolve_name(target))
    return {name: i for i, name in enumerate(inspect.signature(func).parameters)}


def argument(target: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The argument ``name`` of a call to ``target`` with ``args`` and ``kwargs``, or None
    when the call did not pass it."""
    if name in kwargs:
        return kwargs[name]
    index = positions(target).get(name)
    return args[index] if index is not None and index < len(args) else None
