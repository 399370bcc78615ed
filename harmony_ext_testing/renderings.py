"""Expected Harmony renderings of a conversation, written by hand (contract section 8).

Shared by the multi-turn tests of both engines (tests/e2e_vllm/test_round_trip.py,
tests/sglang/test_round_trip.py, the Responses round trips) and by the round trips they share
with the page generators (harmony_ext_testing/vllm_round_trips.py, sglang_round_trips.py): a
rendering is a list of pieces, control tokens as :class:`M`, anything else ordinary text,
turned into o200k_harmony ids so a control-token spelling in text stays text.
"""

from __future__ import annotations

from typing import Any


class M(str):
    """A control token in an expected rendering (anything else is ordinary text)."""


START, END, MSG, CH, CALL = (M("<|start|>"), M("<|end|>"), M("<|message|>"), M("<|channel|>"),
                             M("<|call|>"))
PARIS, OSLO = '{"city":"Paris"}', '{"city":"Oslo"}'
CALL_W = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
CALL_SH = "<|channel|>commentary to=functions.shell <|constrain|>json<|message|>"


def analysis(text: str) -> list[str]:
    return [START, "assistant", CH, "analysis", MSG, text, END]


def preamble(text: str) -> list[str]:
    return [START, "assistant", CH, "commentary", MSG, text, END]


def final(text: str) -> list[str]:
    return [START, "assistant", CH, "final", MSG, text, END]


def call(name: str, arguments: str) -> list[str]:
    """The canonical gpt-oss call header, as gpt-oss's own chat template writes it."""
    return [START, f"assistant to=functions.{name}", CH, "commentary json", MSG, arguments, CALL]


def result(name: str, text: str) -> list[str]:
    """The recipient after the channel, as openai_harmony renders it (either place is valid)."""
    return [START, f"functions.{name}", CH, "commentary to=assistant", MSG, text, END]


def user(text: str) -> list[str]:
    return [START, "user", MSG, text, END]


def token_ids(encoding: Any, pieces: list[str]) -> list[int]:
    """Control tokens as themselves, each run of text as ordinary tokens (never markers)."""
    ids: list[int] = []
    text: list[str] = []
    for piece in [*pieces, M("")]:
        if isinstance(piece, M):
            if text:
                ids += encoding.encode_ordinary("".join(text))
                text = []
            if piece:
                ids.append(encoding.encode_single_token(str(piece)))
        else:
            text.append(piece)
    return ids
