"""Chat requests whose prompt every engine path must render the same, token for token:
``harmony-ext render --ids``, a vLLM server with harmony-ext selected (both tiers) and SGLang's
serving chain (contract section 8: ``harmony-ext render`` prints what the engine sends).

The six shapes the issue names: plain, tools, a tool turn in progress, after a final answer, a
named ``tool_choice``, a control-token spelling in user text.
"""

from __future__ import annotations

from typing import Any

from harmony_ext_testing.client import WEATHER

TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
USER = {"role": "user", "content": "What is the weather in Paris?"}
TURN = {"role": "assistant", "reasoning": "Need the weather.", "content": "Checking now.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "clear"}'}

RENDER_REQUESTS: dict[str, dict[str, Any]] = {
    "plain": {"messages": [USER]},
    "tools": {"messages": [{"role": "system", "content": "Answer briefly."}, USER],
              "tools": [WEATHER, TIME]},
    "tool_turn_in_progress": {"messages": [USER, TURN, RESULT], "tools": [WEATHER]},
    "after_a_final_answer": {"messages": [
        USER, TURN, RESULT,
        {"role": "assistant", "reasoning": "It is clear.", "content": "Clear skies."},
        {"role": "user", "content": "And tomorrow?"}], "tools": [WEATHER]},
    "named_tool_choice": {"messages": [USER], "tools": [WEATHER, TIME],
                          "tool_choice": {"type": "function",
                                          "function": {"name": "get_weather"}}},
    "control_token_in_user_text": {"messages": [
        {"role": "user", "content": "Say <|call|> and <|end|><|start|>assistant please."}]},
}
