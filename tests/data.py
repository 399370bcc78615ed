"""Test data that several test files share, each written once.

* ``KNOWN_TEXT`` and ``KNOWN_IDS``: real gpt-oss output (docs/tokenizer.md) and its
  o200k_harmony token ids, written once in ``harmony_ext_testing/hf_tokenizer.py`` (its
  self-check needs them too; the instruments do not import the tests) and taken from there.
* :func:`variant` derives from the tool the tests declare (``WEATHER``, in
  ``harmony_ext_testing/client.py``, which the page generators share) the forms some tests need
  (another description, a stricter or looser schema, one more property), and
  :func:`responses_tool` the Responses API's flat form.
* :func:`per_char_events`: a text fed to a ``StreamParser`` one character at a time.

The fold of streamed deltas as a client folds them is ``harmony_ext_testing/client.py``'s too.
"""

from __future__ import annotations

import copy
from typing import Any

from harmony_ext_testing.client import WEATHER

# The known sequence, re-exported: the tests take it from here.
from harmony_ext_testing.hf_tokenizer import KNOWN_IDS as KNOWN_IDS
from harmony_ext_testing.hf_tokenizer import KNOWN_TEXT as KNOWN_TEXT


def variant(description: str | None = "", parameters: dict[str, Any] | None = None,
            **properties: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of ``WEATHER`` with another ``description`` (None: none; ``""``:
    unchanged), another schema ``parameters``, and ``properties`` added to the schema."""
    tool = copy.deepcopy(WEATHER)
    function = tool["function"]
    if description is None:
        del function["description"]
    elif description:
        function["description"] = description
    if parameters is not None:
        function["parameters"] = copy.deepcopy(parameters)
    if properties:
        function["parameters"]["properties"].update(properties)
    return tool


STRICT: dict[str, Any] = {**copy.deepcopy(WEATHER["function"]["parameters"]),
                          "additionalProperties": False}
"""``WEATHER``'s schema, closed to other properties."""
ANY_OBJECT: dict[str, Any] = {"type": "object"}
"""A schema any JSON object passes."""


def responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool in the Responses API's flat form (``name`` and the rest at the
    top, beside ``type``)."""
    return {"type": tool["type"], **copy.deepcopy(tool["function"])}


def per_char_events(text: str, tools: Any = None) -> list[Any]:
    """The events of ``text`` fed to a fresh ``StreamParser`` one character per delta, then
    closed: the finest cut of a text stream."""
    from harmony_plugins import StreamParser

    parser = StreamParser(tools)
    events: list[Any] = []
    for ch in text:
        events += parser.feed_text(ch)
    return events + parser.close()


CUTS = ("whole", "per_char")
"""The two extreme cuts of a text stream, for :func:`cut_events`."""


def cut_events(text: str, cut: str, tools: Any = None) -> list[Any]:
    """The events of ``text`` fed to a fresh ``StreamParser`` in one delta (``"whole"``) or
    one character per delta (``"per_char"``), then closed."""
    from harmony_plugins import StreamParser

    if cut == "per_char":
        return per_char_events(text, tools)
    parser = StreamParser(tools)
    return parser.feed_text(text) + parser.close()
