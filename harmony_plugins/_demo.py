"""The sample outputs of ``harmony-ext demo``: a tool, and model outputs well-formed and not.

Each sample is what it shows, the model output as text, and the same output as o200k_harmony
token ids (as gpt-oss's tokenizer encodes the text; tests check them against openai-harmony), so
the demo needs no encoder and no extra. Model outputs are Harmony as the model writes it, so
this module spells markers, channels and recipients as sample data (the one place besides
:mod:`harmony_plugins.harmony`).
"""

from __future__ import annotations

DEMO_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

DEMO_OUTPUTS: list[tuple[str, str, list[int]]] = [
    (
        "reasoning, then the final answer",
        "<|channel|>analysis<|message|>User asks for 2 + 2. Simple.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>",
        [200005, 35644, 200008, 1844, 31064, 395, 220, 17, 659, 220, 17, 13, 12295, 13, 200007,
         200006, 173781, 200005, 17196, 200008, 17, 659, 220, 17, 314, 220, 19, 13, 200002],
    ),
    (
        "a preamble, then a tool call with the recipient in the role section",
        "<|channel|>commentary<|message|>Let me check.<|end|>"
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>',
        [200005, 12606, 815, 200008, 12845, 668, 2371, 13, 200007, 200006, 173781, 316, 28, 44580,
         775, 170154, 200005, 12606, 815, 220, 200003, 4108, 200008, 10848, 17500, 1243, 392, 72782,
         18583, 200012],
    ),
    (
        "malformed: a call on analysis with trailing junk, then the model forges a tool result",
        '<|channel|>analysis to=functions.get_weather<|message|>{"city": "Oslo"}]<|call|>'
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"t": 3}',
        [200005, 35644, 316, 28, 44580, 775, 170154, 200008, 10848, 17500, 1243, 392, 15097, 746,
         18583, 60, 200012, 200006, 44580, 775, 170154, 316, 28, 173781, 200005, 12606, 815, 200008,
         10848, 83, 1243, 220, 18, 92],
    ),
    (
        "malformed: no <|message|> after final, and a builtin tool the request did not declare",
        "<|channel|>analysis to=browser.search<|message|>{\"query\": \"x\"}<|end|>"
        "<|channel|>final The answer is 42.<|end|>",
        [200005, 35644, 316, 28, 46071, 16718, 200008, 10848, 2975, 1243, 392, 87, 18583, 200007,
         200005, 17196, 623, 6052, 382, 220, 4689, 13, 200007],
    ),
]
