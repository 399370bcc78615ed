"""docs/vllm-comparison.md is what its generator writes, never edited by hand.

The page's generator (``pages/vllm_comparison.py``, ``bash pages/run.sh vllm-comparison``)
records every case and the agent's runs through two servers, harmony-ext's and vLLM's built-in
parsers, and writes the page; nothing on it depends on the run (no date, no timing). Here its
recording over the tests' two servers (the session's ``comparison`` fixture) is made into the
page, which must equal the committed file line for line on the vLLM release the page names. On
another release, the lines that release gives otherwise are the page's header (the release's
name), the note on vLLM 0.32's finish_reason and the rows test_vllm_builtin.py pins otherwise
for it (:data:`BY_RELEASE`); every other line must still be equal (blank lines aside).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pages import vllm_comparison
from tests.e2e_vllm.test_vllm_builtin import BY_RELEASE, release

PAGE = Path(__file__).resolve().parents[2] / "docs" / "vllm-comparison.md"
HEADER = re.compile(r"^Generated against vLLM (\S+) ")
NOTE = "Not the parsers' doing: "


def row_label(key: str) -> str:
    """How the page's row of ``key`` (``chat:ID`` / ``responses:ID``) begins."""
    api, case_id = key.split(":", 1)
    return f"| {'Responses' if api == 'responses' else 'chat'}: `{case_id}` "


def test_the_page_is_what_its_generator_records(comparison: dict[str, Any],
                                                vllm_version: str) -> None:
    page = vllm_comparison.comparison_doc(vllm_version, comparison).splitlines()
    committed = PAGE.read_text(encoding="utf-8").splitlines()
    (recorded_on,) = [m.group(1) for line in committed if (m := HEADER.match(line))]
    if vllm_version == recorded_on:
        assert page == committed
        return
    labels = [row_label(key) for key in BY_RELEASE.get(release(vllm_version), {})]

    def kept(line: str) -> bool:  # (and no blank line: the note comes with one)
        return not (HEADER.match(line) or line.startswith(NOTE) or not line
                    or line.startswith(tuple(labels)))

    assert [line for line in page if kept(line)] == [line for line in committed if kept(line)]
