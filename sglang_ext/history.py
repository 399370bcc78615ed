"""Prompt side on SGLang: a gpt-oss conversation is rendered as Harmony, not by the chat template.

In an agent loop the client sends our parsed assistant turn back with the tool results, and the
engine renders that history into the next prompt. SGLang renders it with the model's Hugging Face
chat template, which for gpt-oss reads analysis from a ``thinking`` key (SGLang's messages carry
``reasoning_content``), renders a preamble as analysis, and re-serialises call arguments. Before
the template even runs, SGLang parses every call's arguments into a dict (so they are no longer
verbatim) and answers 400 when they are not a JSON object. The model then reads a turn it never
wrote (harmony-contract.md, section 8).

:func:`apply_template` wraps ``OpenAIServingChat._apply_jinja_template`` (AROUND hook, installed by
:mod:`sglang_ext.plugin`); that is the last point where the request and the client's messages are
still as sent. When a ``harmony-ext`` parser is selected and the model is gpt-oss, it renders the
prompt with ``openai_harmony``: a system message (reasoning effort), a developer message
(instructions and function tools), then the conversation, ending with ``<|start|>assistant``.
A request this rendering cannot represent (images, ``continue_final_message``, unknown roles or
template arguments) goes to SGLang's own path, with one log line per reason.
``HARMONY_EXT_CHAT_TEMPLATE=1`` keeps SGLang's chat-template rendering for every request.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import json
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from .names import NAME

logger = logging.getLogger("sglang_ext")

TARGET = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat._apply_jinja_template"
HANDLE = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat.handle_request"
OPT_OUT = "HARMONY_EXT_CHAT_TEMPLATE"
EFFORTS = ("low", "medium", "high")
# chat_template_kwargs this rendering honours or may ignore (SGLang itself adds the thinking
# switches when a reasoning effort is given; gpt-oss has no such switch).
KNOWN_TEMPLATE_KWARGS = frozenset({"reasoning_effort", "model_identity", "thinking",
                                   "enable_thinking"})

_logged: set[str] = set()


class Unsupported(Exception):
    """The request holds something this rendering cannot represent (the message says what).

    ``kind`` keys the once-only log line where the message holds client-chosen values.
    """

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind or message


def _once(key: str, message: str, *args: Any) -> None:
    if key not in _logged:
        _logged.add(key)
        logger.info(message, *args)


def active(serving: Any) -> bool:
    """A harmony-ext parser is selected, the model is gpt-oss, and the user did not opt out."""
    return (NAME in (getattr(serving, "tool_call_parser", None),
                     getattr(serving, "reasoning_parser", None))
            and getattr(serving, "is_gpt_oss", False) is True
            and os.environ.get(OPT_OUT, "") not in ("1", "true", "yes"))


def apply_template(original: Callable[..., Any], self: Any, *args: Any, **kwargs: Any) -> Any:
    """AROUND hook on ``OpenAIServingChat._apply_jinja_template``."""
    if not active(self):
        return original(self, *args, **kwargs)
    try:
        bound = inspect.signature(original).bind(self, *args, **kwargs)
        request, tools = bound.arguments["request"], bound.arguments.get("tools")
        is_multimodal = bound.arguments.get("is_multimodal", False)
    except (TypeError, KeyError):
        _once("signature", "harmony-ext: unknown _apply_jinja_template signature; gpt-oss "
              "prompts are rendered by SGLang's chat template")
        return original(self, *args, **kwargs)
    try:
        if getattr(self, "chat_encoding_spec", None) is not None or getattr(
                self, "_encoding_adapter", None) is not None:
            raise Unsupported("SGLang uses its own chat encoder for this model")
        if is_multimodal:
            raise Unsupported("the model is served as multimodal")
        ids = render_request(request, tools)
    except Unsupported as e:
        _once(f"fallback:{e.kind}", "harmony-ext: %s; such requests are rendered by SGLang's chat "
              "template instead of openai_harmony", e)
        return original(self, *args, **kwargs)
    _once("active", "harmony-ext: rendering gpt-oss chat prompts itself with openai_harmony "
          "(analysis, preamble, calls in the order the model wrote them; arguments verbatim), "
          "not with the chat template; set %s=1 to keep the template", OPT_OUT)
    from sglang.srt.entrypoints.openai.protocol import MessageProcessingResult

    return MessageProcessingResult(prompt="", prompt_ids=ids, image_data=None, audio_data=None,
                                   video_data=None, modalities=[], stop=request.stop)


async def carry_reasoning(original: Callable[..., Any], self: Any, request: Any, *args: Any,
                          **kwargs: Any) -> Any:
    """AROUND hook on ``OpenAIServingChat.handle_request``: keep a message's ``reasoning``.

    SGLang's message model knows ``reasoning_content`` only and drops a ``reasoning`` key (the
    name vLLM and contract section 8 use) while validating the request, before any plugin code
    runs. The raw body is still there: its ``reasoning`` becomes ``reasoning_content``.
    """
    raw_request = args[0] if args else kwargs.get("raw_request")
    if raw_request is not None and active(self):
        try:
            await copy_reasoning(request, raw_request)
        except Exception as e:  # an unreadable body: the request goes on as SGLang read it
            _once("raw body", "harmony-ext: cannot read the raw chat request (%s: %s); a "
                  "message's 'reasoning' key is dropped by SGLang", type(e).__name__, e)
    return await original(self, request, *args, **kwargs)


async def copy_reasoning(request: Any, raw_request: Any) -> None:
    """Set ``reasoning_content`` from the raw body's ``reasoning`` where SGLang dropped it."""
    messages = getattr(request, "messages", None) or []
    if not any(getattr(m, "role", None) == "assistant"
               and not getattr(m, "reasoning_content", None) for m in messages):
        return
    body = await raw_request.body()
    if b'"reasoning"' not in body:
        return
    raw_messages = json.loads(body).get("messages")
    if not isinstance(raw_messages, list) or len(raw_messages) != len(messages):
        return
    for message, raw in zip(messages, raw_messages, strict=True):
        reasoning = raw.get("reasoning") if isinstance(raw, dict) else None
        if (getattr(message, "role", None) == "assistant" and isinstance(reasoning, str)
                and reasoning and not getattr(message, "reasoning_content", None)):
            message.reasoning_content = reasoning


def render_request(request: Any, tools: list[dict[str, Any]] | None) -> list[int]:
    """Prompt token ids for a ``ChatCompletionRequest`` (``tools`` as SGLang selected them)."""
    if getattr(request, "continue_final_message", False):
        raise Unsupported("continue_final_message is set")
    template_kwargs = dict(getattr(request, "chat_template_kwargs", None) or {})
    unknown = sorted(set(template_kwargs) - KNOWN_TEMPLATE_KWARGS)
    if unknown:
        raise Unsupported(f"chat_template_kwargs {unknown} are for the chat template",
                          kind="chat_template_kwargs")
    effort = getattr(request, "reasoning_effort", None) or template_kwargs.get("reasoning_effort")
    messages = [m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else dict(m)
                for m in request.messages]
    return render(messages, tools, reasoning_effort=effort,
                  model_identity=template_kwargs.get("model_identity"))


VOCAB_ENV = "TIKTOKEN_ENCODINGS_BASE"


@functools.cache
def loaded_encoding() -> tuple[Any, str | None]:
    """(the gpt-oss Harmony encoding, None) or (None, why not); tried once per process.

    openai_harmony downloads ``o200k_base.tiktoken`` unless ``TIKTOKEN_ENCODINGS_BASE`` names
    a folder holding it. Offline, and with that variable unset, the file is rebuilt from the
    vocabulary harmony-ext ships (checked against its published sha256) and the variable set.
    """
    import openai_harmony

    def load() -> Any:
        return openai_harmony.load_harmony_encoding(
            openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)

    try:
        return load(), None
    except Exception as first:
        if os.environ.get(VOCAB_ENV):
            return None, f"{type(first).__name__}: {first}"
        try:
            import tempfile
            from pathlib import Path

            from harmony_plugins.o200k import write_tiktoken_file

            folder = Path(tempfile.mkdtemp(prefix="harmony-ext-vocab-"))
            write_tiktoken_file(folder / "o200k_base.tiktoken")
            os.environ[VOCAB_ENV] = str(folder)
            encoding = load()
        except Exception as e:
            return None, f"{type(first).__name__}: {first}; offline vocabulary: {e}"
        logger.info("harmony-ext: openai_harmony could not load its vocabulary (%s); using "
                    "harmony-ext's offline copy (%s=%s)", first, VOCAB_ENV, folder)
        return encoding, None


def encoding() -> Any:
    """The gpt-oss Harmony encoding, or :class:`Unsupported` saying why it cannot load."""
    enc, problem = loaded_encoding()
    if enc is None:
        raise Unsupported(f"openai_harmony cannot load the gpt-oss encoding ({problem})")
    return enc


def text_of(content: Any, role: str, *, thinking: list[str] | None = None) -> str:
    """A message's text; thinking parts (assistant only) go to ``thinking``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(part.get("text") or "")
        elif kind in ("thinking", "reasoning") and thinking is not None:
            thinking.append(part.get("thinking") or part.get("text") or "")
        else:
            raise Unsupported(f"a {role} message has a {kind!r} content part")
    return "".join(texts)


def arguments_text(arguments: Any) -> str:
    """Call arguments as the client sent them (a dict, which is not standard, as JSON)."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return json.dumps(arguments, ensure_ascii=False)


def call_names(messages: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Function name per tool-call id, from the assistant turns sent back."""
    names = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            if call.get("id") and fn.get("name"):
                names[call["id"]] = fn["name"]
    return names


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *,
           reasoning_effort: Any = None, model_identity: str | None = None,
           today: datetime.date | None = None) -> list[int]:
    """Token ids of the Harmony prompt for chat ``messages`` (contract section 8)."""
    from openai_harmony import (
        DeveloperContent,
        Message,
        ReasoningEffort,
        Role,
        SystemContent,
        ToolDescription,
    )

    enc = encoding()
    if not messages:
        raise Unsupported("the request has no messages")
    if messages[-1].get("role") == "assistant":
        raise Unsupported("the last message is from the assistant")
    if reasoning_effort is not None and reasoning_effort not in EFFORTS:
        raise Unsupported(f"reasoning_effort {reasoning_effort!r} has no Harmony equivalent",
                          kind="reasoning_effort")

    # Leading system/developer messages become the developer instructions, as in gpt-oss's
    # template; later ones stay where they are, as developer messages.
    instructions = []
    start = 0
    for m in messages:
        if m.get("role") not in ("system", "developer"):
            break
        instructions.append(text_of(m.get("content"), m["role"]))
        start += 1

    system = SystemContent.new().with_conversation_start_date(
        (today or datetime.datetime.now(datetime.UTC).date()).isoformat())
    if reasoning_effort is not None:
        system = system.with_reasoning_effort(ReasoningEffort(reasoning_effort.capitalize()))
    if model_identity:
        system = system.with_model_identity(model_identity)
    ids = enc.render(Message.from_role_and_content(Role.SYSTEM, system))
    functions = [tool_description(ToolDescription, t) for t in tools or ()]
    instruction_text = "\n\n".join(t for t in instructions if t)
    if instruction_text or functions:
        developer = DeveloperContent.new()
        if instruction_text:
            developer = developer.with_instructions(instruction_text)
        if functions:
            developer = developer.with_function_tools(functions)
        ids += enc.render(Message.from_role_and_content(Role.DEVELOPER, developer))

    rest = messages[start:]
    names = call_names(rest)
    # Chain of thought is dropped once the assistant has answered on final: analysis is kept
    # only after the last final answer in the history.
    last_final = max((i for i, m in enumerate(rest)
                      if m.get("role") == "assistant" and not m.get("tool_calls")), default=-1)
    for i, m in enumerate(rest):
        ids += render_message(m, names, keep_analysis=i > last_final)
    return ids + special("<|start|>") + ordinary("assistant")


def tool_description(cls: Any, tool: dict[str, Any]) -> Any:
    """An ``openai_harmony.ToolDescription`` for one OpenAI function tool."""
    if tool.get("type", "function") != "function" or not isinstance(tool.get("function"), dict):
        raise Unsupported(f"a tool of type {tool.get('type')!r}")
    fn = tool["function"]
    return cls.new(fn["name"], fn.get("description") or "", parameters=fn.get("parameters"))


def special(spelling: str) -> list[int]:
    return encoding().encode(spelling, allowed_special="all")


def ordinary(text: str) -> list[int]:
    """Text as ordinary tokens: a control-token spelling stays text."""
    return encoding().encode(text, allowed_special=set(), disallowed_special=())


def render_call(name: str, arguments: str) -> list[int]:
    """``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>``.

    The recipient in the role section and ``json`` without ``<|constrain|>`` is the form
    gpt-oss's own chat template writes (and vLLM renders); openai_harmony 0.0.11 would write
    ``<|channel|>commentary to=functions.NAME <|constrain|>json``, a form gpt-oss is known to
    echo back as a malformed header.
    """
    return (special("<|start|>") + ordinary(f"assistant to=functions.{name}")
            + special("<|channel|>") + ordinary("commentary json") + special("<|message|>")
            + ordinary(arguments) + special("<|call|>"))


def render_message(m: dict[str, Any], names: dict[str, str], *, keep_analysis: bool
                   ) -> list[int]:
    """One chat message as Harmony token ids."""
    from openai_harmony import Author, Message, Role

    enc = encoding()
    role = m.get("role")
    unsupported = sorted(k for k in ("tools", "prefix") if m.get(k))
    if unsupported:
        raise Unsupported(f"a message with {unsupported}")
    if role == "user":
        return enc.render(Message.from_role_and_content(Role.USER,
                                                        text_of(m.get("content"), role)))
    if role in ("system", "developer"):
        return enc.render(Message.from_role_and_content(Role.DEVELOPER,
                                                        text_of(m.get("content"), role)))
    if role == "tool":
        name = names.get(m.get("tool_call_id") or "") or m.get("name")
        if not name:
            raise Unsupported("a tool result whose tool_call_id names no call sent back")
        message = Message.from_author_and_content(
            Author.new(Role.TOOL, f"functions.{name}"), text_of(m.get("content"), role))
        return enc.render(message.with_channel("commentary").with_recipient("assistant"))
    if role != "assistant":
        raise Unsupported(f"a message with role {role!r}")
    thinking: list[str] = []
    content = text_of(m.get("content"), role, thinking=thinking)
    analysis = m.get("reasoning_content") or m.get("reasoning") or "".join(thinking)
    ids: list[int] = []
    if analysis and keep_analysis:
        ids += enc.render(Message.from_role_and_content(Role.ASSISTANT, analysis)
                          .with_channel("analysis"))
    calls = m.get("tool_calls") or []
    if content:
        channel = "commentary" if calls else "final"
        ids += enc.render(Message.from_role_and_content(Role.ASSISTANT, content)
                          .with_channel(channel))
    for call in calls:
        fn = call.get("function") or {}
        if not fn.get("name"):
            raise Unsupported("a tool call without a function name")
        ids += render_call(fn["name"], arguments_text(fn.get("arguments")))
    return ids
