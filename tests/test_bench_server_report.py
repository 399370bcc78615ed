"""How ``scripts/bench_server.py`` judges its figures and sorts its profile's samples.

Each stack is written by hand in the sampler's format (root first, ``function (file:line)``)
after stacks seen in real profiles of vLLM 0.32's API server.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import bench_server  # noqa: E402

LOOP = ["run (uvloop/__init__.py:92)", "Runner.run (asyncio/runners.py:118)"]
STREAM = LOOP + [
    "StreamingResponse.stream_response (starlette/responses.py:255)",
    "OpenAIServingChat.chat_completion_stream_generator "
    "(vllm/entrypoints/openai/chat_completion/serving.py:667)",
]
METER = "install.<locals>.__init__.<locals>.parse_delta (vllm_ext/parse_meter.py:75)"
OURS = "HarmonyExtParser.parse_delta (vllm_ext/harmony_parser.py:122)"
BUILTIN = "HarmonyParser.parse_delta (vllm/parser/harmony.py:263)"


@pytest.mark.parametrize(("stack", "category"), [
    # Our parse, and vLLM's, under the meter that wraps every parse_delta: the parser's.
    (STREAM + [METER, OURS, "Turn.feed_ids (harmony_plugins/turn.py:184)"], "parser"),
    (STREAM + [METER, BUILTIN, "StreamableParser.process (openai_harmony/__init__.py:637)",
               "loads (json/__init__.py:299)"], "parser"),
    # The meter's own bookkeeping, and what it calls, is not.
    (STREAM + ["install.<locals>.__init__.<locals>.parse_delta (vllm_ext/parse_meter.py:77)"],
     "benchmark instruments"),
    (STREAM + ["install.<locals>.__init__.<locals>.parse_delta (vllm_ext/parse_meter.py:76)",
               "Random.randint (random.py:362)"], "benchmark instruments"),
    (LOOP + ["ScriptedOutputProcessor.validate_params (vllm_ext/scripted.py:165)",
             "read_script (vllm_ext/scripted.py:127)", "loads (json/__init__.py:346)"],
     "benchmark instruments"),
    # vLLM rendering the prompt with openai_harmony is not parsing.
    (LOOP + ["render_for_completion (vllm/entrypoints/openai/parser/harmony_utils.py:458)",
             "HarmonyEncoding.encode (openai_harmony/__init__.py:585)"], "prompt rendering"),
    (STREAM + ["BaseModel.model_dump_json (pydantic/main.py:587)"], "SSE serialisation"),
    (STREAM + ["BaseModel.__init__ (pydantic/main.py:280)"], "pydantic (other)"),
    (LOOP + ["_AsyncSocket._handle_recv (zmq/_future.py:627)"], "engine IPC (zmq, msgspec)"),
    # A chunk's write happens after the generator yielded it: under starlette, not vLLM.
    (LOOP + ["StreamingResponse.stream_response (starlette/responses.py:257)",
             "RequestResponseCycle.send (uvicorn/protocols/http/httptools_impl.py:544)"],
     "HTTP (uvicorn, starlette)"),
    (STREAM + ["as_list (vllm/utils/collection_utils.py:48)"], "chat serving (other)"),
    (["<module> (x.py:1)"], "other"),
])
def test_a_sample_goes_to_the_first_category_its_stack_belongs_to(stack, category) -> None:
    assert bench_server.categorise(stack) == category


def spread(median: float, low: float, high: float, n: int = 3) -> dict[str, float]:
    return {"median": median, "min": low, "max": high, "n": n}


@pytest.mark.parametrize(("ours", "other", "lower_is_better", "expected"), [
    (spread(62, 54, 63), spread(103, 74, 117), True, "ours better (1.66x)"),
    (spread(198, 181, 200), spread(217, 198, 291), True, "within noise"),  # ranges touch
    (spread(277, 250, 286), spread(290, 289, 292), False, "ours worse (0.96x)"),
    (spread(1400, 1300, 1500), spread(1000, 900, 1100), False, "ours better (1.40x)"),
    # One repeat has no spread: a difference cannot be told from noise.
    (spread(166, 166, 166, n=1), spread(254, 254, 254, n=1), True,
     "one repeat: no spread to judge by"),
])
def test_a_verdict_is_a_ratio_only_when_the_spreads_do_not_meet(
        ours, other, lower_is_better, expected) -> None:
    assert bench_server.verdict(ours, other, lower_is_better) == expected
