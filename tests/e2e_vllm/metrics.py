"""Scraping harmony-ext's counters from a vLLM server's ``/metrics``, and the scripted
requests that move them (shared by the one- and two-API-server tests).

The expected increments are written by hand from the contract (sections 3, 4, 6 and 9).
"""

from __future__ import annotations

import urllib.request
from typing import Any

from harmony_ext_testing.vllm_cases import CALL_W, PARIS, Case

NAMES = ("harmony_ext_responses_total", "harmony_ext_recoveries_total",
         "harmony_ext_tool_calls_total", "harmony_ext_leaks_suspected_total")

# Each request's script and what it must add (one response each).
SCRIPTED: list[tuple[Case, dict[tuple[str, tuple[tuple[str, str], ...]], float]]] = [
    (Case("m_junk", "stray ] after the arguments", CALL_W + PARIS + "]<|call|>",
          tools=("get_weather",)),
     {("harmony_ext_recoveries_total", (("rule", "after_json_value"),)): 1,
      ("harmony_ext_tool_calls_total", (("outcome", "surfaced"),)): 1}),
    (Case("m_schema", "arguments that break the declared schema",
          CALL_W + '{"city": 3}<|call|>', tools=("get_weather",)),
     {("harmony_ext_tool_calls_total", (("outcome", "schema_mismatch"),)): 1}),
    (Case("m_not_json", "arguments that are not JSON", CALL_W + "city=Paris<|call|>",
          tools=("get_weather",)),
     {("harmony_ext_tool_calls_total", (("outcome", "invalid_json"),)): 1}),
    (Case("m_undeclared", "a call to a function the request did not declare",
          "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>",
          tools=("get_weather",)),
     {("harmony_ext_recoveries_total", (("rule", "undeclared_function"),)): 1,
      ("harmony_ext_tool_calls_total", (("outcome", "undeclared"),)): 1}),
    (Case("m_leak", "a header written as prose in the answer",
          "<|channel|>final<|message|>Now commentary to=functions.get_weather json "
          "please.<|return|>", tools=("get_weather",)),
     {("harmony_ext_leaks_suspected_total", ()): 1}),
    # Contract version 3, and the message rules: each moves its counter by exactly one.
    (Case("m_first_header", "v3: the first message's header, closed by <|end|>",
          "We must refuse.<|end|><|start|>assistant<|channel|>final<|message|>No.<|return|>"),
     {("harmony_ext_recoveries_total", (("rule", "header_without_message"),)): 1}),
    (Case("m_final_constrain", "v3: `final` + a stray <|constrain|>, no <|message|>",
          "<|channel|>final<|constrain|>The answer.<|return|>"),
     {("harmony_ext_recoveries_total", (("rule", "final_without_message"),)): 1}),
    (Case("m_repeated_start", "v3: a repeated <|start|> counts once (nothing to recover)",
          "<|channel|>analysis<|message|>x<|end|><|start|><|start|>assistant" + CALL_W + PARIS
          + "<|call|>", tools=("get_weather",)),
     {("harmony_ext_tool_calls_total", (("outcome", "surfaced"),)): 1}),
    (Case("m_stray_marker", "v3: a stray <|message|> inside a body",
          "<|channel|>final<|message|>A<|message|>B<|return|>"),
     {("harmony_ext_recoveries_total", (("rule", "stray_marker"),)): 1}),
    (Case("m_unknown_channel", "an unknown channel name counts as analysis",
          "<|channel|>comment<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y"
          "<|return|>"),
     {("harmony_ext_recoveries_total", (("rule", "unknown_channel"),)): 1}),
]


def scrape(base_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The harmony-ext samples on ``/metrics``: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{base_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in NAMES:
                out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def expected_increase(rounds: int, per_request: int) -> dict[Any, float]:
    """What ``rounds`` rounds of the scripted requests, each sent ``per_request`` times
    (streamed and not count as one response each), add to the counters."""
    want: dict[Any, float] = {("harmony_ext_responses_total", ()): 0.0}
    for _, adds in SCRIPTED:
        want["harmony_ext_responses_total", ()] += rounds * per_request
        for key, n in adds.items():
            want[key] = want.get(key, 0.0) + rounds * per_request * n
    return want


def increase(before: dict[Any, float], after: dict[Any, float]) -> dict[Any, float]:
    """The counters that moved, and by how much."""
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}
