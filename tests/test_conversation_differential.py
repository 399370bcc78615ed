"""The core's prompt bytes against openai-harmony's ``render_conversation_for_completion``.

Seeded random chat conversations (tools with nested schemas, enums, defaults, nullable and
``oneOf`` properties; several calls per turn answered in any order; analysis before calls; final
answers; later system messages; control-token spellings and any Unicode in user, tool, system
and tool-definition text) go through :func:`harmony_plugins.prompt._chat.conversation`; the
Harmony messages it gives are rendered by the core
(:func:`harmony_plugins.prompt._render.prompt_ids`) and, rebuilt as openai-harmony messages, by
openai-harmony. The ids must be the same, token for token, apart from the intended divergences
named below.

Intended divergences:

- ``LEGACY_CALL_HEADER``: a call is rendered ``<|start|>assistant to=functions.NAME<|channel|>
  commentary json<|message|>`` (the form gpt-oss's chat template writes and vLLM renders, vLLM by
  rewriting openai-harmony's output); openai-harmony 0.0.10+ writes ``<|start|>assistant
  <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>``. The test rewrites
  openai-harmony's call headers to the legacy form before comparing.
- ``DROP_RULE``: the core drops every analysis before the last final answer (contract 8, as
  vLLM does); openai-harmony's ``auto_drop_analysis`` drops only those before the first final,
  and only when the last assistant message is final. openai-harmony gets the core's messages
  with ``auto_drop_analysis=False``; :func:`test_drop_rule_divergence` shows the difference.
"""

from __future__ import annotations

import datetime
import json
import random
import string
from typing import Any

import pytest

openai_harmony = pytest.importorskip("openai_harmony",
                                     reason="needs openai-harmony (the test extra)")

from harmony_plugins.prompt import _chat as c  # noqa: E402
from harmony_plugins.prompt import _model as model  # noqa: E402
from harmony_plugins.prompt import _render as render  # noqa: E402

CASES = 300
DAY = datetime.date(2026, 12, 1)
SPELLINGS = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>",
             "<|return|>", "<|call|>", "<|endoftext|>", "<|startoftext|>", "<|endofprompt|>",
             "<|reserved_200100|>", "<|", "|>", "<|unknown|>"]
WORDS = ["weather", "Paris", "Zürich", "東京", "👋", "naïve", "  two  spaces", "tab\there",
         "line\nbreak", "\r\n", "{\"a\": [1, 2]}", "to=functions.x", "json", "analysis",
         "final", "commentary", "0.5", "", "ünïcödé", "Ωμέγα", "—", "\\u0000"]


def words(rng: random.Random, spellings: bool = True, n: int = 6) -> str:
    pool = WORDS + (SPELLINGS if spellings else [])
    return " ".join(rng.choice(pool) for _ in range(rng.randint(0, n)))


def name(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase + "_") + "".join(
        rng.choice(string.ascii_lowercase + string.digits + "_") for _ in range(rng.randint(0, 12)))


def schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kind = rng.choice(["string", "number", "integer", "boolean", "array", "object", "enum",
                       "oneOf"] if depth < 3 else ["string", "number", "boolean", "enum"])
    out: dict[str, Any]
    if kind == "enum":
        out = {"type": "string", "enum": [name(rng) for _ in range(rng.randint(1, 4))]}
    elif kind == "array":
        out = {"type": "array"}
        if rng.random() < 0.8:
            out["items"] = schema(rng, depth + 1)
    elif kind == "object":
        props = {name(rng): schema(rng, depth + 1) for _ in range(rng.randint(0, 4))}
        out = {"type": "object", "properties": props}
        if props and rng.random() < 0.7:
            out["required"] = rng.sample(sorted(props), rng.randint(0, len(props)))
    elif kind == "oneOf":
        out = {"oneOf": [schema(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    else:
        out = {"type": kind}
    if rng.random() < 0.4:
        out["description"] = words(rng)
    if rng.random() < 0.3 and kind in ("string", "enum", "number", "integer", "boolean"):
        out["default"] = {"string": "x y", "number": 0.5, "integer": 3, "boolean": True,
                          "enum": out.get("enum", ["a"])[0]}[kind]
    if rng.random() < 0.15:
        out["nullable"] = True
    return out


def tool(rng: random.Random, fn_name: str) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": fn_name}
    if rng.random() < 0.8:
        fn["description"] = words(rng) + ("\n" + words(rng) if rng.random() < 0.3 else "")
    if rng.random() < 0.85:
        fn["parameters"] = {"type": "object", "properties": {
            name(rng): schema(rng, 1) for _ in range(rng.randint(0, 5))}}
    return {"type": "function", "function": fn}


def arguments(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.6:
        return json.dumps({name(rng): words(rng, n=3) for _ in range(rng.randint(0, 3))},
                          ensure_ascii=rng.random() < 0.5)
    if roll < 0.8:
        return words(rng)  # not JSON: sent back verbatim
    return {"k": words(rng, n=2)}  # a dict, which is not standard


def chat(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any, Any]:
    names = list(dict.fromkeys(name(rng) for _ in range(rng.randint(0, 4))))
    tools = [tool(rng, n) for n in names]
    messages: list[dict[str, Any]] = []
    for role in rng.sample(["system", "developer"], rng.randint(0, 2)):
        messages.append({"role": role, "content": words(rng)})
    messages.append({"role": "user", "content": words(rng)})
    ids = 0
    for _ in range(rng.randint(0, 4)):
        turn: dict[str, Any] = {"role": "assistant"}
        if rng.random() < 0.7:
            turn[rng.choice(["reasoning", "reasoning_content"])] = words(rng) or "hmm"
        if names and rng.random() < 0.6:  # a tool turn
            if rng.random() < 0.5:
                turn["content"] = words(rng) or "Checking."
            calls = []
            for _ in range(rng.randint(1, 3)):
                ids += 1
                calls.append({"id": f"call_{ids}", "type": "function", "function": {
                    "name": rng.choice(names), "arguments": arguments(rng)}})
            turn["tool_calls"] = calls
            messages.append(turn)
            for call in rng.sample(calls, len(calls)):
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": words(rng)})
        else:
            turn["content"] = words(rng) or "Done."
            messages.append(turn)
            if rng.random() < 0.2:
                messages.append({"role": "system", "content": words(rng)})
            messages.append({"role": "user", "content": words(rng)})
    choice = rng.choice([None, "auto", "required", "none"]
                        + ([{"type": "function", "function": {"name": names[0]}}] if names else []))
    return messages, tools, choice, rng.choice([None, "low", "medium", "high"])


def harmony_message(m: model.Message) -> Any:
    """The same Harmony message, as openai-harmony's type."""
    h = openai_harmony
    if isinstance(m.body, model.System):
        s = m.body
        content = (h.SystemContent.new().with_model_identity(s.model_identity)
                   .with_knowledge_cutoff(s.knowledge_cutoff)
                   .with_conversation_start_date(s.date)
                   .with_reasoning_effort(h.ReasoningEffort(s.reasoning_effort.capitalize()))
                   .with_required_channels(list(s.channels)))
        return h.Message.from_role_and_content(h.Role.SYSTEM, content)
    if isinstance(m.body, model.Developer):
        content = h.DeveloperContent.new()
        if m.body.instructions is not None:
            content = content.with_instructions(m.body.instructions)
        if m.body.functions:
            content = content.with_function_tools([
                h.ToolDescription.new(f.name, f.description, parameters=f.parameters)
                for f in m.body.functions])
        return h.Message.from_role_and_content(h.Role.DEVELOPER, content)
    if m.role == "tool":
        out = h.Message.from_author_and_content(h.Author.new(h.Role.TOOL, m.author), m.body)
    else:
        out = h.Message.from_role_and_content(h.Role(m.role), m.body)
    if m.channel is not None:
        out = out.with_channel(m.channel)
    if m.recipient is not None:
        out = out.with_recipient(m.recipient)
    if m.content_type is not None:
        out = out.with_content_type(m.content_type)
    return out


def legacy_call_headers(ids: list[int], enc: Any) -> list[int]:
    """LEGACY_CALL_HEADER: openai-harmony's call headers rewritten to the legacy form."""
    start, channel, constrain, message = (enc.encode(s, allowed_special="all")[0] for s in (
        "<|start|>", "<|channel|>", "<|constrain|>", "<|message|>"))
    assistant = enc.encode("assistant")
    out: list[int] = []
    i = 0
    while i < len(ids):
        head = i + 1 + len(assistant)
        if (ids[i] == start and ids[i + 1:head] == assistant and head < len(ids)
                and ids[head] == channel and constrain in ids[head:ids.index(message, head)]):
            k = ids.index(constrain, head)
            end = ids.index(message, head)
            ch, recipient = enc.decode(ids[head + 1:k]).rstrip(" ").split(" to=")
            ctype = enc.decode(ids[k + 1:end])
            out += [start, *enc.encode(f"assistant to={recipient}"), channel,
                    *enc.encode(f"{ch} {ctype}"), message]
            i = end + 1
        else:
            out.append(ids[i])
            i += 1
    return out


def theirs(messages: list[model.Message]) -> list[int]:
    h = openai_harmony
    enc = render.encoding()
    ids = enc.render_conversation_for_completion(
        h.Conversation.from_messages([harmony_message(m) for m in messages]), h.Role.ASSISTANT,
        config=h.RenderConversationConfig(auto_drop_analysis=False))
    return legacy_call_headers(ids, enc)


@pytest.mark.parametrize("seed", range(CASES))
def test_same_ids_as_openai_harmony(seed: int) -> None:
    rng = random.Random(seed)
    messages, tools, _choice, effort = chat(rng)
    harmony = c.conversation(messages, tools, effort, today=DAY)
    ours = render.prompt_ids(harmony)
    want = theirs(harmony)
    if ours != want:
        enc = render.encoding()
        at = next((i for i, (a, b) in enumerate(zip(ours, want, strict=False)) if a != b),
                  min(len(ours), len(want)))
        pytest.fail(f"differs at token {at}: ours {enc.decode(ours[at - 20:at + 20])!r}, "
                    f"openai-harmony {enc.decode(want[at - 20:at + 20])!r}")
    # and no control token came from client text: the envelopes' markers only
    specials = [i for i in ours if i >= 199998]
    assert len(specials) == sum(3 + (m.channel is not None) for m in harmony) + 1


def test_generated_cases_cover_what_they_claim() -> None:
    """The generator does make what the docstring lists (so the cases test something)."""
    seen: set[str] = set()
    for seed in range(CASES):
        messages, tools, _, _ = chat(random.Random(seed))
        text = json.dumps([messages, tools], ensure_ascii=False)
        for key in ('"enum"', '"default"', '"oneOf"', '"nullable"', '"items"', "<|call|>",
                    "<|end|>", '"reasoning"', '"reasoning_content"'):
            if key in text:
                seen.add(key)
        for m in messages:
            if len(m.get("tool_calls") or ()) > 1:
                seen.add("several calls")
            if m["role"] == "assistant" and not m.get("tool_calls"):
                seen.add("final")
            if m["role"] == "assistant" and m.get("tool_calls") and (
                    m.get("reasoning") or m.get("reasoning_content")):
                seen.add("analysis before calls")
    assert seen == {'"enum"', '"default"', '"oneOf"', '"nullable"', '"items"', "<|call|>",
                    "<|end|>", '"reasoning"', '"reasoning_content"', "several calls", "final",
                    "analysis before calls"}


def test_drop_rule_divergence() -> None:
    """DROP_RULE: after two answers and a tool turn in progress, the first answer's analysis
    is dropped by the core and kept by openai-harmony's own rule."""
    h = openai_harmony
    messages = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "reasoning": "Think one.", "content": "A1"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "reasoning": "Think two.",
         "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
    ]
    harmony = c.conversation(messages, [{"type": "function", "function": {"name": "f"}}],
                             today=DAY)
    analyses = [m.body for m in harmony if m.channel == "analysis"]
    assert analyses == ["Think two."]
    undropped = [*harmony[:3], model.Message("assistant", "Think one.", channel="analysis"),
                 *harmony[3:]]
    enc = render.encoding()
    kept = enc.decode(enc.render_conversation_for_completion(
        h.Conversation.from_messages([harmony_message(m) for m in undropped]), h.Role.ASSISTANT))
    assert "Think one." in kept and "Think two." in kept
