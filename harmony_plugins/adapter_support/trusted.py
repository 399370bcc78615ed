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

That relies on pydantic v2's instance layout (four slots on ``BaseModel``, the first
``__dict__``) and on CPython's ``__class__`` assignment (see :func:`template`); :data:`SLOTS`
is None where pydantic is missing or laid out otherwise. This module does not import pydantic
unless asked to, so the core stays free of it.
"""

from __future__ import annotations

import copy
import functools
import keyword
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

_new = object.__new__
_LAYOUT = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
_base: Any = None  # pydantic's BaseModel, once SLOTS says its layout is known


def _slots() -> tuple[str, ...] | None:
    global _base
    try:
        from pydantic import BaseModel
    except ImportError:
        return None
    if tuple(getattr(BaseModel, "__slots__", ())) != _LAYOUT:
        return None
    _base = BaseModel
    return _LAYOUT


def _load() -> tuple[str, ...] | None:
    """:data:`SLOTS`, looked up (importing pydantic) on first use, not at import."""
    global SLOTS
    if "SLOTS" not in globals():
        SLOTS = _slots()
    return globals()["SLOTS"]


def __getattr__(name: str) -> Any:
    """``SLOTS``: the names of pydantic's ``BaseModel`` instance slots, or None (pydantic
    missing or laid out otherwise); computed on first access."""
    if name == "SLOTS":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_STAND_INS: dict[type, type] = {}


def stand_in(cls: Any) -> type:
    """A class laid out as ``cls`` (a subclass of ``BaseModel`` adding no slots) whose
    attributes are set by ``object``'s own ``__setattr__``: an instance is filled there with
    plain attribute stores, then given ``cls`` as its class. TypeError where ``cls``'s layout
    differs (CPython refuses the ``__class__`` assignment)."""
    made = _STAND_INS.get(cls)
    if made is None:
        if _load() is None:
            raise TypeError("pydantic's BaseModel is missing or laid out otherwise")
        # type.__new__, not the metaclass's own: a bare layout, no model set-up. Both of
        # object's methods: BaseModel defines both in Python, and CPython sets and deletes
        # attributes through one slot, which stays a Python call while either is Python.
        made = type.__new__(type(_base), f"{cls.__name__}StandIn", (_base,), {
            "__setattr__": object.__setattr__, "__delattr__": object.__delattr__,
            "__module__": __name__})
        try:
            _new(made).__class__ = cls
        except TypeError as error:  # CPython compares the two layouts
            raise TypeError(f"{cls.__name__} is laid out otherwise than BaseModel") from error
        _STAND_INS[cls] = made
    return made


_LITERAL_DEFAULTS = {list: "[]", dict: "{}"}
"""Empty mutable defaults (``[]``, or a ``list`` factory), written as literals: a fresh object
per instance, as pydantic's copy of the default or call of the factory gives, without the
copy or the call."""
_IMMUTABLE = (type(None), str, int, float, bool, bytes, tuple, frozenset)


Field = Any
"""A field a template is given: its name (the value is the next parameter), or
``(name, (Model, fields))`` (the value a ``Model`` built in the same call), or
``(name, [(Model, fields)])`` (a list of one)."""


def template(cls: Any, *fields: Field) -> Callable[..., Any]:
    """A function of the values of ``fields`` (in that order, positionally; a nested model's
    values in place of it) that builds a ``cls`` with exactly those fields given,
    unvalidated.

    The other fields get what pydantic gives them: immutable defaults shared, mutable ones
    fresh per instance, factories called per instance. A shape that leaves out a required
    field is refused (TypeError), never filled with pydantic's ``PydanticUndefined``.

    The function is generated (as :mod:`dataclasses` generates ``__init__``). Each instance
    is made as its :func:`stand_in`, whose fields (in the model's order) and three pydantic
    slots are filled by plain attribute stores, which CPython specialises; then its class
    becomes ``cls``. ``BaseModel``'s own ``__setattr__`` is Python, and a slot's setter
    called from Python costs about 660 instructions a store; this way a vLLM
    ``DeltaMessage`` costs about 40% less. A nested model is built in the same call (a delta
    holding a tool call holding a function is one call, not three).
    """
    scope: dict[str, Any] = {"_new": _new}
    params: list[str] = []
    lines: list[str] = []
    top = _model(cls, fields, scope, params, lines)
    # The names build reads are the closure's (fast local lookups), not a module's globals.
    body = "".join(f"        {line}\n" for line in lines)
    source = (
        f"def outer({', '.join(scope)}):\n"
        f"    def build({', '.join(params)}):\n"
        f"{body}"
        f"        return {top}\n"
        "    return build\n")
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # the source is built above from field reprs and fixed text only
    build = namespace["outer"](**scope)
    names = [_split(field)[0] for field in fields]
    build.__qualname__ = build.__name__ = f"{cls.__name__}_{'_'.join(names) or 'defaults'}"
    return build


def _split(field: Field) -> tuple[str, tuple[Any, tuple[Field, ...]] | None, bool]:
    """A field as ``(name, nested, listed)``: ``nested`` is the ``(Model, fields)`` built for
    it (None: its value is a parameter), ``listed`` whether that model comes in a list of one."""
    if isinstance(field, str):
        return field, None, False
    name, inner = field
    if isinstance(inner, list):
        (one,) = inner
        return name, one, True
    return name, inner, False


def _model(cls: Any, fields: tuple[Field, ...], scope: dict[str, Any], params: list[str],
           lines: list[str]) -> str:
    """Append to ``lines`` the statements that build one ``cls`` (its nested models first)
    and return the name of the variable that holds it; its values are added to ``params``."""
    known = cls.model_fields
    given: dict[str, str] = {}
    for field in fields:
        name, nested, listed = _split(field)
        if nested is None:
            value = f"_v{len(params)}"
            params.append(value)
        else:
            value = _model(*nested, scope, params, lines)
            if listed:
                value = f"[{value}]"
        if name not in known:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
        given[name] = value
    shape = stand_in(cls)
    for name in known:
        if not name.isidentifier() or keyword.iskeyword(name) or hasattr(shape, name):
            raise TypeError(f"{cls.__name__}.{name}: not set by a plain attribute store")
    n = len(scope)  # the scope only grows: a name no other model of this build has
    scope[f"_c{n}"] = cls
    scope[f"_s{n}"] = shape
    obj = f"_o{n}"
    values = [(name, given[name] if name in given else _default(cls, name, field, f"{n}_{k}",
                                                                scope))
              for k, (name, field) in enumerate(known.items())]
    fields_set = "{" + ", ".join(map(repr, given)) + "}" if given else "set()"
    extra = "{}" if cls.model_config.get("extra") == "allow" else "None"
    lines.append(f"{obj} = _new(_s{n})")
    lines += [f"{obj}.{name} = {value}" for name, value in values]
    lines += [f"{obj}.__pydantic_fields_set__ = {fields_set}",
              f"{obj}.__pydantic_extra__ = {extra}", f"{obj}.__pydantic_private__ = None",
              f"{obj}.__class__ = _c{n}"]
    return obj


def _default(cls: Any, name: str, field: Any, k: str, scope: dict[str, Any]) -> str:
    """The expression of the value pydantic gives field ``name`` (``k`` names it in the
    scope) when it is not given; what it reads is put in ``scope``. TypeError for a field it
    cannot fill."""
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


def validated(cls: Any, *fields: Field) -> Callable[..., Any]:
    """The validated twin of :func:`template` (the models' own constructors, same
    arguments)."""

    def build(*values: Any) -> Any:
        given = iter(values)
        made = _construct(cls, fields, given)
        if next(given, given) is not given:
            raise TypeError(f"{cls.__name__}: more values than fields")
        return made

    return build


def _construct(cls: Any, fields: tuple[Field, ...], values: Iterator[Any]) -> Any:
    given: dict[str, Any] = {}
    for field in fields:
        name, nested, listed = _split(field)
        if nested is None:
            given[name] = next(values)
        else:
            made = _construct(*nested, values)
            given[name] = [made] if listed else made
    return cls(**given)


Shape = tuple[Any, tuple[Field, ...], tuple[Any, ...]]
"""``(model, fields, sample values)``: one kind of instance an adapter builds (fields as
:func:`template` takes them)."""


def builders(shapes: dict[str, Shape], validate: bool = False) -> SimpleNamespace:
    """One function per named shape, as attributes, and ``trusted``: unvalidated templates when
    each shape's template makes, on its sample, what validation makes (:func:`same`); the
    validated constructors otherwise, or when ``validate`` is asked (tests compare the two)."""
    if not validate and _load() is not None:
        try:
            made = {name: template(cls, *names) for name, (cls, names, _) in shapes.items()}
            pairs = [(made[name](*sample), validated(cls, *names)(*sample))
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
