"""Pydantic v2 model instances built from values already known to be valid.

Both engines hand their per-step results to the server as pydantic models (vLLM's
``DeltaMessage``, SGLang's ``StreamingParseResult`` and ``ToolCallItem``), and constructing
one runs validation that costs more than our whole parse of a token: a Python wrap
validator in vLLM, a deep copy of a ``[]`` default in SGLang. The adapters fill these models
with strings and ints the parser produced, so validation has nothing to check. A
:func:`template` makes the instance pydantic would make (field values, the set of fields
given, extras) without running it, for one *shape*: a model with a fixed set of fields given.
An adapter names its shapes once, with a sample of each, and :func:`builders` gives it one
function per shape: a template where every sample agrees with what validation makes, the
validated constructor otherwise.

That relies on pydantic v2's instance layout (four slots on ``BaseModel``); :data:`SLOTS` is
None where pydantic is missing or laid out otherwise. This module does not import pydantic
unless asked to, so the core stays free of it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

_new = object.__new__


def _slots() -> tuple[Callable[[Any, Any], None], ...] | None:
    try:
        from pydantic import BaseModel

        slot = BaseModel.__dict__
        return tuple(slot[name].__set__ for name in (
            "__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))
    except (ImportError, KeyError, AttributeError):
        return None


_Setter = Callable[[Any, Any], None]
_set_dict: _Setter
_set_fields: _Setter
_set_extra: _Setter
_set_private: _Setter


def _load() -> tuple[_Setter, ...] | None:
    """:data:`SLOTS`, looked up (importing pydantic) on first use, not at import."""
    global SLOTS, _set_dict, _set_fields, _set_extra, _set_private
    if "SLOTS" not in globals():
        SLOTS = _slots()
        _set_dict, _set_fields, _set_extra, _set_private = SLOTS or (None,) * 4
    return globals()["SLOTS"]


def __getattr__(name: str) -> Any:
    """``SLOTS``: ``(set_dict, set_fields_set, set_extra, set_private)`` setters, or None
    (pydantic missing or not v2); computed on first access."""
    if name == "SLOTS":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LITERAL_DEFAULTS = {list: "[]", dict: "{}"}
"""Empty mutable defaults (``[]``, or a ``list`` factory), written as literals: a fresh object
per instance, as pydantic's copy of the default or call of the factory gives, without the
copy or the call."""
_IMMUTABLE = (type(None), str, int, float, bool, bytes, tuple, frozenset)


def template(cls: Any, *names: str) -> Callable[..., Any]:
    """A function of the values of ``names`` (in that order, positionally) that builds a
    ``cls`` with exactly those fields given, unvalidated.

    The other fields get what pydantic gives them: immutable defaults shared, mutable ones
    fresh per instance, factories called per instance. A shape that leaves out a required
    field is refused (TypeError), never filled with pydantic's ``PydanticUndefined``.

    The function is generated (as :mod:`dataclasses` generates ``__init__``): the instance's
    ``__dict__`` (made empty by the attribute's getter) filled item by item, in the fields'
    order, and three slot stores (about 15% cheaper, on vLLM's ``DeltaMessage``, than a dict
    display handed to the ``__dict__`` slot's setter): the least a pydantic instance can be
    built with.
    """
    _load()
    fields = cls.model_fields
    for name in names:
        if name not in fields:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
    scope: dict[str, Any] = {"_new": _new, "_cls": cls,
                             "_set_fields": _set_fields, "_set_extra": _set_extra,
                             "_set_private": _set_private}
    params = [f"_v{i}" for i in range(len(names))]
    given = dict(zip(names, params, strict=True))
    values = [(name, given[name] if name in given else _default(cls, name, field, k, scope))
              for k, (name, field) in enumerate(fields.items())]
    fields_set = "{" + ", ".join(map(repr, names)) + "}" if names else "set()"
    extra = "{}" if cls.model_config.get("extra") == "allow" else "None"
    stores = "".join(f"        d[{name!r}] = {value}\n" for name, value in values)
    # The names build reads are the closure's (fast local lookups), not a module's globals.
    source = (
        f"def outer({', '.join(scope)}):\n"
        f"    def build({', '.join(params)}):\n"
        "        obj = _new(_cls)\n"
        "        d = obj.__dict__\n"
        f"{stores}"
        f"        _set_fields(obj, {fields_set})\n"
        f"        _set_extra(obj, {extra})\n"
        "        _set_private(obj, None)\n"
        "        return obj\n"
        "    return build\n")
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the source is built above from field reprs and fixed text only
    build = namespace["outer"](**scope)
    build.__qualname__ = build.__name__ = f"{cls.__name__}_{'_'.join(names) or 'defaults'}"
    return build


def _default(cls: Any, name: str, field: Any, k: int, scope: dict[str, Any]) -> str:
    """The expression of the value pydantic gives field ``name`` (number ``k``) when it is not
    given; what it reads is put in ``scope``. TypeError for a field it cannot fill."""
    default, factory = field.default, field.default_factory
    if field.is_required():
        raise TypeError(f"{cls.__name__} needs {name}")
    if factory is list or factory is dict:  # a display: fresh, without the call
        return _LITERAL_DEFAULTS[factory]
    if factory is not None:
        if getattr(field, "default_factory_takes_data", False):
            raise TypeError(f"{cls.__name__}.{name}: a factory of the validated data")
        scope[f"_f{k}"] = factory
        return f"_f{k}()"
    if default is None or default.__class__ is bool:
        return repr(default)  # a constant in the code
    if isinstance(default, _IMMUTABLE):
        scope[f"_d{k}"] = default
        return f"_d{k}"
    if type(default) in _LITERAL_DEFAULTS and not default:
        return _LITERAL_DEFAULTS[type(default)]
    scope[f"_f{k}"] = functools.partial(copy.deepcopy, default)
    return f"_f{k}()"


def validated(cls: Any, *names: str) -> Callable[..., Any]:
    """The validated twin of :func:`template` (the model's own constructor, same arguments)."""

    def build(*values: Any) -> Any:
        return cls(**dict(zip(names, values, strict=True)))

    return build


Shape = tuple[Any, tuple[str, ...], tuple[Any, ...]]
"""``(model, field names, sample values)``: one kind of instance an adapter builds."""


def builders(shapes: dict[str, Shape], validate: bool = False) -> SimpleNamespace:
    """One function per named shape, as attributes, and ``trusted``: unvalidated templates when
    each shape's template makes, on its sample, what validation makes (:func:`same`); the
    validated constructors otherwise, or when ``validate`` is asked (tests compare the two)."""
    if not validate and _load() is not None:
        try:
            made = {name: template(cls, *names) for name, (cls, names, _) in shapes.items()}
            pairs = [(made[name](*sample), cls(**dict(zip(names, sample, strict=True))))
                     for name, (cls, names, sample) in shapes.items()]
        except Exception:  # a layout or a field we do not know: validate
            pairs = []
        if pairs and same(pairs):
            return SimpleNamespace(trusted=True, **made)
    return SimpleNamespace(trusted=False, **{
        name: validated(cls, *names) for name, (cls, names, _) in shapes.items()})


def same(pairs: list[tuple[Any, Any]]) -> bool:
    """Whether each (built, validated) pair is the same object as far as anyone can tell."""
    if _load() is None:
        return False
    try:
        for fast, slow in pairs:
            if (type(fast) is not type(slow) or fast != slow
                    or fast.model_fields_set != slow.model_fields_set
                    or fast.model_dump() != slow.model_dump()
                    or fast.model_dump_json() != slow.model_dump_json()
                    or fast.model_dump_json(exclude_unset=True)
                    != slow.model_dump_json(exclude_unset=True)):
                return False
    except Exception:  # any surprise means: do not trust the layout
        return False
    return True
