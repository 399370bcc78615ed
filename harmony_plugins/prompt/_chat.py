"""The prompt side (contract section 8): a chat request as the Harmony messages gpt-oss reads.

In an agent loop the client sends the parsed turn back with the tool results and the engine
renders that history into the next prompt; it must be the turn the model wrote, or multi-step
tool use degrades. Every rule of that rendering is here, for both engines, sans-I/O:

- an assistant turn is rendered in the order the model writes it: analysis (``reasoning`` or
  ``reasoning_content``), then the preamble (``content``, on ``commentary``), then each call;
- chain of thought is carried while a tool-calling turn is in progress and dropped once the
  assistant has answered on ``final`` (every analysis before the last final answer goes);
- a tool result comes from ``functions.NAME`` to ``assistant`` on ``commentary``, NAME found
  from the ``tool_call_id`` the client returns;
- the system message holds the reasoning effort, the valid-channels line and, when functions
  are declared, the line routing their calls to ``commentary``; the developer message holds the
  instructions (the leading system and developer messages) and ``# Tools``;
- client text is never markup: :class:`Piece` says which text came from the client, and every
  text piece is encoded as ordinary tokens (a control-token spelling stays text).

The bytes are openai-harmony's (``render_conversation_for_completion``, tested differentially in
tests/test_conversation_differential.py) with two intended divergences: a call's header is the
form gpt-oss's chat template writes and vLLM renders, ``assistant to=functions.NAME<|channel|>
commentary json`` (:func:`harmony_plugins.harmony.call_header`); openai-harmony 0.0.10+ writes
``assistant<|channel|>commentary to=functions.NAME <|constrain|>json``, which gpt-oss can echo
back as a malformed header. And the drop rule above, which is vLLM's (every analysis before the
last final answer) where openai-harmony drops the analysis only when the conversation ends in a
final answer. The TypeScript of the tool definitions is openai-harmony's own, asked for through
the ``tools_section`` argument (:mod:`._render` supplies it). On both engines this module reads
the chat request the prompt is rendered from (the adapters hand it the request; see
docs/architecture.md).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import harmony as hm
from .._tools import field as _get
from ._model import (
    MODEL_IDENTITY,
    Developer,
    Function,
    Message,
    NotRenderable,
    System,
)
from ._order import drop_analysis, part_of, written_order

EFFORTS = ("low", "medium", "high")



def text_of(content: Any, role: str, thinking: list[str] | None = None) -> str:
    """A message's text: a string, or its text parts joined; thinking parts (assistant only)
    go to ``thinking``; any other part cannot be rendered."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        kind = _get(part, "type")
        if kind == "text":
            texts.append(_get(part, "text") or "")
        elif kind in ("thinking", "reasoning") and thinking is not None:
            thinking.append(_get(part, "thinking") or _get(part, "text") or "")
        else:
            raise NotRenderable(f"a {role} message has a {kind!r} content part",
                                kind=f"{kind!r} content part")
    return "".join(texts)


def arguments_text(arguments: Any) -> str:
    """Call arguments verbatim (a dict, which is not standard, as JSON)."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return json.dumps(arguments, ensure_ascii=False)


def call_names(messages: Iterable[Any]) -> dict[str, str]:
    """Function name per tool-call id, from the assistant turns sent back."""
    names = {}
    for m in messages:
        for call in _tool_calls(m):
            fn = _get(call, "function") or {}
            if _get(call, "id") and _get(fn, "name"):
                names[_get(call, "id")] = _get(fn, "name")
    return names


def _tool_calls(message: Any) -> list[Any]:
    """A message's tool calls, read once (an engine may hold them as a one-pass iterator)."""
    calls = _get(message, "tool_calls")
    return calls if isinstance(calls, list) else list(calls or ())


def declared_functions(tools: Iterable[Any] | None) -> tuple[Function, ...]:
    """The function tools the prompt declares: every one the request declares (chat or Responses
    shape, dicts or objects), whatever its ``tool_choice`` says (contract section 8: the model
    and both engines' parse sides know every tool; ``tool_choice: "none"`` surfaces no call on
    the parse side). An engine that leaves the tools out (vLLM's
    ``--exclude-tools-when-tool-choice-none``) passes none."""
    out = []
    for tool in tools or ():
        kind = _get(tool, "type") or "function"
        fn = _get(tool, "function") or tool
        name = _get(fn, "name")
        if kind != "function" or not isinstance(name, str) or not name:
            raise NotRenderable(f"a tool of type {kind!r}", kind="tool type")
        out.append(Function(name, _get(fn, "description") or "", _get(fn, "parameters")))
    return tuple(out)


def assistant_turn(message: Any, *, thinking_parts: bool = True) -> list[Message]:
    """One assistant chat message as the Harmony messages the model wrote, in written order."""
    thinking: list[str] = []
    content = text_of(_get(message, "content"), hm.ASSISTANT,
                      thinking if thinking_parts else None)
    analysis = (_get(message, "reasoning_content") or _get(message, "reasoning")
                or "".join(thinking))
    calls = _tool_calls(message)
    out = []
    if analysis:
        out.append(Message(hm.ASSISTANT, analysis, channel=hm.ANALYSIS))
    if content:
        out.append(Message(hm.ASSISTANT, content, channel=hm.COMMENTARY if calls else hm.FINAL))
    for call in calls:
        fn = _get(call, "function") or {}
        name = _get(fn, "name")
        if not name:
            raise NotRenderable("a tool call without a function name")
        out.append(Message(hm.ASSISTANT, arguments_text(_get(fn, "arguments")),
                           channel=hm.COMMENTARY, recipient=hm.function_recipient(name),
                           content_type=hm.JSON))
    return written_order(out, lambda m: part_of(m.channel, m.recipient))


def chat_message(message: Any, names: Mapping[str, str]) -> list[Message]:
    """One chat message (after the leading instructions) as Harmony messages."""
    role = _get(message, "role")
    unsupported = sorted(k for k in ("tools", "prefix") if _get(message, k))
    if unsupported:
        raise NotRenderable(f"a message with {unsupported}")
    if role == hm.USER:
        return [Message(hm.USER, text_of(_get(message, "content"), role))]
    if role in (hm.SYSTEM, hm.DEVELOPER):  # later instructions stay where they are
        return [Message(hm.DEVELOPER, text_of(_get(message, "content"), role))]
    if role == hm.TOOL:
        name = names.get(_get(message, "tool_call_id") or "") or _get(message, "name")
        if not name:
            raise NotRenderable("a tool result whose tool_call_id names no call sent back")
        return [Message(hm.TOOL, text_of(_get(message, "content"), role),
                        author=hm.function_recipient(name), channel=hm.COMMENTARY,
                        recipient=hm.ASSISTANT)]
    if role == hm.ASSISTANT:
        return assistant_turn(message)
    raise NotRenderable(f"a message with role {role!r}", kind="role")


def conversation(messages: Sequence[Any], tools: Iterable[Any] | None = None,
                 reasoning_effort: str | None = None, *,
                 model_identity: str | None = None, today: datetime.date | None = None
                 ) -> list[Message]:
    """The Harmony messages of a chat completions request, system and developer first
    (``tools``: see :func:`declared_functions`)."""
    if not messages:
        raise NotRenderable("the request has no messages")
    if _get(messages[-1], "role") == hm.ASSISTANT:
        raise NotRenderable("the last message is from the assistant")
    effort = getattr(reasoning_effort, "value", reasoning_effort)
    if effort is not None and effort not in EFFORTS:
        raise NotRenderable(f"reasoning_effort {effort!r} has no Harmony equivalent",
                            kind="reasoning_effort")
    instructions = []  # leading system and developer messages, as gpt-oss's template does
    start = 0
    for m in messages:
        role = _get(m, "role")
        if role not in (hm.SYSTEM, hm.DEVELOPER):
            break
        instructions.append(text_of(_get(m, "content"), role))
        start += 1
    functions = declared_functions(tools)
    date = (today or datetime.datetime.now(datetime.UTC).date()).isoformat()
    out = [Message(hm.SYSTEM, System(date, effort or "medium", model_identity or MODEL_IDENTITY,
                                    function_routing=bool(functions)))]
    instruction_text = "\n\n".join(t for t in instructions if t)
    if instruction_text or functions:
        out.append(Message(hm.DEVELOPER, Developer(instruction_text or None, functions)))
    rest = messages[start:]
    names = call_names(rest)
    body = [h for m in rest for h in chat_message(m, names)]
    return out + drop_analysis(body)


TEMPLATE_KWARGS = frozenset({"reasoning_effort", "model_identity", "thinking",
                             "enable_thinking"})
"""``chat_template_kwargs`` the rendering honours (the first two) or may ignore (the thinking
switches engines add when a reasoning effort is given; gpt-oss has no such switch)."""


def from_request(request: Any, tools: Iterable[Any] | None = None, *,
                 reasoning_effort: str | None = None,
                 today: datetime.date | None = None) -> list[Message]:
    """The Harmony messages of a chat completions request, a dict or an engine's object.

    ``tools``: the tools to list (default: the request's ``tools``); ``reasoning_effort``: the
    effort as the engine resolved it (default: the request's). Besides the fields of
    :func:`conversation`, reads ``chat_template_kwargs`` (their ``reasoning_effort`` and
    ``model_identity``; any other is for a chat template, so the request is not renderable
    here) and ``continue_final_message`` (not renderable either).
    """
    if _get(request, "continue_final_message"):
        raise NotRenderable("continue_final_message is set")
    template_kwargs = dict(_get(request, "chat_template_kwargs") or {})
    unknown = sorted(set(template_kwargs) - TEMPLATE_KWARGS)
    if unknown:
        raise NotRenderable(f"chat_template_kwargs {unknown} are for the chat template",
                            kind="chat_template_kwargs")
    effort = (reasoning_effort or _get(request, "reasoning_effort")
              or template_kwargs.get("reasoning_effort"))
    messages = [m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else m
                for m in _get(request, "messages") or ()]  # an engine's pydantic messages
    return conversation(messages, tools if tools is not None else _get(request, "tools"),
                        effort, model_identity=template_kwargs.get("model_identity"),
                        today=today)
