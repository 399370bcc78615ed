"""Outputs cut by the engine's token limit (``max_tokens``), with the parse the contract asks
for, written by hand from its sections 4 and 5: the partial arguments as written, each call's
outcome, the recoveries, and ``finish_reason: "length"``. Every engine path must report the same
(the core, ``harmony-ext parse --finish length``, the vLLM server tiers, SGLang's serving chain):
the finish is ``length`` whoever says so, and nothing else in the parse depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harmony_ext_testing.client import WEATHER

TOOLS = [WEATHER]

CALL = "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"


@dataclass(frozen=True)
class Cut:
    id: str
    text: str  # the whole output the engine generated before it hit max_tokens
    reasoning: str | None = None
    content: str | None = None
    calls: tuple[tuple[str, str], ...] = ()  # (name, arguments) as the model wrote them
    outcomes: dict[str, int] = field(default_factory=dict)  # harmony_ext_tool_calls_total
    recoveries: dict[str, int] = field(default_factory=dict)  # harmony_ext_recoveries_total
    finish_reason: str = "length"


CUTS = [
    # 4/5: a call cut inside its arguments keeps its partial raw arguments; not JSON.
    Cut("inside_a_string", "<|channel|>analysis<|message|>Need weather.<|end|>" + CALL
        + '{"city": "Par', reasoning="Need weather.",
        calls=(("get_weather", '{"city": "Par'),), outcomes={"invalid_json": 1}),
    # A whole call, then a second one cut: one surfaced, one not JSON.
    Cut("second_call_cut", CALL + '{"city":"Paris"}<|call|>' + CALL + '{"city": "Os',
        calls=(("get_weather", '{"city":"Paris"}'), ("get_weather", '{"city": "Os')),
        outcomes={"surfaced": 1, "invalid_json": 1}),
    # Cut after the JSON value closed, junk already written: the junk is dropped (section 4).
    Cut("after_the_value", CALL + '{"city":"Paris"}]',
        calls=(("get_weather", '{"city":"Paris"}'),), outcomes={"surfaced": 1},
        recoveries={"after_json_value": 1}),
    # Cut inside the next call's header: no call, the header dropped (section 5).
    Cut("inside_a_header", "<|channel|>commentary<|message|>Checking.<|end|>"
        "<|start|>assistant to=functions.get_wea", content="Checking.",
        recoveries={"unfinished_header": 1}),
]
