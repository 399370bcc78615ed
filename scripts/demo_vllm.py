"""Send a real tool-calling chat request to a harmony-ext vLLM server and print the result.

Used by scripts/main.sh against the tiny CPU server, whose random weights are driven by a
scripted gpt-oss output (harmony_ext_testing.vllm_scripted); against a real model, pass --no-script.

    python scripts/demo_vllm.py BASE_URL [--model NAME] [--no-script]
"""

from __future__ import annotations

import argparse
import json

from openai import OpenAI

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]},
    },
}]

# What gpt-oss typically writes for this question, with two of its usual slips: the
# recipient in the role section, and a stray "]" after the arguments.
SCRIPT = ("<|channel|>analysis<|message|>The user wants the weather in Paris. I should call "
          "get_weather.<|end|><|start|>assistant<|channel|>commentary<|message|>Let me check "
          "the weather.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary "
          '<|constrain|>json<|message|>{"city": "Paris"}]<|call|>')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base_url")
    ap.add_argument("--model", default="tiny-gpt-oss")
    ap.add_argument("--no-script", action="store_true", help="let a real model answer")
    args = ap.parse_args()
    client = OpenAI(base_url=f"{args.base_url}/v1", api_key="unused")
    extra = {} if args.no_script else {"vllm_xargs": {"script_text": SCRIPT}}
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    if not args.no_script:
        print(f"scripted model output:\n  {SCRIPT}\n")

    reply = client.chat.completions.create(model=args.model, messages=messages, tools=TOOLS,
                                           extra_body=extra)
    choice = reply.choices[0]
    print("non-streamed chat completion:")
    print(json.dumps({
        "reasoning": getattr(choice.message, "reasoning", None),
        "content": choice.message.content,
        "tool_calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                       for c in choice.message.tool_calls or []],
        "finish_reason": choice.finish_reason,
    }, indent=2))

    reasoning, content, calls, finish = [], [], {}, None
    for chunk in client.chat.completions.create(model=args.model, messages=messages,
                                                tools=TOOLS, stream=True, extra_body=extra):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning.append(getattr(delta, "reasoning", None) or "")
        content.append(delta.content or "")
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"name": "", "arguments": ""})
            entry["name"] += call.function.name or ""
            entry["arguments"] += call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    print("\nstreamed chat completion, deltas concatenated:")
    print(json.dumps({"reasoning": "".join(reasoning) or None,
                      "content": "".join(content) or None,
                      "tool_calls": [calls[i] for i in sorted(calls)],
                      "finish_reason": finish}, indent=2))


if __name__ == "__main__":
    main()
