"""Pydantic v2 model instances built from values already known to be valid.

Both engines hand their per-step results to the server as pydantic models (vLLM's
``DeltaMessage``, SGLang's ``StreamingParseResult`` and ``ToolCallItem``), and constructing
one runs validation that costs more than our whole parse of a token: a Python wrap
validator in vLLM, a deep copy of a ``[]`` default in SGLang. The adapters fill these models
with strings and ints the parser produced, so validation has nothing to check. A
:class:`Builder` makes the instance pydantic would make (field values, the set of fields
given, extras) without running it.

That relies on pydantic v2's instance layout (four slots on ``BaseModel``). Adapters must
call :func:`agrees` on a few samples at import and use the validated constructor if it says
no; :data:`SLOTS` is None where pydantic is missing or laid out otherwise. This module does
not import pydantic unless asked to, so the core stays free of it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
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


_IMMUTABLE = (type(None), str, int, float, bool, bytes, tuple, frozenset)


class Builder:
    """``Builder(Model)(fields)``: a ``Model`` with exactly ``fields`` given, unvalidated.

    Defaults are what pydantic gives: immutable ones shared, mutable ones (a ``[]`` default)
    copied per instance, factories called per instance. A build that does not give every
    required field is refused (TypeError), never filled with pydantic's ``PydanticUndefined``.
    :attr:`build` is the same as calling the builder, as one plain function (adapters call it
    once per decode step, where a method call's cost shows).
    """

    __slots__ = ("cls", "defaults", "factories", "extra", "required", "build")

    def __init__(self, cls: Any) -> None:
        _load()
        self.cls = cls
        self.defaults: dict[str, Any] = {}
        factories: list[tuple[str, Callable[[], Any]]] = []
        required = []
        for name, field in cls.model_fields.items():
            if field.is_required():
                required.append(name)
                self.defaults[name] = None  # always given (checked per build)
            elif field.default_factory is not None:
                factories.append((name, field.default_factory))
                self.defaults[name] = None  # placeholder, keeps the field order
            elif isinstance(field.default, _IMMUTABLE):
                self.defaults[name] = field.default
            else:
                factories.append((name, functools.partial(copy.deepcopy, field.default)))
                self.defaults[name] = None
        self.factories: tuple[tuple[str, Callable[[], Any]], ...] = tuple(factories)
        self.extra = cls.model_config.get("extra") == "allow"  # then extras are {} not None
        self.required = frozenset(required)
        self.build: Callable[[dict[str, Any]], Any] = self._compile()

    def __call__(self, given: dict[str, Any]) -> Any:
        return self.build(given)

    def _compile(self) -> Callable[[dict[str, Any]], Any]:
        cls, defaults, factories = self.cls, self.defaults, self.factories
        required = tuple(sorted(self.required))
        extra = self.extra

        def build(given: dict[str, Any]) -> Any:
            for name in required:
                if name not in given:
                    raise TypeError(f"{cls.__name__} needs {name}")
            values = defaults | given
            for name, factory in factories:
                if name not in given:
                    values[name] = factory()
            obj = _new(cls)
            _set_dict(obj, values)
            _set_fields(obj, set(given))
            _set_extra(obj, {} if extra else None)
            _set_private(obj, None)
            return obj

        if required or len(factories) > 1:
            return build
        if not factories:  # plain defaults only: nothing to check or call per build

            def build_plain(given: dict[str, Any]) -> Any:
                obj = _new(cls)
                _set_dict(obj, defaults | given)
                _set_fields(obj, set(given))
                _set_extra(obj, {} if extra else None)
                _set_private(obj, None)
                return obj

            return build_plain
        ((only, factory),) = factories  # the usual shape (a list default): unrolled

        def build_one_factory(given: dict[str, Any]) -> Any:
            values = defaults | given
            if only not in given:
                values[only] = factory()
            obj = _new(cls)
            _set_dict(obj, values)
            _set_fields(obj, set(given))
            _set_extra(obj, {} if extra else None)
            _set_private(obj, None)
            return obj

        return build_one_factory


def agrees(pairs: Callable[[], list[tuple[Any, Any]]]) -> bool:
    """Build (built here, validated) sample pairs and compare them with :func:`same`.

    False where the layout is unknown or building a sample fails: use validation then.
    """
    if _load() is None:
        return False
    try:
        built = pairs()
    except Exception:  # a layout we do not know: validate
        return False
    return same(built)


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
