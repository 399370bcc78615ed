"""The fuzzer in the core tier (issue 56): seeded outputs nobody wrote a test for, checked against
the core's invariants (harmony_ext_testing/fuzzed_outputs.py lists them), and what shows that
each check can fail: a parse that drops one character, a parse whose work grows with the square
of the output, events that lose a piece.

``HARMONY_EXT_FUZZ=N`` runs N outputs instead of CI's (CONTRIBUTING.md). The count tried and
failed is recorded for CI's summary (scripts/fuzz_counts.py)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from harmony_ext_testing import fuzzed_outputs as fz
from harmony_plugins import ChatResult, ContentText, Recovery, Vocab

CI_OUTPUTS = 300
CI_ADMITTED = 50


def test_fuzzed_outputs_hold_every_invariant(record_testsuite_property: Any) -> None:
    """CI's outputs, and the grammar-admitted ones the engine tiers send with a format."""
    outputs = fz.outputs(fz.how_many(CI_OUTPUTS)) + fz.admitted_outputs(
        fz.how_many(CI_ADMITTED, 4))
    failures = [f for out in outputs for f in fz.core_failures(out)]
    fz.record(record_testsuite_property, len(outputs), failures)
    assert not failures, fz.reports(failures, "core")


def test_an_output_is_made_again_from_its_seed() -> None:
    assert fz.output(fz.SEED + 7) == fz.output(fz.SEED + 7)
    assert fz.output(fz.SEED + 7) != fz.output(fz.SEED + 8)
    assert fz.admitted(fz.SEED) == fz.admitted(fz.SEED)


def test_ci_s_outputs_take_every_shape() -> None:
    """The run CI makes holds each kind of output and of mutation, every forged form and call
    header form the generator knows, and outputs cut short: the invariants see them all."""
    hows = [out.how for out in fz.outputs(CI_OUTPUTS, fz.SEED)]
    made = " ".join(hows)
    assert sum(h == "random sequence" for h in hows) > CI_OUTPUTS // 10
    for mutation in fz.MUTATIONS:
        assert f"{mutation}@" in made, mutation
    for form in ("after_channel", "role", "bare", "content_type", "glued", "no_channel",
                 "builtin", "empty"):
        assert f"call {form} " in made, form
    for kind in ("analysis", "preamble", "final_json", "free_text", "final_without_message",
                 "unknown_channel", "role_channel", "no_channel", "prose header"):
        assert kind in made, kind
    forged = Counter(f for out in fz.outputs(CI_OUTPUTS, fz.SEED) for f in fz.FORGERIES
                     if fz.ids_of(f) and _holds(out.ids, fz.ids_of(f)))
    assert set(forged) == set(fz.FORGERIES)


def _holds(ids: tuple[int, ...], part: list[int]) -> bool:
    return any(list(ids[i:i + len(part)]) == part for i in range(len(ids) - len(part) + 1))


def test_no_ordinary_token_spells_markup() -> None:
    """No ordinary token of an output holds < or |: each spelling in its text is one of its
    special tokens (text mode reads the same output), and any spelling in a field is a leak."""
    specials = {fz.special_id(s) for s in fz.MARKERS + fz.IGNORED}
    for out in fz.outputs(CI_OUTPUTS, fz.SEED):
        spelled = re.findall(r"<\|[a-z_0-9]+\|>", out.text)
        assert len(spelled) == sum(t in specials for t in out.ids), out.seed
        assert "<|" not in re.sub(r"<\|[a-z_0-9]+\|>", "", out.text), out.seed


# -- each check can fail ------------------------------------------------------------------------


def dropping(text: str) -> Vocab:
    """o200k_harmony with the token ``text`` read as nothing: a parse that drops a character."""
    table = list(Vocab.o200k_harmony().table)
    (token,) = fz.encoding().encode_ordinary(text)
    table[token] = ""
    return Vocab(table, "o200k_harmony less one token")


def test_a_parse_that_drops_one_character_fails_the_fuzzer() -> None:
    outputs = fz.outputs(60, fz.SEED)
    assert not [f for out in outputs for f in fz.core_failures(out)]  # the control
    failures = [f for out in outputs for f in fz.core_failures(out, dropping("."))]
    broken = {f.invariant for f in failures}
    assert {"nothing is lost uncounted", "ids and text agree"} <= broken
    report = fz.reports(failures, "core")
    first = failures[0].output
    assert f"fuzzed output {first.seed} (core)" in report
    assert f"ids: {list(first.ids)}" in report
    assert f"text: {first.text!r}" in report
    assert f'Case("fuzz_{first.seed}", ' in report
    assert f"fuzzed_outputs.output({first.seed})" in report


class QuadraticChat(ChatResult):
    """A chat fold that reads all its content again at every step: work grows with the square
    of the output."""

    def add(self, step: Any) -> Any:
        for piece in self.content:
            for _ in piece:
                pass
        return super().add(step)


def test_a_quadratic_parse_fails_the_linear_check(monkeypatch: pytest.MonkeyPatch) -> None:
    out = fz.Output(0, tuple(fz.ids_of("<|channel|>final<|message|>Sunny in Paris.")))
    assert fz.nonlinear(out) == ""
    monkeypatch.setattr(fz, "ChatResult", QuadraticChat)
    assert "a token at a time" in fz.nonlinear(out)


RUNS = [(None, ""), ("<|channel|>", "final foo"), ("<|message|>", "Hi there"),
        ("<|end|>", ""), ("<|start|>", "assistant"), ("<|channel|>", "commentary"),
        ("<|message|>", "More")]


def test_every_piece_is_accounted_for() -> None:
    events = [Recovery("header_junk", "foo"), ContentText("Hi "), ContentText("there"),
              ContentText("More")]
    assert fz.unaccounted(RUNS, events) == ""


@pytest.mark.parametrize("events, why", [
    ([Recovery("header_junk", "foo"), ContentText("Hi "), ContentText("More")],
     "'Hi' of 'Hi there'"),  # a piece lost
    ([Recovery("header_junk", "foo"), ContentText("Hi there"), ContentText("Hi there"),
      ContentText("More")], "goes on 'Hi thereMore'"),  # a piece shown twice
    ([ContentText("Hi there"), ContentText("More")], "'foo' of 'final foo'"),  # junk uncounted
    ([Recovery("header_junk", "foo"), ContentText("Hi there"), ContentText("More"),
      Recovery("header_junk", "foo")], "junk words {'foo': 1} match nothing"),  # counted twice
])
def test_a_piece_lost_or_shown_twice_is_found(events: list[Any], why: str) -> None:
    assert why in fz.unaccounted(RUNS, events)


GOOD = {"texts": [("reasoning", "Hm."), ("content", "Hi")],
        "calls": [("get_weather", '{"city":"Paris"}')], "finish": "tool_calls"}


@pytest.mark.parametrize("whole, streamed, problem", [
    ({"error": "HTTP 400: bad"}, GOOD, "chat non-streamed: HTTP 400: bad"),
    (GOOD, {**GOOD, "problems": ["no [DONE]"]}, "chat streamed: broken stream: no [DONE]"),
    (GOOD, {**GOOD, "texts": [("reasoning", "Hm."), ("content", "H")]},
     "differs from non-streamed"),
    (GOOD, {**GOOD, "finish": "stop"}, "differs from non-streamed"),
    ({**GOOD, "calls": [("delete_files", "{}")]}, GOOD,
     "a call to an undeclared function: ['delete_files']"),
    (GOOD, {**GOOD, "texts": [("content", "Hi<|end|>")]}, "control-token spellings ['<|end|>']"),
    (GOOD, {**GOOD, "calls": [("get_weather", '{"city":"<|call|>"}')]},
     "control-token spellings ['<|call|>']"),
])
def test_the_engine_checks_can_fail(whole: dict[str, Any], streamed: dict[str, Any],
                                    problem: str) -> None:
    assert fz.engine_problems("chat", GOOD, {**GOOD, "problems": []}) == []
    assert problem in " ".join(fz.engine_problems("chat", whole, streamed))
