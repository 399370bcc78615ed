"""Building an engine's pydantic models from values the parser made, validated.

Both engines take each decode step's result as pydantic models (vLLM's ``DeltaMessage`` and
its tool-call items, SGLang's ``StreamingParseResult`` and ``ToolCallItem``), and an adapter
builds one or more per step. :func:`validator` gives it the model's own validator
(``Model.__pydantic_validator__.validate_python``), called with a dict of the fields given:
the instance pydantic makes, every field and model validator run, without the Python
``__init__`` frame and the keyword packing of ``Model(**fields)``.

One exception, named by the adapter after reading the code: an outermost *wrap* validator
that changes and refuses nothing. vLLM's ``OpenAIBaseModel.__log_extra_fields__`` hands the
data to pydantic, then logs the keys no field declares; a dict of declared fields has none,
and the Python call costs more than the rest of the validation. Where the model's schema is
that wrap around the model, the schema inside it is validated instead (a ``SchemaValidator``
built once per model); any other validator, or the same name from another package, keeps the
whole schema. A validator whose effect depends on the value (strip, clamp, refuse) therefore
always runs.

This module imports pydantic only when asked for a validator, so the core stays free of it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

Validate = Callable[[dict[str, Any]], Any]
"""``validate(fields)``: a model instance from a dict of its fields (those given, by name)."""


def validator(cls: Any, harmless: Collection[str] = (), module: str = "") -> Validate:
    """``cls``'s validator, as a function of a dict of the fields given.

    ``harmless``: qualified names (``"Class.method"``) of wrap validators known to change and
    refuse nothing; one counts only as the outermost validator of ``cls`` and only where its
    function comes from ``module`` (a package such as ``"vllm"``, or a module of it)."""
    inner = skipped_wrap(cls, harmless, module)
    if inner is not None:
        from pydantic_core import SchemaValidator

        try:
            return SchemaValidator(inner).validate_python
        except Exception:  # a schema that needs its outer part: validate with all of it
            pass
    return cls.__pydantic_validator__.validate_python


def skipped_wrap(cls: Any, harmless: Collection[str], module: str) -> Any:
    """The schema inside ``cls``'s outermost validator when that is a wrap validator named in
    ``harmless`` from ``module``; None when the whole schema must run."""
    schema = getattr(cls, "__pydantic_core_schema__", None)
    if not isinstance(schema, dict) or schema.get("type") != "function-wrap" or not module:
        return None
    function = schema.get("function", {}).get("function")
    function = getattr(function, "__func__", function)
    where = getattr(function, "__module__", None) or ""
    if getattr(function, "__qualname__", None) not in harmless or not (
            where == module or where.startswith(module + ".")):
        return None
    inner = schema.get("schema")
    return inner if isinstance(inner, dict) and inner.get("type") == "model" else None
