"""The machine's transition table (``harmony_plugins._transitions.MOVES``) is what the machine
does, and the only place it changes state: every kind of state walked through every marker and
compared with its row; an AST check that no other function of ``_machine.py`` sets the state
or compares a marker; the table shown in ``docs/architecture.md`` rendered from it. (What the
moves do to the output, written by hand from the contract: ``tests/test_machine.py``.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harmony_plugins import harmony as hm
from harmony_plugins import rules
from harmony_plugins._frontends import TextInput
from harmony_plugins._machine import Body, Done, HeaderState, Machine, Rules
from harmony_plugins._steps import RECOVERY
from harmony_plugins._transitions import (
    BODY,
    CHANNEL_HEADER,
    DONE,
    DONE_STATE,
    END_OF_STREAM,
    FIRST_HEADER,
    FREE_HEADER,
    HEADER,
    MARKER_NAMES,
    MOVES,
    NEW_HEADER,
    ROUTE,
    SAME,
)

ROOT = Path(__file__).resolve().parents[1]
MARKERS = [hm.START, hm.END, hm.MESSAGE, hm.CHANNEL, hm.CONSTRAIN, hm.RETURN, hm.CALL,
           hm.END_OF_TEXT, hm.IGNORED, END_OF_STREAM]

# A prefix that puts a machine in a state of each kind, none of whose moves forges a turn.
PREFIXES = {
    HEADER: "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant",
    BODY: "<|channel|>final<|message|>Hi",
    DONE: "<|channel|>final<|message|>Hi<|return|>",
}


def machine_in(prefix: str) -> Machine:
    machine = Machine(Rules(tools=frozenset({"get_weather"})), new_id=lambda: "call_x")
    front = TextInput()
    for piece in front.feed(prefix):
        if isinstance(piece, tuple):
            machine.text(*piece)
        else:
            machine.marker(piece)
    return machine


def apply(machine: Machine, marker: int) -> list:
    return machine.close("stop") if marker == END_OF_STREAM else machine.marker(marker)


def test_the_prefixes_reach_their_kinds():
    for kind, prefix in PREFIXES.items():
        assert machine_in(prefix).at.kind == kind


def test_every_marker_of_every_kind_has_a_row_or_none():
    """Header and body: a row for every marker and the end of the output; done: only the
    ignored token counts (contract section 2: after the end of the turn, markers are text
    that is dropped)."""
    assert set(MOVES[HEADER]) == set(MARKERS) == set(MOVES[BODY])
    assert set(MOVES[DONE]) == {hm.IGNORED}


@pytest.mark.parametrize("kind", [HEADER, BODY, DONE])
@pytest.mark.parametrize("marker", MARKERS, ids=[MARKER_NAMES[m] for m in MARKERS])
def test_the_machine_applies_its_row(kind, marker):
    machine = machine_in(PREFIXES[kind])
    before, stop_before = machine.at, machine.stop_reason
    joins = machine.joins(marker)
    parts = apply(machine, marker)
    move = MOVES[kind].get(marker)
    if move is None:  # no row: nothing changes (the end of the output ends the turn's report)
        assert machine.at is before and machine.stop_reason == stop_before
        assert not joins
        assert [p for p in parts if isinstance(p, tuple)] == []
        return
    if move.rule is not None:
        assert parts[0][:2] == (RECOVERY, move.rule)
    assert machine.stop_reason == (move.stop or stop_before)
    assert machine.after_call is (move.stop == "call")
    at = machine.at
    if move.then == SAME:
        assert at is before
    elif move.then == ROUTE:
        assert isinstance(at, Body)
    elif move.then == DONE_STATE:
        assert isinstance(at, Done) and at is not before
    else:
        assert isinstance(at, HeaderState) and at is not before
        assert (at.role_given, at.free, at.section == hm.CHANNEL) == {
            NEW_HEADER: (True, False, False), FREE_HEADER: (False, True, False),
            CHANNEL_HEADER: (False, False, True), FIRST_HEADER: (False, False, False),
        }[move.then]
    # The prefixes' states: a content body (its text is shown), a header that began with
    # <|start|> (not free text after <|end|>).
    assert joins == {True: True, False: False, "if_content": True,
                     "if_free_and_empty": False}[move.joins]


def test_a_forged_turn_ends_the_turn_whatever_the_row_says():
    """The closers' one decision that overrides a row: another role's header (section 2)."""
    machine = machine_in("<|channel|>final<|message|>A<|end|>user")
    assert MOVES[HEADER][hm.CHANNEL].then == SAME
    parts = machine.marker(hm.CHANNEL)
    assert isinstance(machine.at, Done) and machine.stop_reason == "forged_turn"
    assert [p[1] for p in parts if isinstance(p, tuple)] == [rules.FORGED_TURN]


# -- nothing outside the table -----------------------------------------------------------------

MACHINE = ROOT / "harmony_plugins" / "_machine.py"
MARKER_CONSTANTS = {"START", "END", "MESSAGE", "CHANNEL", "CONSTRAIN", "RETURN", "CALL",
                    "END_OF_TEXT", "IGNORED"}


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]


def _sets_state(node: ast.AST) -> bool:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    return any(isinstance(t, ast.Attribute) and t.attr == "at" and isinstance(t.value, ast.Name)
               and t.value.id == "self" for t in targets)


def _is_marker(node: ast.expr) -> bool:
    return ((isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
             and node.value.id == "hm" and node.attr in MARKER_CONSTANTS)
            or (isinstance(node, ast.Name) and node.id == "END_OF_STREAM"))


def transitions_outside_the_table(source: str) -> list[str]:
    """Each function of the machine that sets the state (other than ``Machine._apply``) or
    compares a marker, by name."""
    found = []
    for function in _functions(ast.parse(source)):
        for node in ast.walk(function):
            if _sets_state(node) and function.name != "_apply":
                found.append(f"{function.name} sets the state")
            if isinstance(node, ast.Compare) and any(
                    _is_marker(side) for side in (node.left, *node.comparators)):
                found.append(f"{function.name} compares a marker")
    return found


def test_only_apply_sets_the_state_and_no_function_compares_a_marker():
    source = MACHINE.read_text(encoding="utf-8")
    assert transitions_outside_the_table(source) == []
    assert source.count("self.at = ") == 1


def test_the_check_finds_a_transition_written_outside_the_table():
    """The check can fail: a closer that goes to a new header itself, and one that compares the
    marker it was given, are both found."""
    source = MACHINE.read_text(encoding="utf-8").replace(
        "        header.close_section()\n        header.section = marker\n",
        "        header.close_section()\n        if marker == hm.CONSTRAIN:\n"
        "            self.at = HeaderState(True)\n        header.section = marker\n", 1)
    assert sorted(transitions_outside_the_table(source)) == ["_section compares a marker",
                                                             "_section sets the state"]


# -- the table as the architecture page shows it -----------------------------------------------

KIND_NAMES = {HEADER: "in a header", BODY: "in a body", DONE: "when done"}
THEN_NAMES = {NEW_HEADER: "new header", CHANNEL_HEADER: "new header (channel)",
              FREE_HEADER: "free header", ROUTE: "the body it routes", DONE_STATE: "done",
              SAME: "", FIRST_HEADER: "first header"}


def cell(kind: str, marker: int) -> str:
    move = MOVES[kind].get(marker)
    if move is None:
        return "nothing"
    said = [f"`{move.rule}`"] if move.rule else []
    if move.close:
        said.append(move.close.replace("_", " "))
    if THEN_NAMES[move.then]:
        said.append("→ " + THEN_NAMES[move.then])
    if move.stop:
        said.append(f"(stop: {move.stop})")
    return " ".join(said) or "stays"


def rendered() -> str:
    """The table, as Markdown, from MOVES."""
    lines = ["| marker | " + " | ".join(KIND_NAMES.values()) + " |",
             "|---|" + "---|" * len(KIND_NAMES)]
    for marker in MARKERS:
        lines.append(f"| {MARKER_NAMES[marker]} | "
                     + " | ".join(cell(kind, marker) for kind in KIND_NAMES) + " |")
    return "\n".join(lines)


def test_the_architecture_page_shows_the_table():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- transitions -->\n(.*?)\n<!-- /transitions -->", page, re.S)
    assert shown is not None, "docs/architecture.md: the transitions table's markers are gone"
    assert shown.group(1) == rendered(), "regenerate it: python -m tests.test_transitions"


if __name__ == "__main__":
    print(rendered())
