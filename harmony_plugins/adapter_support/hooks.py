"""Wrapping an engine's function in place, once per process.

Both engines are hooked where they offer no extension point (vLLM's parser composition and
prompt conversion, SGLang's functions where it has no hook registry). An engine process may
load the plugin twice; a second wrap would nest two wrappers, so each wrapper carries
:data:`MARK` and a function already carrying it is left alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

MARK = "_harmony_ext_hook"


def wrapped(func: Any) -> bool:
    """Whether ``func`` is one of our wrappers."""
    return bool(getattr(func, MARK, False))


def wrap_once(owner: Any, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
              ) -> bool:
    """Replace ``owner.name`` (a module's function, or a class's function or classmethod) by
    ``wrap(original)``; False, and nothing changed, when it is ours already. ``wrap`` gets and
    returns plain functions: a classmethod stays a classmethod."""
    raw = inspect.getattr_static(owner, name)
    is_classmethod = isinstance(raw, classmethod)
    original = raw.__func__ if is_classmethod else getattr(owner, name)
    if wrapped(original):
        return False
    wrapper = wrap(original)
    setattr(wrapper, MARK, True)
    setattr(owner, name, classmethod(wrapper) if is_classmethod else wrapper)
    return True
