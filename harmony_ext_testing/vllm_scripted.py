"""Force a real vLLM to emit a scripted token sequence (end-to-end tests only).

A tiny random-weight model emits noise, so the e2e tests drive it with a logits processor of
this module, of the interface the vLLM's model runner loads: :class:`ScriptedOutputProcessor`
(vLLM's V2 interface: 0.34, whose runner is the V2 one, and any vLLM on its V2 runner) or
:class:`ScriptedOutputProcessorV1` (the V1 interface: 0.32 and 0.33, whose CPU runner is the V1
one; 0.34 removed it). Both replay the same scripts. It is loaded only when named on the
command line, as ``scripts/vllm_tiny_server.sh`` does for the installed vLLM
(harmony_ext_testing/vllm_runner.py chooses)::

    --logits-processors harmony_ext_testing.vllm_scripted:ScriptedOutputProcessor

It is not part of the wheel (``harmony_ext_testing`` is not installed): the test servers
find it on their path (scripts/vllm_tiny_server.sh), and no installation loads it unasked.

A request opts in through ``vllm_xargs`` (vLLM's ``SamplingParams.extra_args``):

- ``{"script_text": "<|channel|>final<|message|>Hi!<|return|>"}``: Harmony text with
  the markers spelled literally; tokenized in the worker by the tokenizer vLLM
  loaded, so the spellings become the special tokens.
- ``{"script_ids": "[200005, 17196, 200008, ...]"}``: token ids, as a JSON array in a
  string or as a plain list (``vllm_xargs`` accepts both).
- ``{"script_echo_prompt": N}``: the prompt the engine was given, read back: a final answer
  whose text is the last N prompt token ids (every one for 0), space-separated. The
  Responses API returns no prompt ids; this is how a test reads the prompt vLLM rendered.
- ``{"script_texts_by_calls": '["...", "..."]'}`` (a JSON array of Harmony texts in a
  string): one script per turn of an agent's conversation: a request takes the script indexed
  by the number of ``<|call|>`` ids in its prompt (the calls the conversation made so far; the
  last script past the end). An agent's loop (call, tool result, answer) runs unchanged.
- ``{"script_ids_by_seed": '{"SEED": [ids], ...}'}`` (a JSON object in a string: ``vllm_xargs``
  holds no objects): one script per choice of ``n > 1``: vLLM gives choice ``i`` of a request
  with ``seed`` S the seed S + i, and each choice takes the script of its seed.

The output is exactly the script: at step ``i`` every logit but the one of
``script[i]`` is set to ``-inf``. ``max_tokens`` still truncates it.

What happens after the script: a real gpt-oss model ends a turn with a stop token,
``<|return|>`` after a final answer or ``<|call|>`` after a tool call (both are in
the model's eos list, so the engine stops and strips them from the text but keeps
them in ``token_ids``). A script that ends with such a stop token therefore stops
by itself. A script that ends anywhere else (mid-body, after ``<|end|>``) gets
``<|return|>`` forced next, so the request always terminates with finish_reason
``stop``, as if the model closed its answer there. To test truncation, set
``max_tokens`` to the script length instead (finish_reason ``length``, nothing
appended). With ``ignore_eos`` the processor keeps forcing ``<|return|>`` until
``max_tokens``.

A malformed script is rejected before it reaches the engine, by ``validate_params``
(run per request in the API server), which vLLM turns into HTTP 400. Requests
without a script get no per-request state and are never touched.

Every process that loads it logs once where harmony-ext's packages were imported from, so
a test can check that a server runs the installed wheel and not the checkout.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from vllm.exceptions import VLLMValidationError

try:  # the V2 model runner's interface: every vLLM from 0.32 to 0.34, the only one 0.34 has
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor
except ImportError:
    LogitsProcessor = None
try:  # the V1 model runner's interface: vLLM 0.32 and 0.33 (0.34 removed it with that runner)
    from vllm.v1.sample.logits_processor import AdapterLogitsProcessor
except ImportError:
    AdapterLogitsProcessor = None

import harmony_plugins
import vllm_ext
from harmony_ext_testing import LOADED_FROM
from harmony_plugins.harmony import SPECIAL_IDS, VOCAB_SIZE

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.sampling_params import SamplingParams
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext, LogitsProcRequestState

__all__ = ["SCRIPT_BY_CALLS_KEY", "SCRIPT_BY_SEED_KEY", "SCRIPT_ECHO_KEY", "SCRIPT_IDS_KEY",
           "SCRIPT_TEXT_KEY", "Script", "ScriptedOutputProcessor", "ScriptedOutputProcessorV1",
           "echoed_ids", "read_script"]

logger = logging.getLogger("vllm.harmony_ext_testing")  # vLLM's handler prints it
logger.info("%s %s %s", LOADED_FROM, vllm_ext.__file__, harmony_plugins.__file__)

SCRIPT_TEXT_KEY = "script_text"
SCRIPT_IDS_KEY = "script_ids"
SCRIPT_ECHO_KEY = "script_echo_prompt"
SCRIPT_BY_SEED_KEY = "script_ids_by_seed"
SCRIPT_BY_CALLS_KEY = "script_texts_by_calls"
CALL_ID = SPECIAL_IDS["<|call|>"]
ECHO_OPEN, ECHO_CLOSE = "<|channel|>final<|message|>", "<|return|>"

# o200k_harmony: the model vocabulary of gpt-oss (and of our tiny test models).
RETURN_ID = SPECIAL_IDS["<|return|>"]  # what a model emits to close a final answer


@dataclass(frozen=True)
class Script:
    """One request's script: exactly one of ``ids``, ``text`` or ``echo`` is set."""

    ids: tuple[int, ...] | None = None
    text: str | None = None
    echo: int | None = None
    """Read the prompt back: its last ``echo`` ids (all for 0)."""
    turns: tuple[str, ...] | None = None
    """One text per turn of a conversation, chosen by the prompt's ``<|call|>`` count."""


def echo_text(prompt_ids: list[int], last: int) -> str:
    """What a ``script_echo_prompt`` request answers: the ids as text, in a final answer."""
    ids = prompt_ids[-last:] if last else prompt_ids
    return ECHO_OPEN + " ".join(map(str, ids)) + ECHO_CLOSE


def echoed_ids(answer: str) -> list[int]:
    """The prompt ids an echo request's answer text holds."""
    return [int(word) for word in answer.split()]


def _reject(message: str, value: Any = None) -> VLLMValidationError:
    return VLLMValidationError(f"scripted output: {message}", parameter="vllm_xargs", value=value)


def _read_ids(raw: Any, vocab_size: int) -> tuple[int, ...]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise _reject(f"{SCRIPT_IDS_KEY} is not valid JSON ({e})", raw) from None
    if not isinstance(raw, list):
        raise _reject(f"{SCRIPT_IDS_KEY} must be a JSON array of token ids", raw)
    if not raw:
        raise _reject(f"{SCRIPT_IDS_KEY} is empty", raw)
    for item in raw:
        # bool is an int subclass and 3.0 is not a token id: both are mistakes.
        if type(item) is not int:
            raise _reject(f"{SCRIPT_IDS_KEY} holds a non-integer: {item!r}", raw)
        if not 0 <= item < vocab_size:
            raise _reject(f"{SCRIPT_IDS_KEY} holds {item}, outside [0, {vocab_size})", raw)
    return tuple(raw)


def _read_turns(raw: Any) -> tuple[str, ...]:
    """The texts of ``script_texts_by_calls``: a non-empty JSON array of non-empty strings."""
    try:
        turns = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        raise _reject(f"{SCRIPT_BY_CALLS_KEY} is not valid JSON ({e})", raw) from None
    if (not isinstance(turns, list) or not turns
            or not all(isinstance(t, str) and t for t in turns)):
        raise _reject(f"{SCRIPT_BY_CALLS_KEY} must be an array of Harmony texts", raw)
    return tuple(turns)


def _read_seeded(by_seed: Any, vocab_size: int, seed: int | None) -> tuple[int, ...]:
    """The script of ``seed`` (any one while it is not known) of ``script_ids_by_seed``."""
    if isinstance(by_seed, str):
        try:
            by_seed = json.loads(by_seed)
        except ValueError as e:
            raise _reject(f"{SCRIPT_BY_SEED_KEY} is not valid JSON ({e})", by_seed) from None
    if not isinstance(by_seed, Mapping) or not by_seed:
        raise _reject(f"{SCRIPT_BY_SEED_KEY} must map seeds to scripts", by_seed)
    scripts = {str(k): _read_ids(v, vocab_size) for k, v in by_seed.items()}
    if seed is None:
        return next(iter(scripts.values()))
    if str(seed) not in scripts:
        raise _reject(f"{SCRIPT_BY_SEED_KEY} has no script for seed {seed}", by_seed)
    return scripts[str(seed)]


def read_script(
    extra_args: Mapping[str, Any] | None, vocab_size: int = VOCAB_SIZE, seed: int | None = None
) -> Script | None:
    """Return the request's script (for ``script_ids_by_seed``, the one of ``seed``; any one
    when the seed is not known yet), None when it has none.

    Raises VLLMValidationError (which vLLM's error handling maps to HTTP 400) when
    the script is malformed, so a bad test request fails loudly instead of silently
    generating noise or crashing the engine.
    """
    if not extra_args:
        return None
    given = [key for key in _READERS if key in extra_args]
    if not given:
        return None
    if len(given) > 1:
        raise _reject(f"give one of {', '.join(_READERS)}")
    key = given[0]
    return _READERS[key](extra_args[key], vocab_size, seed)


def _read_echo(last: Any, vocab_size: int, seed: int | None) -> Script:
    if type(last) is not int or last < 0:
        raise _reject(f"{SCRIPT_ECHO_KEY} must be a count of ids (0: all)", last)
    return Script(echo=last)


def _read_text(text: Any, vocab_size: int, seed: int | None) -> Script:
    if not isinstance(text, str):
        raise _reject(f"{SCRIPT_TEXT_KEY} must be a string", text)
    if not text:
        raise _reject(f"{SCRIPT_TEXT_KEY} is empty", text)
    return Script(text=text)


_READERS = {
    SCRIPT_TEXT_KEY: _read_text,
    SCRIPT_IDS_KEY: lambda raw, size, seed: Script(ids=_read_ids(raw, size)),
    SCRIPT_ECHO_KEY: _read_echo,
    SCRIPT_BY_SEED_KEY: lambda raw, size, seed: Script(ids=_read_seeded(raw, size, seed)),
    SCRIPT_BY_CALLS_KEY: lambda raw, size, seed: Script(turns=_read_turns(raw)),
}
"""Each ``vllm_xargs`` key a script may be given by, and its reader."""


class _ForcedTokens:
    """Per-request processor: allow only the next scripted token, then ``end_id``."""

    __slots__ = ("ids", "end_id")

    def __init__(self, ids: tuple[int, ...], end_id: int) -> None:
        self.ids = ids
        self.end_id = end_id

    def __call__(self, output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
        # The position is the length of the running output list (its last entry may
        # still be an async-scheduling placeholder, but the length is exact).
        step = len(output_ids)
        token = self.ids[step] if step < len(self.ids) else self.end_id
        logits.fill_(-math.inf)
        logits[token] = 0.0
        return logits


class _EchoPrompt:
    """Per-request processor: the prompt's ids read back as text (see ``script_echo_prompt``);
    the forced ids are built from the prompt on the first step."""

    __slots__ = ("encode", "forced", "last")

    def __init__(self, encode: Any, last: int) -> None:
        self.encode = encode
        self.last = last
        self.forced: _ForcedTokens | None = None

    def __call__(self, prompt_ids: list[int], output_ids: list[int],
                 logits: torch.Tensor) -> torch.Tensor:
        if self.forced is None:
            ids = tuple(self.encode(echo_text(list(prompt_ids), self.last)))
            self.forced = _ForcedTokens(ids, ids[-1])
        return self.forced(output_ids, logits)


class _ByCalls:
    """Per-request processor: the script of this turn of a conversation (see
    ``script_texts_by_calls``), chosen from the prompt on the first step."""

    __slots__ = ("encode", "forced", "turns")

    def __init__(self, encode: Any, turns: tuple[str, ...]) -> None:
        self.encode = encode
        self.turns = turns
        self.forced: _ForcedTokens | None = None

    def __call__(self, prompt_ids: list[int], output_ids: list[int],
                 logits: torch.Tensor) -> torch.Tensor:
        if self.forced is None:
            made = sum(1 for token in prompt_ids if token == CALL_ID)
            ids = tuple(self.encode(self.turns[min(made, len(self.turns) - 1)]))
            self.forced = _ForcedTokens(ids, RETURN_ID)
        return self.forced(output_ids, logits)


class _Scripts:
    """What the processors of both interfaces share: each request's forcing state, built from
    its sampling parameters with the tokenizer vLLM loaded."""

    _model_config: Any
    _vocab_size: int
    _tokenizer: Any

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Reject malformed scripts at admission (API server process) with HTTP 400."""
        read_script(sampling_params.extra_args)

    def _setup(self, vllm_config: VllmConfig) -> None:
        self._model_config = vllm_config.model_config
        self._vocab_size = vllm_config.model_config.get_vocab_size()
        self._tokenizer = None

    def _encode(self, text: str) -> list[int]:
        # The tokenizer vLLM loaded for this model (cached per process): its added
        # special tokens match the literal marker spellings in the script text.
        if self._tokenizer is None:
            from vllm.tokenizers import cached_tokenizer_from_config

            self._tokenizer = cached_tokenizer_from_config(self._model_config)
            if self._tokenizer is None:
                raise RuntimeError("the model was started with skip_tokenizer_init")
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def new_req_logits_processor(self, params: SamplingParams
                                 ) -> _ForcedTokens | _EchoPrompt | _ByCalls | None:
        """Build the request's forcing state; None (untouched) without a script.

        Never raises: an error here would take the engine down for every request.
        validate_params already rejected malformed scripts, so failures here are
        only environment problems; they are logged and the request runs unforced.
        """
        try:
            script = read_script(params.extra_args, self._vocab_size, params.seed)
            if script is None:
                return None
            if script.echo is not None:
                return _EchoPrompt(self._encode, script.echo)
            if script.turns is not None:
                return _ByCalls(self._encode, script.turns)
            ids = script.ids if script.ids is not None else tuple(self._encode(script.text or ""))
            if not ids or not all(0 <= i < self._vocab_size for i in ids):
                raise ValueError(f"script tokenized to unusable ids {ids[:8]}...")
        except Exception:
            logger.exception("scripted output: ignoring the script of one request")
            return None
        end_id = RETURN_ID if self._vocab_size > RETURN_ID else ids[-1]
        return _ForcedTokens(ids, end_id)


if LogitsProcessor is not None:  # on every vLLM harmony-ext supports

    class ScriptedOutputProcessor(_Scripts, LogitsProcessor):
        """vLLM's V2 custom logits processor that replays ``vllm_xargs`` scripts (tests only):
        the interface of vLLM's V2 model runner (``vllm.v1.worker.gpu.sample.
        logits_processor``, in every vLLM from 0.32 to 0.34), the only one 0.34 has.

        State is kept per request slot (``add_request`` replaces a slot's whole state: slots
        are reused). A row's output position is told by its input position: the row at ``pos``
        samples the output token ``pos + 1 - prompt_len``, whatever the batch's order or a
        speculative step.
        """

        def __init__(self, vllm_config: VllmConfig, req_states: LogitsProcRequestState) -> None:
            self._setup(vllm_config)
            self._states = req_states
            self._forcing: dict[int, _ForcedTokens | _EchoPrompt | _ByCalls] = {}

        def add_request(self, req_idx: int, sampling_params: SamplingParams) -> bool:
            """The slot's forcing state; False (logits untouched) for a request without one."""
            state = self.new_req_logits_processor(sampling_params)
            if state is None:
                self._forcing.pop(req_idx, None)
                return False
            self._forcing[req_idx] = state
            return True

        def apply(self, logits: torch.Tensor, ctx: LogitsContext) -> torch.Tensor:
            """Each scripted row allows its next token alone."""
            if not self._forcing:
                return logits
            all_ids = self._states.all_token_ids.gpu
            rows = zip(ctx.expanded_idx_mapping.tolist(), ctx.pos.tolist(), strict=True)
            for row, (slot, pos) in enumerate(rows):
                state = self._forcing.get(slot)
                if state is None:
                    continue
                prompt_len = int(self._states.prompt_len.np[slot])
                output = all_ids[slot, prompt_len:pos + 1]  # its length is the output position
                if isinstance(state, _ForcedTokens):
                    state(output, logits[row])
                else:
                    state(all_ids[slot, :prompt_len].tolist(), output, logits[row])
            return logits


if AdapterLogitsProcessor is not None:  # not on vLLM 0.34

    class ScriptedOutputProcessorV1(_Scripts, AdapterLogitsProcessor):
        """vLLM's V1 logits processor that replays ``vllm_xargs`` scripts (tests only): the
        interface of vLLM's V1 model runner, which the CPU runs on vLLM 0.32 and 0.33 (their
        V2 runner requires Triton)."""

        def __init__(self, vllm_config: VllmConfig, device: torch.device,
                     is_pin_memory: bool) -> None:
            super().__init__(vllm_config, device, is_pin_memory)
            self._setup(vllm_config)

        def is_argmax_invariant(self) -> bool:
            """False: forcing a token changes the argmax, so greedy requests need it too."""
            return False
