"""End-to-end cases for a real vLLM server: scripted gpt-oss outputs and their OpenAI view.

Each :class:`Case` is one model output (Harmony text with the special tokens spelled
literally; the scripted logits processor, ``harmony_ext_testing/vllm_scripted.py``, makes the
tiny model emit exactly its tokens), the request that carries it, and what an OpenAI client must get
according to ``docs/contract.md``. The expected values were written from the contract,
not from a parser.

Shared by the CPU suite (``tests/e2e_vllm``), the GPU suite (``tests/gpu``) and the page
generator of ``docs/vllm-comparison.md`` (``pages/vllm_comparison.py``, which imports nothing
from the tests): the request helpers return plain, id-free *outcomes* that compare with
``==``; the comparison helpers turn two servers' outcomes into that page's table.
"""

from __future__ import annotations

import functools
import json
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harmony_ext_testing.client import Fold, same_json

MODEL = "tiny-gpt-oss"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
RETURN_ID = 200002  # <|return|>

CONTROL_SPELLINGS = (
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>",
    "<|call|>", "<|endoftext|>", "<|startoftext|>", "<|endofprompt|>",
)

_OBJECT = {"type": "object", "properties": {}}
TOOL_PARAMETERS: dict[str, dict[str, Any]] = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]},
    "get_time": {"type": "object", "properties": {"tz": {"type": "string"}}},
    "shell": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}


def chat_tools(names: Iterable[str]) -> list[dict[str, Any]]:
    """An OpenAI chat-completions ``tools`` array for these function names."""
    return [{"type": "function", "function": {"name": n, "description": f"The {n} tool.",
                                              "parameters": TOOL_PARAMETERS.get(n, _OBJECT)}}
            for n in names]


def responses_tools(names: Iterable[str]) -> list[dict[str, Any]]:
    """The same tools in the Responses API shape."""
    return [{"type": "function", "name": n, "description": f"The {n} tool.",
             "parameters": TOOL_PARAMETERS.get(n, _OBJECT)} for n in names]


@dataclass(frozen=True)
class Case:
    """One scripted model output and the contract's OpenAI view of it."""

    id: str
    title: str
    script: str
    tools: tuple[str, ...] = ()
    request: Mapping[str, Any] = field(default_factory=dict)  # e.g. tool_choice, max_tokens
    extra_body: Mapping[str, Any] = field(default_factory=dict)  # vLLM sampling extras
    reasoning: str | None = None
    content: str | None = None
    calls: tuple[tuple[str, str], ...] = ()  # (name, arguments)
    finish_reason: str = "stop"
    responses: bool = False  # also run it through the Responses API
    # The Responses output items, written by hand where they are not one item per kind:
    # one item per Harmony message, as openai-harmony's parser gives for the same tokens.
    items: tuple[tuple[str, ...], ...] | None = None
    # vLLM 0.32's chat serving (not the parser) reports this finish_reason when not
    # streaming; 0.33 reports the parser's (FIXED_FINISH_REASON).
    nonstream_finish_by_vllm: str | None = None

    def expected(self) -> dict[str, Any]:
        """The chat outcome the contract asks for (same streamed and not)."""
        return {"reasoning": self.reasoning, "content": self.content,
                "tool_calls": [list(c) for c in self.calls],
                "finish_reason": self.finish_reason}

    def expected_items(self) -> list[list[str]]:
        """The Responses output items the contract asks for, in order."""
        if self.items is not None:
            return [list(item) for item in self.items]
        items: list[list[str]] = []
        if self.reasoning is not None:
            items.append(["reasoning", self.reasoning])
        if self.content is not None:
            items.append(["message", self.content])
        items.extend(["function_call", name, args] for name, args in self.calls)
        return items


W = ("get_weather",)
CALL_W = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
PARIS = '{"city":"Paris"}'
OSLO = '{"city":"Oslo"}'
THINK = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
# With ignore_eos the engine does not stop at <|call|>; <|return|> (forced after the
# script) stops it, so text after a first <|call|> reaches the parser.
PAST_CALL = {"ignore_eos": True, "stop_token_ids": [RETURN_ID]}

CASES: list[Case] = [
    Case("reasoning_final", "reasoning + final answer",
         "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
         "<|message|>Hi!<|return|>", reasoning="Think.", content="Hi!", responses=True),
    Case("call_role_commentary", "call, recipient in the role section, commentary",
         " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
         + PARIS + "<|call|>", tools=W, calls=(("get_weather", PARIS),),
         finish_reason="tool_calls", responses=True),
    Case("call_channel_commentary", "call, recipient after the channel, commentary",
         THINK + CALL_W + PARIS + "<|call|>", tools=W, reasoning="Need the weather.",
         calls=(("get_weather", PARIS),), finish_reason="tool_calls", responses=True),
    Case("call_role_analysis", "call, recipient in the role section, analysis",
         " to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>" + OSLO
         + "<|call|>", tools=W, calls=(("get_weather", OSLO),), finish_reason="tool_calls"),
    Case("call_channel_analysis", "call, recipient after the channel, analysis",
         "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>" + OSLO
         + "<|call|>", tools=W, calls=(("get_weather", OSLO),), finish_reason="tool_calls",
         responses=True),
    Case("preamble_call", "preamble (commentary, no recipient) + call",
         "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
         "<|channel|>commentary<|message|>Checking now.<|end|><|start|>assistant" + CALL_W
         + PARIS + "<|call|>", tools=W, reasoning="Need weather.", content="Checking now.",
         calls=(("get_weather", PARIS),), finish_reason="tool_calls", responses=True),
    Case("trailing_junk", "malformed: junk after the JSON arguments (stray `]`)",
         CALL_W + PARIS + "]<|call|>", tools=W, calls=(("get_weather", PARIS),),
         finish_reason="tool_calls", responses=True),
    Case("builtin_undeclared", "malformed: undeclared builtin `to=browser.search`",
         "<|channel|>analysis<|message|>Search it.<|end|><|start|>assistant"
         '<|channel|>analysis to=browser.search code<|message|>{"query":"weather"}<|call|>',
         tools=W, reasoning="Search it.", responses=True),
    Case("header_end_no_message", "malformed: header closed by <|end|> without <|message|>",
         "<|channel|>analysis<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
         content="Hi"),
    Case("final_no_message", "malformed: `<|channel|>final Text<|end|>`",
         "<|channel|>final The answer is 4.<|end|>", content="The answer is 4."),
    Case("forged_user", "malformed: forged `<|start|>user` turn",
         "<|channel|>final<|message|>Answer.<|end|><|start|>user<|message|>Thanks! More?"
         "<|end|><|start|>assistant<|channel|>final<|message|>More.<|return|>",
         content="Answer."),
    Case("no_markup", "malformed: no Harmony markup at all",
         "Hello there, no markup here.", content="Hello there, no markup here."),
    Case("missing_start", "malformed: no <|start|>assistant between messages",
         "<|channel|>analysis<|message|>Think.<|end|><|channel|>final<|message|>Hi!<|return|>",
         reasoning="Think.", content="Hi!"),
    Case("shelljson", "malformed: `to=functions.shelljson`, `shell` declared",
         '<|channel|>commentary to=functions.shelljson<|message|>{"cmd":"ls"}<|call|>',
         tools=("shell",), calls=(("shell", '{"cmd":"ls"}'),), finish_reason="tool_calls"),
    Case("unknown_channel", "malformed: unknown channel `comment`",
         "<|channel|>comment<|message|>Hmm, tricky.<|end|><|start|>assistant<|channel|>final"
         "<|message|>Ok.<|return|>", reasoning="Hmm, tricky.", content="Ok."),
    Case("after_call", "malformed: prose after <|call|>, then a second call (ignore_eos)",
         CALL_W + PARIS + "<|call|>Some prose.<|start|>assistant<|channel|>commentary"
         ' to=functions.get_time <|constrain|>json<|message|>{"tz":"CET"}<|call|>',
         tools=("get_weather", "get_time"), extra_body=PAST_CALL,
         calls=(("get_weather", PARIS), ("get_time", '{"tz":"CET"}')),
         finish_reason="tool_calls"),
    # Message boundaries: one Responses item per Harmony message (openai-harmony's parser
    # gives two reasoning messages here, two assistant messages and one call).
    Case("two_analyses_preamble_final_call", "two analysis messages, a preamble, a final "
         "answer and a call",
         "<|channel|>analysis<|message|>First.<|end|><|start|>assistant<|channel|>analysis"
         "<|message|> Second.<|end|><|start|>assistant<|channel|>commentary<|message|>"
         "Checking.<|end|><|start|>assistant<|channel|>final<|message|>Sunny, I expect."
         "<|end|><|start|>assistant" + CALL_W + PARIS + "<|call|>", tools=W,
         reasoning="First. Second.", content="Checking.\nSunny, I expect.",
         calls=(("get_weather", PARIS),), finish_reason="tool_calls", responses=True,
         items=(("reasoning", "First."), ("reasoning", " Second."), ("message", "Checking."),
                ("message", "Sunny, I expect."), ("function_call", "get_weather", PARIS))),
    Case("two_finals", "two final messages: two message items",
         "<|channel|>final<|message|>One.<|end|><|start|>assistant<|channel|>final"
         "<|message|> Two.<|return|>", content="One. Two.", responses=True,
         items=(("message", "One."), ("message", " Two."))),
    # Unknown channel names count as analysis (vLLM's Responses code knows three channels).
    Case("unknown_channel_first", "an unknown channel name, first message",
         "<|channel|>comment<|message|>hello<|end|><|start|>assistant<|channel|>final"
         "<|message|>Hi<|return|>", reasoning="hello", content="Hi", responses=True),
    Case("unknown_channel_middle", "an unknown channel name between messages",
         "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>foo<|message|> b"
         "<|end|><|start|>assistant<|channel|>final<|message|>c<|return|>", reasoning="a b",
         content="c", responses=True,
         items=(("reasoning", "a"), ("reasoning", " b"), ("message", "c"))),
    Case("unknown_channel_last", "an unknown channel name, last message",
         "<|channel|>final<|message|>Hi<|end|><|start|>assistant<|channel|>Ω<|message|>"
         "tail<|return|>", reasoning="tail", content="Hi", responses=True,
         items=(("message", "Hi"), ("reasoning", "tail"))),
    # Contract version 3.
    Case("first_header_garbage", "v3: the first message's header, closed by <|end|>",
         "We must refuse: this is disallowed.<|end|><|start|>assistant<|channel|>analysis"
         "<|message|>Refuse.<|end|><|start|>assistant<|channel|>final<|message|>Sorry, I "
         "can't help.<|return|>", reasoning="Refuse.", content="Sorry, I can't help.",
         responses=True),
    Case("final_constrain_without_message", "v3: `final` + stray <|constrain|>, no message",
         "<|channel|>final<|constrain|>The answer.<|return|>", content="The answer.",
         responses=True),
    Case("repeated_start", "v3: a repeated <|start|> counts once",
         "<|channel|>analysis<|message|>Think.<|end|><|start|><|start|>assistant"
         + CALL_W + PARIS + "<|call|>", tools=W, reasoning="Think.",
         calls=(("get_weather", PARIS),), finish_reason="tool_calls", responses=True),
    Case("stray_markers_in_body", "v3: <|message|> and <|constrain|> inside a body",
         "<|channel|>final<|message|>The <|message|>answer<|constrain|> is 4.<|return|>",
         content="The answer is 4.", responses=True),
    Case("no_channel", "v3: a message with no channel is content",
         "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|message|>Hello."
         "<|return|>", reasoning="Hm.", content="Hello.", responses=True),
    # 12 header tokens, then {" city ":" : cut inside the arguments.
    # Contract version 2: what gpt-oss writes in the field.
    Case("role_slot_channel", "v2: a channel name in the role slot (`<|start|>final`)",
         "<|channel|>analysis<|message|>Think.<|end|><|start|>final<|message|>Hi!<|return|>",
         reasoning="Think.", content="Hi!", responses=True),
    Case("forged_turn_no_start", "v2: forged `user` turn without <|start|>",
         "<|channel|>final<|message|>Answer.<|end|>user<|channel|>final<|message|>forged<|end|>",
         tools=W, content="Answer."),
    Case("forged_tool_turn", "v2: forged tool result without <|start|>",
         "<|channel|>final<|message|>Answer.<|end|>functions.get_weather to=assistant"
         '<|channel|>commentary<|message|>{"temp":1}<|end|>', tools=W, content="Answer."),
    Case("free_text", "v2: free text between messages is content",
         "<|channel|>final<|message|>Part one.<|end|>Removing it now.<|start|>assistant"
         "<|channel|>final<|message|> Done.<|return|>",
         content="Part one.Removing it now. Done.", responses=True,
         items=(("message", "Part one."), ("message", "Removing it now."),
                ("message", " Done."))),
    Case("header_words_between", "v2: only header words between messages: dropped",
         "<|channel|>final<|message|>A.<|end|>assistant final<|start|>assistant"
         "<|channel|>final<|message|>B.<|return|>", content="A.B."),
    Case("empty_recipient", "v2: `to=` with no name: no call, not content",
         "<|channel|>commentary to= <|constrain|>json<|message|>" + PARIS + "<|call|>",
         tools=W),
    Case("content_type_recipient", "v2: `<|channel|>final <|constrain|>functions.NAME`",
         "<|channel|>final <|constrain|>functions.get_weather<|message|>" + PARIS + "<|call|>",
         tools=W, calls=(("get_weather", PARIS),), finish_reason="tool_calls",
         responses=True),
    Case("spaced_name", "v2: a declared name with a space (`Web Search`)",
         '<|channel|>commentary to=functions.Web Search <|constrain|>json<|message|>{"q":"x"}'
         "<|call|>", tools=("Web Search",), calls=(("Web Search", '{"q":"x"}'),),
         finish_reason="tool_calls"),
    Case("unicode_whitespace", "v2: U+202F and U+00A0 in the header",
         "<|channel|>commentary\u202fto=functions.get_weather\u00a0<|constrain|>json<|message|>"
         + PARIS + "<|call|>", tools=W, calls=(("get_weather", PARIS),),
         finish_reason="tool_calls"),
    Case("schema_mismatch", "v2: arguments that break the schema pass unchanged",
         CALL_W + '{"town":"Paris"}<|call|>', tools=W, calls=(("get_weather", '{"town":"Paris"}'),),
         finish_reason="tool_calls"),
    Case("truncated_args", "max_tokens cuts the arguments",
         CALL_W + PARIS + "<|call|>", tools=W, request={"max_tokens": 15},
         calls=(("get_weather", '{"city":"'),), finish_reason="length",
         nonstream_finish_by_vllm="tool_calls"),
    Case("tool_choice_none", "tool_choice none: the model calls anyway",
         THINK + CALL_W + PARIS + "<|call|>", tools=W, request={"tool_choice": "none"},
         reasoning="Need the weather."),
    # vLLM's structural tag for tool_choice required/named stays on; these scripts obey it.
    Case("tool_choice_required", "tool_choice required",
         THINK + CALL_W + PARIS + "<|call|>", tools=W, request={"tool_choice": "required"},
         reasoning="Need the weather.", calls=(("get_weather", PARIS),),
         finish_reason="tool_calls"),
    # OpenAI (and vLLM's serving) report "stop" for a named tool_choice.
    Case("tool_choice_named", "tool_choice named (get_weather)",
         CALL_W + PARIS + "<|call|>", tools=W,
         request={"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
         calls=(("get_weather", PARIS),)),
]
CASES_BY_ID = {c.id: c for c in CASES}
RESPONSES_CASES = [c for c in CASES if c.responses]


@functools.cache
def _encoding() -> Any:
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding()


def body_tokens(text: str | None) -> int:
    """How many o200k_harmony tokens a message body of this text has (0 for None)."""
    return len(_encoding().encode(text, disallowed_special=())) if text else 0


# ---------------------------------------------------------------------------- requests

def chat_kwargs(case: Case, *, stream: bool, **extra_body: Any) -> dict[str, Any]:
    """Keyword arguments of ``client.chat.completions.create`` for this case."""
    kwargs: dict[str, Any] = {
        "model": MODEL, "messages": MESSAGES, "stream": stream,
        "extra_body": {"vllm_xargs": {"script_text": case.script}, **case.extra_body,
                       **extra_body},
        **case.request,
    }
    if case.tools:
        kwargs["tools"] = chat_tools(case.tools)
    return kwargs


def _text(value: str | None) -> str | None:
    return value or None  # "" and None both mean "nothing" to a client


@dataclass
class ChatRun:
    """One chat request's outcome (id-free, comparable) and what else was observed."""

    outcome: dict[str, Any]
    reasoning_tokens: int | None = None  # usage, non-streaming only
    call_ids: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # malformed chunks
    max_tokens_per_chunk: int = 0  # with return_token_ids


def _error(e: Exception) -> dict[str, Any]:
    status = getattr(e, "status_code", None)
    if status is not None:
        return {"error": f"HTTP {status}"}
    return {"error": f"stream error ({type(e).__name__}: {str(e)[:60]})"}


def _message_outcome(response: Any) -> ChatRun:
    choice = response.choices[0]
    message = choice.message
    calls = message.tool_calls or []
    details = response.usage.completion_tokens_details if response.usage else None
    outcome = {
        "reasoning": _text(getattr(message, "reasoning", None)),
        "content": _text(message.content),
        "tool_calls": [[c.function.name, c.function.arguments] for c in calls],
        "finish_reason": choice.finish_reason,
    }
    return ChatRun(outcome, getattr(details, "reasoning_tokens", None),
                   [c.id for c in calls])


class ChunkFolder:
    """Folds ``chat.completion.chunk``s into one message, as a client does, noting what is out
    of shape in ``run.problems`` (the deltas' shape by
    :class:`~harmony_ext_testing.client.Fold`)."""

    def __init__(self) -> None:
        self.fold = Fold()
        self.finish: str | None = None
        self.run = ChatRun({})

    def add(self, chunk: Any) -> None:
        for choice in chunk.choices:
            if self.finish is not None:
                self.run.problems.append("chunk after finish_reason")
            self.fold.add(choice.delta.model_dump() if choice.delta is not None else None)
            ids = getattr(choice, "token_ids", None)
            if ids is None and choice.model_extra:
                ids = choice.model_extra.get("token_ids")
            self.run.max_tokens_per_chunk = max(self.run.max_tokens_per_chunk, len(ids or ()))
            self.finish = choice.finish_reason or self.finish

    def result(self) -> ChatRun:
        message = self.fold.message()
        self.run.problems.extend(self.fold.problems)
        calls = message["tool_calls"]
        self.run.outcome = {
            "reasoning": message["reasoning"],
            "content": message["content"],
            "tool_calls": [[c["function"]["name"] or "", c["function"]["arguments"]]
                           for c in calls],
            "finish_reason": self.finish,
        }
        self.run.call_ids = [c["id"] or "" for c in calls]
        return self.run


def run_chat(client: Any, case: Case, *, stream: bool, **extra_body: Any) -> ChatRun:
    """Send the case's chat request (sync ``openai.OpenAI``); HTTP errors become outcomes."""
    import openai

    try:
        response = client.chat.completions.create(**chat_kwargs(case, stream=stream,
                                                                **extra_body))
        if not stream:
            return _message_outcome(response)
        folder = ChunkFolder()
        for chunk in response:
            folder.add(chunk)
        return folder.result()
    except openai.APIError as e:
        return ChatRun(_error(e))


async def arun_chat_stream(client: Any, case: Case, **extra_body: Any) -> ChatRun:
    """The streaming request with ``openai.AsyncOpenAI``."""
    import openai

    try:
        response = await client.chat.completions.create(**chat_kwargs(case, stream=True,
                                                                      **extra_body))
        folder = ChunkFolder()
        async for chunk in response:
            folder.add(chunk)
        return folder.result()
    except openai.APIError as e:
        return ChatRun(_error(e))


# ---------------------------------------------------------------------- Responses API

def responses_kwargs(case: Case, *, stream: bool) -> dict[str, Any]:
    """Keyword arguments of ``client.responses.create`` for this case."""
    kwargs: dict[str, Any] = {
        "model": MODEL, "input": MESSAGES[0]["content"], "stream": stream,
        "extra_body": {"vllm_xargs": {"script_text": case.script}},
    }
    if case.tools:
        kwargs["tools"] = responses_tools(case.tools)
    return kwargs


def item_view(item: Any) -> list[str]:
    """A Responses output item without ids: [type, text] or [function_call, name, args]."""
    data = item if isinstance(item, dict) else item.model_dump()
    kind = data["type"]
    if kind == "function_call":
        return [kind, data["name"], data["arguments"]]
    if kind in ("reasoning", "message"):
        return [kind, "".join(part.get("text") or "" for part in data.get("content") or [])]
    return [kind, json.dumps({k: v for k, v in data.items() if k != "id"}, sort_keys=True)]


def _statuses(items: Sequence[Any]) -> list[str]:
    out = []
    for item in items:
        data = item if isinstance(item, dict) else item.model_dump()
        if data["type"] in ("message", "function_call"):
            out.append(f"{data['type']}:{data.get('status')}")
    return out


@dataclass
class ResponsesRun:
    """One Responses request: its final items (id-free) and stream checks."""

    outcome: dict[str, Any]  # {"items": [...], "statuses": [...]} or {"error": ...}
    deltas: list[list[str]] = field(default_factory=list)  # streamed deltas per item, folded
    done_items: list[list[str]] = field(default_factory=list)  # output_item.done, in order


def run_responses(client: Any, case: Case, *, stream: bool) -> ResponsesRun:
    """Send the case through ``client.responses.create``; HTTP errors become outcomes."""
    import openai

    try:
        response = client.responses.create(**responses_kwargs(case, stream=stream))
        if not stream:
            return ResponsesRun({"items": [item_view(i) for i in response.output],
                                 "statuses": _statuses(response.output)})
        by_index: dict[int, list[str]] = {}
        done: list[list[str]] = []
        final: Any = None
        for event in response:
            kind = event.type
            if kind == "response.output_item.added":
                item = event.item.model_dump()
                head = [item["type"], item["name"]] if item["type"] == "function_call" else [
                    item["type"]]
                by_index[event.output_index] = [*head, ""]
            elif kind in ("response.reasoning_text.delta", "response.output_text.delta",
                          "response.function_call_arguments.delta"):
                by_index[event.output_index][-1] += event.delta
            elif kind == "response.output_item.done":
                done.append(item_view(event.item))
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
        if final is None:
            return ResponsesRun({"error": "stream ended without a final response"})
        return ResponsesRun({"items": [item_view(i) for i in final.output],
                             "statuses": _statuses(final.output)},
                            [by_index[i] for i in sorted(by_index)], done)
    except openai.APIError as e:
        return ResponsesRun(_error(e))


def responses_as_chat(outcome: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses outcome in the chat shape, for the comparison verdicts."""
    if "error" in outcome:
        return dict(outcome)
    items = outcome["items"]
    texts = {k: "".join(i[1] for i in items if i[0] == k) or None
             for k in ("reasoning", "message")}
    view = {"reasoning": texts["reasoning"], "content": texts["message"],
            "tool_calls": [i[1:] for i in items if i[0] == "function_call"],
            "finish_reason": None, "statuses": outcome["statuses"]}
    other = [i[0] for i in items if i[0] not in ("reasoning", "message", "function_call")]
    if other:  # e.g. a web_search_call item
        view["other_items"] = other
    return view


# ---------------------------------------------------------- checks (pytest asserts)
# Test modules call ``pytest.register_assert_rewrite`` on this module for readable diffs.

FIXED_FINISH_REASON = (0, 33)
"""The first vLLM whose non-streamed chat keeps finish_reason 'length' for a cut call."""


def server_version(base_url: str) -> str:
    """The version a running vLLM server reports (``GET /version``)."""
    with urllib.request.urlopen(f"{base_url}/version", timeout=10) as response:
        return str(json.load(response)["version"])


def finish_reason_bug(vllm_version: str) -> bool:
    """True for the vLLM versions whose chat serving overrides a cut call's 'length'."""
    major, minor = (int(x) for x in vllm_version.split(".")[:2])
    return (major, minor) < FIXED_FINISH_REASON


def expected_nonstream(case: Case, vllm_version: str) -> dict[str, Any]:
    """The non-streamed chat outcome: the contract's, with vLLM serving's finish_reason."""
    expected = case.expected()
    if case.nonstream_finish_by_vllm and finish_reason_bug(vllm_version):
        expected["finish_reason"] = case.nonstream_finish_by_vllm
    return expected


def _check_ids(run: ChatRun, n_calls: int) -> None:
    assert len(run.call_ids) == n_calls
    assert all(run.call_ids) and len(set(run.call_ids)) == n_calls, run.call_ids


def check_chat(case: Case, whole: ChatRun, streamed: ChatRun, vllm_version: str) -> None:
    """harmony-ext's chat results are the contract's, and the streamed deltas add up."""
    assert whole.outcome == expected_nonstream(case, vllm_version)
    assert streamed.outcome == case.expected()
    assert streamed.problems == []
    # The streamed deltas concatenated equal the non-streamed message.
    assert {**streamed.outcome, "finish_reason": None} == {**whole.outcome,
                                                          "finish_reason": None}
    assert leaked_markers(whole.outcome) == []
    _check_ids(whole, len(case.calls))
    _check_ids(streamed, len(case.calls))
    # usage: the reasoning tokens are the tokens of the reasoning bodies.
    assert whole.reasoning_tokens == body_tokens(case.reasoning)


def check_stream_interval(case: Case, run: ChatRun) -> None:
    """A stream with several tokens per delta gives the same result."""
    assert run.outcome == case.expected()
    assert run.problems == []
    assert run.max_tokens_per_chunk > 1  # the deltas really carried several tokens


def check_responses(case: Case, whole: ResponsesRun, streamed: ResponsesRun) -> None:
    """Responses API items are the contract's; streamed deltas and done items add up."""
    expected = case.expected_items()
    statuses = [f"{i[0]}:completed" for i in expected if i[0] != "reasoning"]
    assert whole.outcome == {"items": expected, "statuses": statuses}
    assert streamed.outcome == whole.outcome
    assert streamed.deltas == expected
    assert streamed.done_items == expected


def run_concurrent(base_url: str, cases: Sequence[Case], **extra_body: Any) -> list[ChatRun]:
    """Stream all cases at once (``openai.AsyncOpenAI``); one run per case, in order."""
    import asyncio

    import openai

    async def main() -> list[ChatRun]:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="unused",
                                    max_retries=0, timeout=300)
        async with client:
            return list(await asyncio.gather(
                *(arun_chat_stream(client, c, **extra_body) for c in cases)))

    return asyncio.run(main())


def check_concurrent(cases: Sequence[Case], runs: Sequence[ChatRun]) -> None:
    """Every concurrent stream got exactly its own case's result."""
    wrong = {i: (c.id, r.outcome, r.problems)
             for i, (c, r) in enumerate(zip(cases, runs, strict=True))
             if r.outcome != c.expected() or r.problems}
    assert wrong == {}
    ids = [i for r in runs for i in r.call_ids]
    assert len(ids) == len(set(ids))


# ------------------------------------------------------------------------- comparison

def leaked_markers(outcome: Mapping[str, Any]) -> list[str]:
    """Control-token spellings that reached reasoning, content or arguments."""
    texts = [outcome.get("reasoning") or "", outcome.get("content") or ""]
    texts += [args for _, args in outcome.get("tool_calls") or []]
    return [s for s in CONTROL_SPELLINGS if any(s in t for t in texts)]


def _text_tags(name: str, ours: str | None, theirs: str | None) -> list[str]:
    a, b = ours or "", theirs or ""
    if a == b:
        return []
    if a.replace("\n", "") == b.replace("\n", ""):
        return [f"differs: {name} joined with a newline"]
    if a in b:
        return [f"leaks: {name}"]
    if b in a:
        return [f"drops: {name}"]
    return [f"leaks: {name}", f"drops: {name}"]


def _call_tags(ours: list[list[str]], theirs: list[list[str]]) -> list[str]:
    tags = []
    if len(theirs) > len(ours):
        tags.append("leaks: tool call")
    if len(theirs) < len(ours):
        tags.append("drops: tool call")
    for (name_a, args_a), (name_b, args_b) in zip(ours, theirs, strict=False):
        if name_a != name_b:
            tags.append("differs: tool name")
        elif args_a == args_b:
            continue
        elif same_json(args_a, args_b):
            tags.append("differs: arguments re-serialised")
        elif args_a in args_b:
            tags.append("leaks: arguments")
        elif args_b in args_a:
            tags.append("drops: arguments")
        else:
            tags.append("differs: arguments")
    return tags


def difference_tags(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """How ``theirs`` differs from ``ours`` (two chat-shaped outcomes)."""
    tags = []
    if set(leaked_markers(theirs)) - set(leaked_markers(ours)):
        tags.append("leaks: control tokens")
    tags += _text_tags("reasoning", ours.get("reasoning"), theirs.get("reasoning"))
    tags += _text_tags("content", ours.get("content"), theirs.get("content"))
    tags += _call_tags(ours.get("tool_calls") or [], theirs.get("tool_calls") or [])
    if ours.get("finish_reason") != theirs.get("finish_reason"):
        tags.append("differs: finish_reason")
    if ours.get("statuses") != theirs.get("statuses"):
        tags.append("differs: item status")
    extra = [i for i in theirs.get("other_items", []) if i not in ours.get("other_items", [])]
    tags += [f"leaks: {kind} item" for kind in extra]
    return tags


MODES = ("nonstream", "stream")


def verdict(ours: Mapping[str, Mapping[str, Any]], theirs: Mapping[str, Mapping[str, Any]]
            ) -> str:
    """One table verdict: same / built-in leaks / drops / errors (HTTP status) / differs.

    ``ours`` and ``theirs`` map each mode (``nonstream``, ``stream``) to a chat-shaped
    outcome of harmony-ext and of vLLM's built-in parser for the same case.
    """
    errors = sorted({o["error"] for o in theirs.values() if "error" in o})
    if errors:
        return "built-in errors (" + ", ".join(errors) + ")"
    if any("error" in o for o in ours.values()):
        return "harmony-ext errors"
    if all(ours[m] == theirs[m] for m in MODES):
        return "same"
    per_mode = {m: difference_tags(ours[m], theirs[m]) for m in MODES}
    if theirs["nonstream"] != theirs["stream"] and ours["nonstream"] == ours["stream"]:
        per_mode["nonstream"].append("differs: streamed ≠ non-streamed")
        per_mode["stream"].append("differs: streamed ≠ non-streamed")
    grouped: dict[str, list[str]] = {}
    for tag in dict.fromkeys(per_mode["nonstream"] + per_mode["stream"]):
        kind, what = tag.split(": ", 1)
        modes = [m for m in MODES if tag in per_mode[m]]
        if len(modes) == 1:
            what += " (streamed)" if modes[0] == "stream" else " (non-streamed)"
        grouped.setdefault(kind, []).append(what)
    labels = {"leaks": "built-in leaks", "drops": "built-in drops", "differs": "differs"}
    return "; ".join(f"{labels[k]}: {', '.join(v)}" for k, v in grouped.items())


def render(outcome: Mapping[str, Any]) -> str:
    """A short one-line description of an outcome (markdown-safe)."""
    if "error" in outcome:
        return f"error: {outcome['error']}"
    parts = []
    if outcome.get("reasoning") is not None:
        parts.append("reasoning " + json.dumps(outcome["reasoning"], ensure_ascii=False))
    if outcome.get("content") is not None:
        parts.append("content " + json.dumps(outcome["content"], ensure_ascii=False))
    for name, args in outcome.get("tool_calls") or []:
        parts.append(f"call {name} {json.dumps(args, ensure_ascii=False)}")
    if outcome.get("finish_reason") is not None:
        parts.append(f"finish {outcome['finish_reason']}")
    if outcome.get("statuses"):
        parts.append("status " + ",".join(s.split(":")[1] for s in outcome["statuses"]))
    parts += [f"item {kind}" for kind in outcome.get("other_items", [])]
    return "; ".join(parts) or "(nothing)"


def render_modes(modes: Mapping[str, Mapping[str, Any]]) -> str:
    """Both modes in one table cell (once when they agree)."""
    if modes["nonstream"] == modes["stream"]:
        return _cell(render(modes["nonstream"]))
    return _cell(f"non-streamed: {render(modes['nonstream'])}<br>"
                 f"streamed: {render(modes['stream'])}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
