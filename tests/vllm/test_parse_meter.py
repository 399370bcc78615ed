"""The benchmark's parse meter on vLLM's real parsers (``vllm_ext/parse_meter.py``).

The meter patches vLLM's ``HarmonyParser`` class for the whole process, so each case runs
in a fresh interpreter of this venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Built-in parser and ours, each fed one request's ids one at a time (the meter times every
# call here); prints what each streamed and the meter's totals.
SCRIPT = r"""
import json, sys
from transformers import AutoTokenizer
from harmony_plugins.o200k import write_hf_tokenizer
import vllm_ext.scripted  # installs the meter: HARMONY_EXT_PARSE_METER is set
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser.parser_manager import ParserManager
from vllm_ext import parse_meter, plugin

tok = AutoTokenizer.from_pretrained(str(write_hf_tokenizer(sys.argv[1])))
plugin.register()
text = ("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
        "<|message|>Hi!<|return|>")
ids = tok.encode(text)
req = ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}])
out = {"ids": len(ids)}
for name, reasoning in (("openai", "openai_gptoss"), ("harmony-ext", "harmony-ext")):
    cls = ParserManager.get_parser(tool_parser_name=name, reasoning_parser_name=reasoning,
                                   enable_auto_tools=True, model_name="tiny", is_harmony=True,
                                   tokenizer=tok)
    parser = cls(tok, None)
    got = {"reasoning": "", "content": ""}
    for n, i in enumerate(ids):
        delta = parser.parse_delta("", [i], req, finished=n == len(ids) - 1)
        if delta is not None:
            got["reasoning"] += delta.reasoning or ""
            got["content"] += delta.content or ""
    out[name] = got
    out[name + " meter"] = parse_meter.read(sys.argv[2])
print(json.dumps(out))
"""


def run(tmp_path: Path, meter: Path | str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HARMONY_EXT_PARSE_METER=str(meter), HARMONY_EXT_PARSE_METER_EVERY="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "tok"), str(meter)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def test_the_meter_counts_every_parse_delta_of_either_parser_and_changes_nothing(tmp_path):
    meter = tmp_path / "meter.bin"
    meter.write_bytes(bytes(24))
    proc = run(tmp_path, meter)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    n = out["ids"]
    # What each parser streamed, by the contract: the meter only watches.
    assert out["openai"] == {"reasoning": "Think.", "content": "Hi!"}
    assert out["harmony-ext"] == {"reasoning": "Think.", "content": "Hi!"}
    ns_builtin, timed_builtin, calls_builtin = out["openai meter"]
    ns_all, timed_all, calls_all = out["harmony-ext meter"]
    assert calls_builtin == n  # one call per delta, vLLM's own parser
    assert calls_all == 2 * n  # and ours, a subclass that overrides parse_delta
    # With every=1 each call is timed: calls 1..n, then 1..2n (the totals are the process's).
    assert (timed_builtin, timed_all) == (n, 2 * n)
    assert 0 < ns_builtin < ns_all


def test_a_meter_file_that_cannot_be_opened_leaves_the_server_unmetered(tmp_path):
    missing = tmp_path / "no-such-dir" / "meter.bin"
    proc = subprocess.run(
        [sys.executable, "-c", "from vllm_ext import parse_meter, scripted; "
         "from vllm.parser.harmony import HarmonyParser; "
         "print(HarmonyParser.__init__.__qualname__)"],
        capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, HARMONY_EXT_PARSE_METER=str(missing),
                 PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "HarmonyParser.__init__"  # not patched
    assert "parse meter: not installed" in proc.stderr
