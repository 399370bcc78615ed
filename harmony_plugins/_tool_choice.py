"""What a request's ``tool_choice`` and ``parallel_tool_calls`` allow, decided once (contract
section 10).

The parse (:class:`~harmony_plugins.Request`: which calls it surfaces, which bare JSON object
is a forced call), the grammar of a turn (:func:`harmony_plugins.answer_or_call`: which calls
and whether the answer may end it) and both adapters read the one :class:`ToolChoice` that
:func:`read_tool_choice` makes of the request's own fields, never the fields themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._tools import field

_Schema = TypeVar("_Schema")


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """What one request allows: calls or not, to which functions, whether the turn may end in
    an answer without a call, one call or several."""

    calls: bool = True
    """A call may be surfaced (``"none"``: no; a call the model writes anyway is undeclared)."""
    function: str | None = None
    """The one function a call may name (a named ``tool_choice``); None: any declared one."""
    answer: bool = True
    """The turn may end in an answer without a call (``"required"``, a named function: no)."""
    parallel: bool = True
    """Several calls may be surfaced (``parallel_tool_calls`` false: the first only)."""
    known: bool = True
    """The core knows this ``tool_choice``'s form. A form it does not (a hosted tool's type,
    ``allowed_tools``, an unknown mode) is read as ``"auto"``, and an engine that handles it
    itself is left to."""

    @property
    def forced(self) -> str | None:
        """The call the choice forces: ``"required"`` (any declared function), the named
        function's name, or None (``"auto"``, ``"none"``, not given)."""
        if self.function is not None:
            return self.function
        return None if self.answer else "required"

    def allowed(self, functions: Mapping[str, _Schema]) -> dict[str, _Schema]:
        """Of ``functions`` (a declared function's name to anything), those a call may name."""
        if not self.calls:
            return {}
        if self.function is not None:
            return {self.function: functions[self.function]} if self.function in functions else {}
        return dict(functions)


AUTO = ToolChoice()
"""``"auto"``, or no ``tool_choice`` given: any declared function, or the answer."""


def read_tool_choice(tool_choice: Any = None, parallel_tool_calls: Any = True) -> ToolChoice:
    """The request's ``tool_choice`` (a mode string, an engine's enum of one, or a named
    function as a dict or an object: ``{"type": "function", "function": {"name": ...}}``, or
    the Responses API's ``{"type": "function", "name": ...}``) and its ``parallel_tool_calls``
    (only ``False`` turns parallel calls off), read."""
    parallel = parallel_tool_calls is not False
    value = getattr(tool_choice, "value", tool_choice)  # an engine's enum
    if value is None or value == "auto":
        return AUTO if parallel else ToolChoice(parallel=False)
    if value == "none":
        return ToolChoice(calls=False, parallel=parallel)
    if value == "required":
        return ToolChoice(answer=False, parallel=parallel)
    if not isinstance(tool_choice, str):
        function = field(tool_choice, "function")
        name = field(function, "name") if function is not None else field(tool_choice, "name")
        if isinstance(name, str) and name:
            return ToolChoice(function=name, answer=False, parallel=parallel)
    return ToolChoice(parallel=parallel, known=False)
