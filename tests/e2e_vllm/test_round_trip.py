"""Multi-turn on a real vLLM server: what the model wrote is what it reads back (contract 8).

Turn 1 is scripted and parsed by harmony-ext; the ``openai`` client sends the parsed assistant
message back with tool results, as an agent loop does; the prompt vLLM renders for turn 2
(``return_token_ids``) must end with the turn in the order and form the model wrote it, then
the tool results, token by token. The round trips, and the expected renderings written out by
hand from contract section 8 (calls in the canonical gpt-oss header, ``assistant
to=functions.NAME <|channel|>commentary json``, as gpt-oss's own chat template writes them;
tool results as ``functions.NAME to=assistant<|channel|>commentary``), are
``harmony_ext_testing/vllm_round_trips.py``'s.

What vLLM renders for the same history with its built-in parsers (harmony-ext's prompt hook
inactive), the "before", is recorded beside the "after" by the page generator
``bash pages/run.sh multi-turn-vllm`` (pages/multi_turn_vllm.py, which writes
docs/multi-turn-vllm.md from the same round trips); one case of it is pinned below.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.renderings import (
    PARIS,
    START,
    analysis,
    call,
    final,
    preamble,
    result,
    token_ids,
    user,
)
from harmony_ext_testing.vllm_round_trips import (
    HOT,
    ROUND_TRIPS,
    USER,
    RoundTrip,
    answered,
    client_for,
    history,
    prompt_ids,
    show,
)


@pytest.fixture(scope="module")
def encoding() -> Any:
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding()


def tail(ids: list[int], expected: list[int]) -> list[int]:
    return ids[-len(expected):]


@pytest.mark.parametrize("trip", ROUND_TRIPS, ids=[t.id for t in ROUND_TRIPS])
def test_round_trip(vllm_server: str, encoding: Any, trip: RoundTrip) -> None:
    messages = history(client_for(vllm_server), trip)
    want = token_ids(encoding, [*user(USER), *trip.expected, START, "assistant"])
    got = prompt_ids(client_for(vllm_server), messages, trip.tools)
    assert show(encoding, tail(got, want)) == show(encoding, want)
    assert tail(got, want) == want  # token by token: tool text stays text


def test_vllm_alone_puts_the_preamble_first(builtin_server: str, vllm_server: str,
                                            encoding: Any) -> None:
    """Without harmony-ext's prompt hook vLLM renders preamble, analysis, call (the before)."""
    trip = ROUND_TRIPS[0]
    messages = history(client_for(vllm_server), trip)
    swapped = (*preamble("Checking now."), *analysis("Need weather."),
               *call("get_weather", PARIS), *result("get_weather", HOT))
    want = token_ids(encoding, [*user(USER), *swapped, START, "assistant"])
    assert tail(prompt_ids(client_for(builtin_server), messages, trip.tools), want) == want


def test_analysis_is_dropped_after_a_final_answer(vllm_server: str, encoding: Any) -> None:
    """Chain of thought is carried through the tool turn and dropped once answered."""
    client = client_for(vllm_server)
    message, messages = answered(client)
    assert message.content == "Sunny in Paris."
    want = token_ids(encoding, [
        *user(USER), *preamble("Checking now."), *call("get_weather", PARIS),
        *result("get_weather", HOT), *final("Sunny in Paris."), *user("Thanks!"),
        START, "assistant"])
    got = prompt_ids(client, messages, ROUND_TRIPS[0].tools)
    assert show(encoding, tail(got, want)) == show(encoding, want)
    assert tail(got, want) == want
