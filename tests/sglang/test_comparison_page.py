"""docs/sglang-comparison.md is what its generator writes, never edited by hand.

The page's generator (``pages/sglang_comparison.py``, ``bash pages/run.sh sglang-comparison``)
records every case through SGLang's real chat serving, harmony-ext's parsers and SGLang's own,
and writes the page; nothing on it depends on the run (no date, no timing). Here the same
recorder runs over the tests' own serving (the model scripted) and its page must equal the
committed file, byte for byte, but for the line naming the SGLang release it was recorded on
when this tier runs another release (then every other line must still be equal: the page
holds for both releases the README names).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sglang

import harmony_plugins
from harmony_ext_testing.sglang_cases import pieces_for
from pages import sglang_comparison

PAGE = Path(__file__).resolve().parents[2] / "docs" / "sglang-comparison.md"


def versions_line(sglang_version: str) -> str:
    return f"SGLang {sglang_version}, harmony-ext {harmony_plugins.__version__}."


def test_the_page_is_what_its_generator_records(sglang_chat: Any, hf_dir: Path) -> None:
    regenerated = sglang_comparison.render_doc(
        sglang_comparison.record(sglang_chat, pieces_for(hf_dir))).splitlines()
    committed = PAGE.read_text(encoding="utf-8").splitlines()
    mine = versions_line(sglang.__version__)
    assert mine in regenerated
    recorded_on = [line for line in committed if line.startswith("SGLang ")]
    assert len(recorded_on) == 1 and recorded_on[0] in {versions_line("0.5.23"),
                                                         versions_line("0.5.22")}
    # this tier's release named where the page names the one it was recorded on
    assert [recorded_on[0] if line == mine else line for line in regenerated] == committed
