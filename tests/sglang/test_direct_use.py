"""SGLang's parser classes used directly, as a script or an RL framework uses them: no server,
so no server arguments published in the process, and the reasoning parser built with or
without the request. Every contract case must give what it gives inside the serving chain
(the hand-written answers of ``harmony_ext_testing.sglang_cases``), streamed and not.

It runs in a fresh process: the other SGLang tests publish server arguments, which a
process cannot take back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from sglang.srt.plugins import load_plugins

load_plugins()
from sglang.srt import runtime_context
from harmony_ext_testing.sglang_cases import CASES, chain_nonstream, chain_stream, char_chunkings

try:
    runtime_context.get_serving()
    published = True
except Exception:
    published = False
wrong = []
for case in CASES:
    want = case.expected()
    del want["finish_reason"]
    for bind in (True, False):
        got = chain_nonstream(case, "harmony-ext", bind_request=bind)
        if got != want:
            wrong.append([case.id, bind, "whole", got, want])
        for deltas in list(char_chunkings(case.text, seeds=2)):
            got = chain_stream(case, "harmony-ext", deltas, bind_request=bind)
            if got != {**want, "topup": ""}:
                wrong.append([case.id, bind, deltas, got, want])
                break
print(json.dumps({"published": published, "cases": len(CASES), "wrong": wrong}))
"""


def test_direct_use_gives_the_serving_chains_results() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT)], capture_output=True,
                          text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["published"] is False  # really no server arguments in that process
    assert report["cases"] >= 30
    assert report["wrong"] == []
