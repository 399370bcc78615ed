"""The generation guard: where a generated turn is over, told from its token ids (contract
section 10).

What the client is shown is the parse's decision; how much the engine generates is the
guard's. An engine keeps one :class:`Guard` per generated choice and hands it each new token id
once, as it comes (:meth:`Guard.step` for one, :meth:`Guard.feed` for a step's run of several:
speculative decoding); the guard says at which id the generation should end:

* at ``<|return|>``, ``<|call|>`` or ``<|endoftext|>``: the turn is over. (The engines stop
  there themselves once a request carries Harmony's stop ids; the guard is the same rule where
  a request does not.)
* at a forged turn, in both forms contract section 2 names: ``<|start|>`` and then a role that is
  not the assistant's (``<|start|>user``, ``<|start|>functions.get_weather to=assistant``),
  stopped at the role's first token; or, after an ``<|end|>`` (or at the output's start, where
  the first header's role may come as text), a role written as text and then a header marker
  (``user<|channel|>``, ``functions.get_weather to=assistant<|channel|>``), stopped at the
  marker, which is where text turns into a header.

It is decided on ids alone, O(1) each, without decoding: the control tokens' ids and the role
words' tokens (:data:`harmony_plugins.harmony.ROLE_TOKENS`), and, for the token after a role
written as text, the class of its first character (:mod:`harmony_plugins.vocab.starts`: does
the word end there, or go on as a tool's name?). Markup written with ordinary tokens is text,
so an answer that spells ``<|start|>user`` never stops. A role the guard does not know by its
tokens (one of the model's invention, ``<|start|>nobody``; a spelling split into several
tokens; a recipient before the role, ``<|end|>to=x user<|channel|>``) is left to the parse,
which reports it all the same. Both ways, the guard stops only where the parse of the generation
so far reports ``forged_turn``, and, those three forms aside, wherever it does;
``tests/test_guard.py`` and the fuzzer of every test tier
(``harmony_ext_testing/fuzzed_outputs.py``) check both on generations of every shape.

The request's wishes come first: with ``ignore_eos`` it wants exactly its ``max_tokens`` and the
guard never stops it; with ``min_tokens`` the turn may be over sooner, but the generation ends
no sooner than that many tokens.

Which requests are guarded is decided here too, once for both engines (:func:`guarded`): an
adapter marks the request in its engine's per-request parameters (:meth:`Guard.marked`), and
the engine's scheduler hook builds the guard of a marked request from them (:func:`guard_for`).
The first guard of a process reads the shipped token classes (importing the package reads no
file); the engines' hooks build one when they are installed, so that a missing data file turns
the guard off there, with its message, rather than failing a request.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from . import harmony as hm
from ._header import is_other_role
from ._switches import turn_stop
from .vocab import starts

_START, _END = (next(t.id for t in hm.CONTROL_TOKENS if t.marker == m) for m in (hm.START, hm.END))
_HEADER_MARKERS = frozenset(t.id for t in hm.CONTROL_TOKENS
                            if t.marker in (hm.CHANNEL, hm.CONSTRAIN, hm.MESSAGE))
_TURN_ENDS = frozenset(t.id for t in hm.CONTROL_TOKENS
                       if t.marker in (hm.RETURN, hm.CALL, hm.END_OF_TEXT))
_FIRST_SPECIAL = hm.FIRST_SPECIAL_ID

_ROLE = frozenset(token_id for _, token_id in hm.ROLE_TOKENS)
"""After ``<|start|>``: a word that begins with one of these is never the assistant's."""
_TEXT_ROLE = frozenset(token_id for spelling, token_id in hm.ROLE_TOKENS
                       if is_other_role(spelling.strip()))
"""As text after ``<|end|>``: another role's whole word (``user``, ``python``) if it ends here."""
_TEXT_NAMESPACE = frozenset(token_id for spelling, token_id in hm.ROLE_TOKENS
                            if spelling.strip() + "." in hm.TOOL_NAMESPACES)
"""As text after ``<|end|>``: a tool's answer (``functions.x``) if a full stop follows."""

# The states: where the guard is in the generation, as far as a forged turn goes.
IDLE = 0
"""In a header or a body: only ``<|start|>``, ``<|end|>`` and the stop ids matter."""
ROLE = 1
"""After ``<|start|>``: the role's first token comes (whitespace and ignored tokens skipped)."""
TEXT = 2
"""After ``<|end|>`` or at the output's start: text that may be a header's role comes."""
WORD = 3
"""That text began with another role's word: whitespace or a header marker ends the word."""
NAMESPACE = 4
"""That text began with a tool namespace's word: a full stop makes it a tool's name."""
FORGING = 5
"""That text's first word is another role's: a header marker makes it a header, forged."""


class Guard:
    """One generated choice's guard. ``count``: the ids taken; ``ended``: the index of the id
    at which the turn was over (None while it is not), which can be earlier than where the
    generation ends when ``min_tokens`` asks for more; ``forged``: it was over at a forged
    turn (not at a stop id)."""

    __slots__ = ("count", "ended", "forged", "state", "_first_stop", "_starts")

    MARK = "harmony_ext_guard"
    """The key an adapter marks a request with, in the engine's per-request parameters, so that
    its scheduler hook guards the request's generation."""

    def __init__(self, *, ignore_eos: bool = False, min_tokens: int = 0) -> None:
        # The shipped token classes, read by the first guard of the process (RuntimeError,
        # naming the file, where they cannot be read).
        self._starts = starts.shipped()
        self.count = 0
        self.ended: int | None = None
        self.forged = False
        self.state = TEXT  # the output's first header may name its role as text
        # The first index the generation may end at: never, with ignore_eos.
        self._first_stop = sys.maxsize if ignore_eos else max(min_tokens, 1) - 1

    def step(self, token: int) -> bool:
        """Take the next generated id; True when the generation should end with it."""
        index = self.count
        self.count = index + 1
        if self.ended is None:
            if token < _FIRST_SPECIAL and self.state == IDLE:
                return False  # text in a header or a body, most tokens
            if not self._over(token):
                return False
            self.ended = index
            self.forged = token not in _TURN_ENDS
        return index >= self._first_stop

    def feed(self, ids: Sequence[int]) -> int | None:
        """Take a step's new ids; the offset in ``ids`` of the id the generation should end
        with, or None. The ids after it are not taken: the engine drops them."""
        for offset, token in enumerate(ids):
            if self.step(token):
                return offset
        return None

    def _over(self, token: int) -> bool:
        """Whether the turn is over at this id (the state moves on)."""
        if token >= _FIRST_SPECIAL:
            return self._special(token)
        if token < 0:  # no id of the vocabulary (an engine's placeholder): skipped, as the
            return False  # parse skips it (contract section 6)
        state = self.state
        if state == ROLE and token in _ROLE:
            return True
        table = self._starts
        first = table[token] if 0 <= token < len(table) else starts.OTHER
        if state == TEXT:
            self.state = _TEXT_WORDS.get(token) or _AFTER[TEXT][first]
        else:
            self.state = _AFTER[state][first]
        return False

    @staticmethod
    def marked(marks: Mapping[str, Any] | None) -> dict[str, Any]:
        """An engine's per-request parameters (vLLM's ``vllm_xargs``, SGLang's
        ``custom_params``) with the guard's mark added."""
        return {**(marks or {}), Guard.MARK: True}

    def _special(self, token: int) -> bool:
        """A special id: a stop ends the turn, a header marker ends a role written as text,
        ``<|start|>`` and ``<|end|>`` open what may be a role; any other (reserved, ignored,
        unknown) is skipped, as the parse skips it."""
        if token in _TURN_ENDS:
            return True
        if token in _HEADER_MARKERS:
            if self.state == WORD or self.state == FORGING:
                return True
            self.state = IDLE
        elif token == _START:
            self.state = ROLE
        elif token == _END:
            self.state = TEXT
        return False


def guarded(ignore_eos: Any, environ: Mapping[str, str]) -> bool:
    """Whether a request's generation is guarded, the one decision both engines' adapters mark
    by: unless the request asks for exactly its ``max_tokens`` (``ignore_eos``, which a guard
    would honour anyway: it is spared the guard's step) or the server switched the turn stop
    off (``HARMONY_EXT_TURN_STOP``, :func:`harmony_plugins.turn_stop`)."""
    return not ignore_eos and turn_stop(environ)


def guard_for(marks: Mapping[str, Any] | None, ignore_eos: Any, min_tokens: Any) -> Guard | None:
    """The guard of a request its adapter marked, from the engine's per-request parameters as
    its scheduler has them (``marks``: vLLM's ``extra_args``, SGLang's ``custom_params``) and
    the request's ``ignore_eos`` and minimum of new tokens; None for a request not marked."""
    if not marks or not marks.get(Guard.MARK):
        return None
    return Guard(ignore_eos=bool(ignore_eos), min_tokens=min_tokens or 0)


_AFTER = {
    # the state after an ordinary token, by the class of its first character:
    #           OTHER      SPACE      SPACED     DOT
    IDLE: (IDLE, IDLE, IDLE, IDLE),
    ROLE: (IDLE, ROLE, IDLE, IDLE),  # whitespace before the role; else not a role we know
    TEXT: (IDLE, TEXT, IDLE, IDLE),  # the same, for a role's word as text (_TEXT_WORDS first)
    WORD: (IDLE, FORGING, FORGING, IDLE),  # the word ends: another role's; or it goes on
    NAMESPACE: (IDLE, IDLE, IDLE, FORGING),  # functions.NAME: a tool's answer; else a word
    FORGING: (FORGING, FORGING, FORGING, FORGING),  # the rest of the role section
}
"""The transitions on ordinary tokens (h11 keeps its transitions as a table too)."""
_TEXT_WORDS = {**dict.fromkeys(_TEXT_ROLE, WORD), **dict.fromkeys(_TEXT_NAMESPACE, NAMESPACE)}
"""After ``<|end|>``: the tokens that begin a role's word written as text, and the state each
leads to."""
