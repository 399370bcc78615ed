"""The leak scanner (harmony_plugins/_leaks.py, contract section 6) on its own: what it flags,
that no cut of the text changes it, and that it looks at each piece plus a bounded carry.

Through a whole parse (ids and text, chat deltas, never rewritten): tests/test_contract.py.
"""

from __future__ import annotations

import pytest

from harmony_plugins import _leaks

# (visible text, the excerpts flagged), written by hand from contract section 6
FLAGGED = [
    ("Type <|end|> to stop.", ["<|end|>"]),
    ("<|start|>x<|message|>", ["<|start|>", "<|message|>"]),
    ("a reserved <|reserved_200013|> one", ["<|reserved_200013|>"]),
    ("Calling commentary to=functions.get_weather json now",
     ["commentary to=functions.get_weather"]),
    ("I will send to=functions.get_weather json", ["to=functions.get_weather json"]),
    ("ends in <|return|>", ["<|return|>"]),
    ("ends in commentary to=functions.f", ["commentary to=functions.f"]),
    ("Write to=functions.get_weather in the header.", []),  # a lone recipient: documentation
    ("finalcommentary to=functions.f", []),  # the word must stand alone
    ("to=functions.f jsonx", []),
    ("<|end|", []),  # not closed
    ("<|unknown|>", []),  # no such token
    ("a = b > c, x => y", []),
    ("", []),
]


def scanned(pieces: list[str]) -> list[str]:
    scanner = _leaks.LeakScanner()
    found: list[str] = []
    for piece in pieces:
        found += scanner.feed(piece) or []
    return found + (scanner.close() or [])


@pytest.mark.parametrize(("text", "leaks"), FLAGGED)
def test_flagged_whatever_the_cut(text: str, leaks: list[str]) -> None:
    assert scanned([text]) == leaks
    assert scanned(list(text)) == leaks
    for i in range(len(text) + 1):
        assert scanned([text[:i], text[i:]]) == leaks, i


def test_a_match_at_the_end_waits_for_what_follows() -> None:
    scanner = _leaks.LeakScanner()
    assert scanner.feed("see commentary to=functions.ge") is None
    assert scanner.feed("t_weather") is None  # the name may still grow
    assert scanner.feed(" now") == ["commentary to=functions.get_weather"]
    assert scanner.close() is None


def test_a_match_at_the_end_settles_when_the_message_ends() -> None:
    scanner = _leaks.LeakScanner()
    assert scanner.feed("see commentary to=functions.f") is None
    assert scanner.close() == ["commentary to=functions.f"]


def test_a_long_piece_after_to_is_scanned_as_when_cut_finer() -> None:
    """The piece after a ``to=`` may be longer than the carry: a match it completes near its
    start is found as when the text is fed whole or per character (contract section 6: the
    result does not depend on the cuts; a piece ending beyond the carry went unscanned)."""
    text = "to=functions.x analysis " + "more prose " * 20
    cuts = ["to=functions.x", text[len("to=functions.x"):]]
    assert scanned(cuts) == scanned([text]) == scanned(list(text)) == ["to=functions.x analysis"]


def test_far_apart_parts_are_no_match() -> None:
    far = "commentary" + " " * (_leaks.CARRY + 5) + "to=functions.f"
    assert scanned([far]) == scanned(list(far)) == []


def test_prose_without_its_characters_is_never_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    real = _leaks.LeakScanner._scan
    monkeypatch.setattr(_leaks.LeakScanner, "_scan",
                        lambda self, final: calls.append(final) or real(self, final))
    scanner = _leaks.LeakScanner()
    for _ in range(5_000):
        assert scanner.feed("plain words, no markup ") is None
    assert scanner.close() is None
    assert calls == []
    assert scanner.end - scanner.start <= 4 * _leaks.CARRY + len("plain words, no markup ")


def test_leak_scan_is_linear_in_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each scan looks at the new piece plus a bounded carry, never at the whole text."""
    scanned_lengths: list[int] = []
    real = _leaks.LeakScanner._scan

    def counting(self: _leaks.LeakScanner, final: bool) -> list[str] | None:
        scanned_lengths.append(self.end - self.start)
        return real(self, final)

    monkeypatch.setattr(_leaks.LeakScanner, "_scan", counting)
    scanner = _leaks.LeakScanner()
    found = []
    for _ in range(20_000):
        found += scanner.feed("a=b |> ") or []
    assert found == []
    assert len(scanned_lengths) == 20_000
    assert max(scanned_lengths) <= _leaks.CARRY + len("a=b |> ")


def test_the_window_stays_bounded_however_long_the_text() -> None:
    """Prose without ``>`` or ``=`` only joins the window, which is cut back once it holds more
    than WINDOW characters: the scanner's memory does not grow with the message."""
    scanner = _leaks.LeakScanner()
    for _ in range(10_000):
        assert scanner.feed("word ") is None
        assert sum(map(len, scanner.recent)) <= _leaks.WINDOW + len("word ")
    assert scanner.end == 50_000 and scanner.end - scanner.start <= _leaks.WINDOW + 5
