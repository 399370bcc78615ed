"""Tools and a response schema under one grammar on SGLang (contract section 10).

SGLang builds a chat request's grammar from its ``response_format`` alone when it has one: a
call grammar for strict tools is dropped (``Constrained decoding is not compatible with tool
calls``), a forced ``tool_choice`` is refused (HTTP 400), and the grammar starts where the
reasoning parser says the reasoning ends, so it either masks every call or misses the answer.
With harmony-ext's reasoning parser, a request with a JSON response format (``json_schema``,
``json_object``) gets the core's grammar instead (:func:`harmony_plugins.answer_or_call`, an
xgrammar structural tag, which SGLang compiles as its own ``structural_tag``), applied from
the first token (:func:`from_first_token`): analysis and preambles free, then one call to a
declared function (arguments held to the schema of a ``strict`` function, or of every
function under ``SGLANG_TOOL_STRICT_LEVEL`` 2) or the final answer in any of its header
spellings, its body held to the schema. ``tool_choice`` none: the answer only; required or
named: calls only.

Two hooks (AROUND, through ``HookRegistry``):

* ``ChatCompletionRequest.to_sampling_params``: the chat request's grammar, built from its
  tools, ``tool_choice`` and schema (:func:`hold_chat_grammar`);
* ``TokenizerManager._create_tokenized_object``, where SGLang turns every generation request
  into the scheduler's: a request whose grammar harmony-ext built is applied from the first
  token; a native one (``/generate``, which has no tools) whose ``json_schema`` follows a
  prompt that opens the assistant's message gets the grammar of an answer alone
  (:func:`hold_native_grammar`). The first hook returns the sampling parameters of a request
  whose JSON schema SGLang's OpenAI serving built as :class:`OurGrammar` or
  :class:`SGLangsGrammar` (SGLang's own, left as it is), dicts of their own type, so that this
  hook tells them apart; the scheduler gets SGLang's sampling parameters built from their
  items, nothing of harmony-ext's. (SGLang builds a chat request's parameters off its event
  loop, so a context variable would not reach this hook.)

Everything else (a ``structural_tag`` response format, the Responses API, another reasoning
parser) keeps SGLang's own grammar.
"""

from __future__ import annotations

import functools
import json
import pkgutil
from collections.abc import Callable, Sequence
from typing import Any

from harmony_plugins import (
    ToolChoice,
    answer_or_call,
    chat_request_tools,
    harmony,
    held_schemas,
    read_tool_choice,
)

from .hook_arguments import argument, bound, positions
from .names import NAME, selected_parser

CHAT_SAMPLING = "sglang.srt.entrypoints.openai.protocol.ChatCompletionRequest.to_sampling_params"
TOKENIZE = "sglang.srt.managers.tokenizer_manager.TokenizerManager._create_tokenized_object"
IN_GRAMMAR = "sglang.srt.sampling.sampling_params.set_request_reasoning_in_grammar"
JSON_FORMATS = ("json_schema", "json_object")
"""``response_format`` types SGLang turns into a JSON schema."""


class OurGrammar(dict[str, Any]):
    """A chat request's sampling parameters with harmony-ext's grammar, applied from the first
    token."""


class SGLangsGrammar(dict[str, Any]):
    """Sampling parameters whose JSON schema is SGLang's own grammar, left as it is."""


def holds_grammars() -> bool:
    """The server's reasoning parser is harmony-ext: grammar timing is the reasoning parser's
    business in SGLang, and the output is Harmony."""
    return selected_parser("reasoning_parser") == NAME


def hold_chat_grammar(original: Callable[..., Any], self: Any, *args: Any,
                      **kwargs: Any) -> Any:
    """AROUND ``ChatCompletionRequest.to_sampling_params``: a JSON response format and the
    request's tools under the core's grammar; any other request as SGLang builds it (called
    once either way)."""
    if not holds_grammars():
        return original(self, *args, **kwargs)
    ends = _ends(self) if _holds_json(self) else None
    if ends is None:
        return leave_to_sglang(original(self, *args, **kwargs))
    call = bound(CHAT_SAMPLING, (self, *args), kwargs)
    call.arguments["tool_call_constraint"] = None  # ours holds the calls
    params = original(*call.args, **call.kwargs)
    # (No schema where SGLang leaves a format to a renderer that handles it, not gpt-oss's.)
    schema = params.pop("json_schema", None) if isinstance(params, dict) else None
    if not schema:
        return params
    calls, choice = ends
    params["structural_tag"] = json.dumps(answer_or_call(calls, json.loads(schema), choice))
    return OurGrammar(params)


def _holds_json(request: Any) -> bool:
    """A JSON response format (``json_schema``, ``json_object``) that the output holds from the
    start of a new message, under no other constraint of the request's own."""
    return (getattr(getattr(request, "response_format", None), "type", None) in JSON_FORMATS
            and not getattr(request, "continue_final_message", False)  # inside a message
            and not getattr(request, "regex", None) and not getattr(request, "ebnf", None))


def _ends(request: Any) -> tuple[dict[str, Any], ToolChoice] | None:
    """The functions a call of the chat request may name (each with the schema its arguments
    are held to) and its :class:`harmony_plugins.ToolChoice`; None where the choice allows
    neither a call nor the answer (a named function the request does not declare: SGLang's
    own error)."""
    choice = read_tool_choice(getattr(request, "tool_choice", None))
    calls = choice.allowed(held_schemas(chat_request_tools(request),
                                        hold_all=_strict_parameters()))
    return (calls, choice) if calls or choice.answer else None


def hold_native_grammar(original: Callable[..., Any], self: Any, *args: Any,
                        **kwargs: Any) -> Any:
    """AROUND ``TokenizerManager._create_tokenized_object``."""
    if holds_grammars():
        obj = argument(TOKENIZE, "obj", (self, *args), kwargs)
        params = getattr(obj, "sampling_params", None)
        if isinstance(params, OurGrammar | SGLangsGrammar):
            obj.sampling_params = dict(params)  # a plain dict on: no type of ours goes further
            if isinstance(params, OurGrammar) and hasattr(obj, "require_reasoning"):
                from_first_token(obj)
        elif (isinstance(params, dict) and hasattr(obj, "require_reasoning")
              and params.get("json_schema") and opens_message(
                  self.tokenizer, argument(TOKENIZE, "input_ids", (self, *args), kwargs))):
            params = dict(params)
            schema = json.loads(params.pop("json_schema"))
            params["structural_tag"] = json.dumps(answer_or_call({}, schema))
            obj.sampling_params = params
            from_first_token(obj)
    return original(self, *args, **kwargs)


def opens_message(tokenizer: Any, input_ids: Sequence[int] | None) -> bool:
    """The prompt ends where the assistant's next message begins (``<|start|>assistant``),
    so the output is whole messages, what the core's grammar describes; a prompt that ends
    inside a message (an answer already opened) keeps SGLang's grammar."""
    if not input_ids:
        return False
    start = _message_start(tokenizer)
    return list(input_ids[-len(start):]) == start


@functools.lru_cache(maxsize=4)
def _message_start(tokenizer: Any) -> list[int]:
    return list(tokenizer.encode(harmony.NEXT_MESSAGE, add_special_tokens=False))


def from_first_token(obj: Any) -> None:
    """Apply the request's grammar from its first output token: it describes the reasoning
    too. SGLang 0.5.23 has a request flag for that (the reasoning still counted as SGLang
    counts it); on 0.5.22 the request is sent as one without reasoning, which SGLang's
    scheduler constrains from the start (and counts no reasoning tokens of)."""
    if not obj.require_reasoning:
        return
    try:
        flag = pkgutil.resolve_name(IN_GRAMMAR)
    except (ImportError, AttributeError):
        obj.require_reasoning = False
        return
    params = dict(obj.sampling_params)
    flag(params, True)
    obj.sampling_params = params


def _strict_parameters() -> bool:
    """``SGLANG_TOOL_STRICT_LEVEL`` 2 (parameter): SGLang holds every function's arguments to
    its schema, as if each were strict."""
    try:
        from sglang.srt.environ import ToolStrictLevel, envs

        return envs.SGLANG_TOOL_STRICT_LEVEL.get() >= ToolStrictLevel.PARAMETER
    except (ImportError, AttributeError):
        return False


def leave_to_sglang(params: Any) -> Any:
    """A generation's sampling parameters as SGLang built them, their JSON schema (if any)
    SGLang's own grammar, which :func:`hold_native_grammar` then leaves alone."""
    if isinstance(params, dict) and params.get("json_schema"):
        return SGLangsGrammar(params)
    return params


def hook_points() -> list[tuple[str, Callable[..., Any], str]]:
    """(target, hook, kind) of both hooks; both or neither are installed."""
    return [(CHAT_SAMPLING, hold_chat_grammar, "AROUND"),
            (TOKENIZE, hold_native_grammar, "AROUND")]


def problem() -> str | None:
    """Why the hooks cannot work on this SGLang, or None (checked once, at start-up)."""
    for target, needs in ((CHAT_SAMPLING, {"tool_call_constraint"}),
                          (TOKENIZE, {"obj", "input_ids"})):
        try:
            names = positions(target)
        except Exception as e:
            return f"{target} not found ({type(e).__name__}: {e})"
        if not needs <= set(names):
            return f"{target} takes no {' or '.join(sorted(needs))}"
    return None
