"""One grammar for a turn that ends in a call or in an answer a schema holds (contract section
10), as xgrammar's structural tag.

An agent that wants a typed answer and tools sends both: the model may call a tool or answer in
the schema. For most models the two are hard to tell apart while generating; Harmony's headers
make it exact, since a call is a message to ``functions.NAME`` and the answer is the ``final``
message. So one grammar holds the whole turn: any number of analysis messages and preambles
first, free; then one of

* a call to a declared function: its header as gpt-oss writes it or as calls are rendered
  (:func:`harmony_plugins.harmony.call_headers`), its arguments a JSON object, held to the
  function's schema where the request asks for that (a ``strict`` function), ended by
  ``<|call|>`` (or ``<|end|>``), after which the turn is over: one call;
* the final answer, its header in any of its three spellings
  (:data:`harmony_plugins.harmony.ANSWER_HEADERS`), its body held to the schema, ended by
  ``<|return|>`` (or ``<|end|>``).

Both engines take grammars as xgrammar's structural tags, whose JSON form is xgrammar's public
interface (a ``format`` tree of ``sequence``, ``or``, ``star``, ``tag``, ``const_string``,
``any_text`` and ``json_schema``); the core builds that form as plain data, importing no
xgrammar, and an adapter hands it over. A stop token is written as an empty tag end, as
vLLM's own Harmony tags write it: xgrammar lets a finished grammar end at the engine's stop ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import harmony as hm
from ._tool_choice import AUTO, ToolChoice

_ENDS = [hm.END_TOKEN, ""]  # <|end|>, or a stop token (<|call|>, <|return|>)


def answer_or_call(calls: Mapping[str, Mapping[str, Any]], answer: Mapping[str, Any] | None,
                   choice: ToolChoice = AUTO) -> dict[str, Any]:
    """The structural tag of a turn ending in one call to a function of ``calls`` (name to the
    JSON schema its arguments are held to; ``{"type": "object"}`` for any object) or in a final
    answer whose body ``answer`` (a JSON schema; None: no answer) holds, as far as the
    request's ``choice`` allows each (:func:`harmony_plugins.read_tool_choice`). At least one
    must be allowed: ValueError otherwise."""
    calls = choice.allowed(calls)
    if not choice.answer:
        answer = None
    if not calls and answer is None:
        raise ValueError("a turn with neither a call nor an answer allowed has no grammar")
    ends = [_tag(header, _json(schema), _ENDS)
            for name, schema in calls.items() for header in hm.call_headers(name)]
    if answer is not None:
        ends += [_tag(header, _json(answer), _ENDS) for header in hm.ANSWER_HEADERS]
    free = {"type": "or", "elements": [
        {"type": "sequence", "elements": [
            _tag(header, {"type": "any_text"}, hm.END_TOKEN),
            {"type": "const_string", "value": hm.NEXT_MESSAGE}]}
        for header in hm.FREE_HEADERS]}
    return {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "star", "content": free}, {"type": "or", "elements": ends}]}}


def _tag(begin: str, content: dict[str, Any], end: str | list[str]) -> dict[str, Any]:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": dict(schema)}
