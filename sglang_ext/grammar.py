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
  (:func:`hold_native_grammar`). A request SGLang's OpenAI serving builds carries
  :data:`GRAMMAR` in ``custom_params`` (True: ours; False: SGLang's, left as it is), so this
  hook tells them apart.

Everything else (a ``structural_tag`` response format, the Responses API, another reasoning
parser) keeps SGLang's own grammar.
"""

from __future__ import annotations

import functools
import inspect
import json
import pkgutil
from collections.abc import Callable, Sequence
from typing import Any

from harmony_plugins import (
    answer_or_call,
    chat_request_tools,
    harmony,
    held_schemas,
    read_tool_choice,
)

from .hook_arguments import positions
from .names import NAME, selected_parser

CHAT_SAMPLING = "sglang.srt.entrypoints.openai.protocol.ChatCompletionRequest.to_sampling_params"
TOKENIZE = "sglang.srt.managers.tokenizer_manager.TokenizerManager._create_tokenized_object"
IN_GRAMMAR = "sglang.srt.sampling.sampling_params.set_request_reasoning_in_grammar"
GRAMMAR = "harmony_ext_grammar"
"""The ``custom_params`` key saying whose grammar a request carries (True: harmony-ext's)."""
JSON_FORMATS = ("json_schema", "json_object")
"""``response_format`` types SGLang turns into a JSON schema."""


def holds_grammars() -> bool:
    """The server's reasoning parser is harmony-ext: grammar timing is the reasoning parser's
    business in SGLang, and the output is Harmony."""
    return selected_parser("reasoning_parser") == NAME


def hold_chat_grammar(original: Callable[..., Any], self: Any, *args: Any,
                      **kwargs: Any) -> Any:
    """AROUND ``ChatCompletionRequest.to_sampling_params``: a JSON response format and the
    request's tools under the core's grammar; any other request as SGLang builds it."""
    if not holds_grammars():
        return original(self, *args, **kwargs)
    grammar = None
    if (getattr(getattr(self, "response_format", None), "type", None) in JSON_FORMATS
            and not getattr(self, "continue_final_message", False)  # output inside a message
            and not getattr(self, "regex", None) and not getattr(self, "ebnf", None)):
        bound = inspect.signature(original).bind(self, *args, **kwargs)
        bound.arguments["tool_call_constraint"] = None  # ours holds the calls
        params = original(*bound.args, **bound.kwargs)
        schema = params.get("json_schema") if isinstance(params, dict) else None
        grammar = chat_grammar(self, json.loads(schema)) if schema else None
    if grammar is None:
        params = original(self, *args, **kwargs)
        if isinstance(params, dict) and params.get("json_schema"):
            _mark(params, False)
        return params
    del params["json_schema"]
    params["structural_tag"] = json.dumps(grammar)
    _mark(params, True)
    return params


def chat_grammar(request: Any, schema: Any) -> dict[str, Any] | None:
    """The core's grammar for a chat request whose answer ``schema`` holds, or None where it
    allows nothing (a named function the request does not declare: SGLang's own error)."""
    choice = read_tool_choice(getattr(request, "tool_choice", None))
    held = held_schemas(chat_request_tools(request), hold_all=_strict_parameters())
    try:
        return answer_or_call(held, schema, choice)
    except ValueError:  # the choice allows neither a call nor the answer
        return None


def hold_native_grammar(original: Callable[..., Any], self: Any, *args: Any,
                        **kwargs: Any) -> Any:
    """AROUND ``TokenizerManager._create_tokenized_object``."""
    if holds_grammars():
        bound = inspect.signature(original).bind(self, *args, **kwargs)
        obj = bound.arguments.get("obj")
        params = getattr(obj, "sampling_params", None)
        if isinstance(params, dict) and hasattr(obj, "require_reasoning"):
            mine = (params.get("custom_params") or {}).get(GRAMMAR)
            if (mine is None and params.get("json_schema")
                    and opens_message(self.tokenizer, bound.arguments.get("input_ids"))):
                params = dict(params)
                schema = json.loads(params.pop("json_schema"))
                params["structural_tag"] = json.dumps(answer_or_call({}, schema))
                _mark(params, True)
                obj.sampling_params = params
                mine = True
            if mine is True:
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


def _mark(params: dict[str, Any], ours: bool) -> None:
    params["custom_params"] = {**(params.get("custom_params") or {}), GRAMMAR: ours}


def _strict_parameters() -> bool:
    """``SGLANG_TOOL_STRICT_LEVEL`` 2 (parameter): SGLang holds every function's arguments to
    its schema, as if each were strict."""
    try:
        from sglang.srt.environ import ToolStrictLevel, envs

        return envs.SGLANG_TOOL_STRICT_LEVEL.get() >= ToolStrictLevel.PARAMETER
    except (ImportError, AttributeError):
        return False


def leave_to_sglang(params: dict[str, Any]) -> None:
    """Mark a generation's sampling parameters as SGLang's own grammar (the Responses API's),
    which :func:`hold_native_grammar` then leaves alone."""
    if params.get("json_schema"):
        _mark(params, False)


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
