"""Checking a call's arguments when the call ends (contract section 4).

The arguments are never changed: the check only names an outcome (``rules.OUTCOMES``) that
adapters count and log. JSON Schema validation uses ``jsonschema`` (the optional ``schema``
extra); without it, a call to a tool that declared ``parameters`` is ``unchecked``. A tool's
validator is looked up once per parser, the first time that tool is called, so the per-token
hot path never sees any of this: the check runs once per call, on the whole argument string.
Building a validator checks the schema against its metaschema (about 1.5 ms), so validators
are shared between parsers through a small cache keyed by the schema's canonical JSON
(requests of one deployment declare the same tools again and again).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from . import rules

CACHE_SIZE = 256
"""Validators kept for reuse across parsers (oldest dropped first)."""

_NOT_BUILT = object()
_cache: dict[str, Any] = {}
_cache_lock = threading.Lock()

_jsonschema: Any = None  # the module once imported; False when it is not installed


def _schema_library() -> Any:
    global _jsonschema
    if _jsonschema is None:
        try:
            import jsonschema
        except ImportError:
            jsonschema = False
        _jsonschema = jsonschema
    return _jsonschema


def build_validator(schema: Mapping[str, Any]) -> Any:
    """A validator for ``schema`` (its declared draft, else the latest), or None when the
    schema cannot be used (``jsonschema`` missing, or the schema is invalid). Cached."""
    library = _schema_library()
    if not library:
        return None
    try:
        key = json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        key = None
    if key is not None:
        hit = _cache.get(key, _NOT_BUILT)
        if hit is not _NOT_BUILT:
            return hit
    try:
        cls = library.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema)
    except Exception:  # SchemaError, or a schema so odd that jsonschema trips on it
        validator = None
    if key is not None:
        with _cache_lock:
            if len(_cache) >= CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[key] = validator
    return validator


def declared_properties(schema: Any) -> frozenset[str]:
    """The property names a tool's ``parameters`` declares (none: an empty set). Only these
    tell a forced call's bare JSON object from any JSON answer (contract section 10): a
    function that declares none never receives a bare object."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(properties) if isinstance(properties, Mapping) else frozenset()


def of_declared_keys(arguments: str, properties: frozenset[str]) -> bool:
    """Whether ``arguments`` is a JSON object with at least one key, every key one of
    ``properties``: a bare object plainly written as a call to that function (contract
    section 10), not a JSON answer that happens to fit a lax schema."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and bool(value) and properties.issuperset(value)


def schema_check_available() -> bool:
    """Whether arguments can be checked against a JSON Schema (``jsonschema`` importable)."""
    return bool(_schema_library())


class ArgumentChecker:
    """Checks each ended call's arguments against its tool's declared ``parameters``."""

    __slots__ = ("schemas", "validators")

    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self.schemas = schemas
        self.validators: dict[str, Any] = {}  # name -> validator or None, built on first use

    def check(self, name: str, arguments: str) -> str:
        """The outcome for one call's whole argument text."""
        try:
            value = json.loads(arguments)
        except RecursionError:
            return rules.UNCHECKED  # valid or not, too deep to tell
        except ValueError:
            return rules.INVALID_JSON
        if not isinstance(value, dict):
            return rules.NOT_OBJECT
        schema = self.schemas.get(name)
        if schema is None:
            return rules.SURFACED
        validator = self.validators.get(name, _NOT_BUILT)
        if validator is _NOT_BUILT:
            validator = self.validators[name] = build_validator(schema)
        if validator is None:
            return rules.UNCHECKED
        try:
            valid = validator.is_valid(value)
        except Exception:  # RecursionError on deep values, an unresolvable $ref, ...
            return rules.UNCHECKED
        return rules.SURFACED if valid else rules.SCHEMA_MISMATCH
