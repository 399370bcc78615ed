"""The server switches harmony-ext reads, and how their values are spelled.

Read where an adapter builds a request (the engine's environment is the adapter's to hand over:
the core reads no environment itself), and spelled one way for both engines.
"""

from __future__ import annotations

from collections.abc import Mapping

SWITCH_ON = frozenset({"1", "true", "yes", "on"})
"""Spellings that turn an environment switch on (case-insensitive, spaces ignored)."""

PASS_UNDECLARED_ENV = "HARMONY_EXT_PASS_UNDECLARED"
"""The server option that surfaces calls to ``functions.*`` names the request did not declare."""


def switch(value: str | None) -> bool:
    """Whether an environment switch's value turns it on: ``1``, ``true``, ``yes``, ``on``."""
    return value is not None and value.strip().lower() in SWITCH_ON


SWITCH_OFF = frozenset({"0", "false", "no", "off"})
"""Spellings that turn an environment switch that is on by default off."""

TURN_STOP_ENV = "HARMONY_EXT_TURN_STOP"
"""The server option that stops a generation where the model began another role's turn
(contract section 10); on by default."""


def turn_stop(environ: Mapping[str, str]) -> bool:
    """The turn-stop switch from an environment: on unless ``HARMONY_EXT_TURN_STOP`` is
    ``0``, ``false``, ``no`` or ``off`` (any case)."""
    value = environ.get(TURN_STOP_ENV)
    return value is None or value.strip().lower() not in SWITCH_OFF


RECOVER_TEXT_CALLS_ENV = "HARMONY_EXT_RECOVER_TEXT_CALLS"
"""The server option that turns a visible message that is wholly a call written as text into
that call (contract section 10; off by default)."""


def recover_text_calls(environ: Mapping[str, str]) -> bool:
    """The recover-text-calls switch from an environment (see :func:`switch`)."""
    return switch(environ.get(RECOVER_TEXT_CALLS_ENV))


def pass_undeclared(environ: Mapping[str, str], *names: str) -> bool:
    """The pass-undeclared switch from an environment: ``HARMONY_EXT_PASS_UNDECLARED``, or
    any of the engine's own ``names`` for the same thing, turned on (see :func:`switch`)."""
    return any(switch(environ.get(name)) for name in (PASS_UNDECLARED_ENV, *names))
