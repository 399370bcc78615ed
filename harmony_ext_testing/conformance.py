"""canitoolcall's gpt-oss fixtures through harmony-ext, as each engine runs its parsers.

canitoolcall (a test dependency, pinned: :data:`PINNED`) is the field's neutral conformance
suite: recorded gpt-oss outputs, each with the parse it expects, replayed in every chunking of
its own (:data:`canitoolcall.chunking.DEFAULT_STRATEGIES`) and judged by its own checks. This
module replays them through the real parser path of each tier, one ``Replay`` per engine, every
one built from the token ids each fixture records and the offline o200k tokenizer
(:mod:`harmony_ext_testing.hf_tokenizer`):

* the core (:class:`CoreReplay`): :func:`harmony_plugins.parse_ids` whole, a
  :class:`harmony_plugins.Turn` fed each group of ids for a stream, its steps as OpenAI deltas;
* vLLM (:class:`VllmReplay`): the parser class vLLM's ``ParserManager.get_parser`` composes for
  the parser names, a ``ChatCompletionRequest`` with the fixture's tools that the parser's
  ``adjust_request`` adjusted (as vLLM's renderer does), text from vLLM's own
  ``IncrementalDetokenizer``, then ``parse`` (whole) or ``parse_delta`` per group, called as
  vLLM's chat serving calls them (the fixture's ids alone, no stop id after them, as
  canitoolcall's own vLLM adapter replays them; so the core's);
* SGLang (:class:`SglangReplay`): text from SGLang's own ``DetokenizerManager`` (its
  incremental decoding and stop trim, with the stop token the output ended at), handed to
  SGLang's real ``OpenAIServingChat`` over a real ``TokenizerManager``
  (:mod:`harmony_ext_testing.sglang_serving`, only the model scripted), so its
  ``ReasoningParser`` and ``FunctionCallParser`` run as its server chains them.

Streamed deltas are folded by canitoolcall's own accumulator (as an OpenAI client folds them).
A parse is judged by canitoolcall's ``assert_conforms`` (the expected parse, no leaked marker,
arguments as a JSON object the tool's schema accepts, parallel order) and every stream by
``assert_equivalent`` against the parse of the whole output (:func:`problems`); the page
(``pages/conformance.py``) counts canitoolcall's case status (:func:`status`).

Where the contract decides a fixture's expectation otherwise, the fixture is named in
:data:`DECIDED` with the section that decides it, and :data:`CONTRACT_ANSWERS` holds what the
contract has a parse give for it (written by hand from ``docs/contract.md``), which the tests
hold harmony-ext to instead. Engines are imported when a replay is built, never with the
module (the page generator imports it in the core's venv).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harmony_ext_testing.hf_tokenizer import HF_ADDED_TOKEN_IDS, write_hf_tokenizer

PINNED = "0.1.1"
"""The canitoolcall release the tests pin (pyproject.toml's ``test`` extra and the engine
venvs' set-up scripts install it; :func:`check_pinned` holds the installed one to it)."""
FAMILY = "gpt-oss"
NAME = "harmony-ext"
ENGINES = ("core", "vllm", "sglang")
BUILTIN = {"vllm": ("openai", "openai_gptoss"), "sglang": ("gpt-oss", "gpt-oss")}
"""Each engine's own gpt-oss parsers: (tool parser, reasoning parser), as ``--tool-call-parser``
and ``--reasoning-parser`` name them (vLLM composes its ``HarmonyParser`` for both)."""
SPECIAL_IDS = frozenset(HF_ADDED_TOKEN_IDS)
"""The ids the tokenizer declares special: where the ``special`` chunking splits."""
USER_MESSAGE = "Use the tools to answer."
"""The one user turn of every replayed request (a fixture records no conversation)."""


@dataclass(frozen=True)
class Decided:
    """A fixture whose expectation the contract decides otherwise, on ``engines``."""

    section: int
    why: str
    engines: frozenset[str] = frozenset(ENGINES)

    @property
    def reason(self) -> str:
        """The strict expected failure's reason, naming the section."""
        return f"contract section {self.section}: {self.why}"


DECIDED: dict[str, Decided] = {
    "gpt-oss/vllm-call-then-final": Decided(
        2, "after <|call|> the turn is over: the final message written after the call is "
        "dropped (after_call), where the fixture expects it as content"),
    "gpt-oss/harmony-truncated-in-arguments": Decided(
        5, "a call cut by max_tokens still comes out, with the raw arguments it had and "
        "finish_reason length, streamed as not; the fixture expects no call"),
    "gpt-oss/harmony-marker-in-arguments": Decided(
        3, "SGLang hands its parsers text, where a marker spelled with ordinary tokens reads as "
        "the marker: the <|call|> written inside the arguments ends the call",
        frozenset({"sglang"})),
    "gpt-oss/harmony-marker-in-reasoning": Decided(
        3, "SGLang hands its parsers text, where a marker spelled with ordinary tokens reads as "
        "the marker: the <|call|> written inside the analysis ends it",
        frozenset({"sglang"})),
}
"""Fixture id -> the section of docs/contract.md that decides it otherwise, and where."""

# What the contract has the parse give for each decided fixture (reasoning, content, calls as
# (name, raw arguments)), read off its section by hand from the fixture's raw output.
CONTRACT_ANSWERS: dict[str, tuple[str | None, str | None, tuple[tuple[str, str], ...]]] = {
    # Section 2: the analysis, the call; "Done" on final after <|call|> is dropped.
    "gpt-oss/vllm-call-then-final": (
        "Reasoning about query...", None, (("search", '{"query": "vllm"}'),)),
    # Section 5: the call as far as it got, its raw arguments unchanged.
    "gpt-oss/harmony-truncated-in-arguments": (
        "The user asks for the weather in Paris. I should call get_weather.", None,
        (("get_weather", '{"city": "Paris", "unit'),)),
    # Section 3, text mode: the arguments end at the written <|call|>; the prose after it is
    # dropped (section 2, after_call), and the written <|return|> ends the turn.
    "gpt-oss/harmony-marker-in-arguments": (
        "Write the Harmony cheat sheet to a file.", None,
        (("write_file", '{"path": "harmony.md", "content": "A call ends with '),)),
    # Section 3, text mode: the analysis ends at the written <|call|>; the final header written
    # after it ends at <|end|> without <|message|> and, after a call, is dropped (sections 2
    # and 3); the call to get_time after it is kept.
    "gpt-oss/harmony-marker-in-reasoning": (
        "I must not write ", None, (("get_time", "{}"),)),
}


def check_pinned() -> str:
    """The installed canitoolcall's version; AssertionError unless it is :data:`PINNED`."""
    import canitoolcall

    assert canitoolcall.__version__ == PINNED, (
        f"canitoolcall {canitoolcall.__version__} is installed, the tests pin {PINNED}")
    return canitoolcall.__version__


def fixtures() -> list[Any]:
    """canitoolcall's gpt-oss fixtures, as its release ships them (in its order)."""
    from canitoolcall.fixtures import load_fixtures

    return load_fixtures(families=[FAMILY])


def decided(fixture_id: str, engine: str) -> Decided | None:
    """How the contract decides ``fixture_id`` on ``engine``, or None (canitoolcall's
    expectation holds)."""
    found = DECIDED.get(fixture_id)
    return found if found is not None and engine in found.engines else None


def model_folder(folder: Path) -> Path:
    """A gpt_oss model folder in ``folder`` (a ``config.json`` and the offline o200k tokenizer,
    no weights), as both engines load a tokenizer from it."""
    from harmony_ext_testing.sglang_serving import write_model_dir

    model = folder / "gpt_oss"
    model.mkdir()
    return write_model_dir(model, write_hf_tokenizer(folder / "o200k_hf"))


def cases(engine: str) -> list[Any]:
    """Every fixture as a pytest parameter (its id canitoolcall's), those the contract decides
    otherwise on ``engine`` marked as strict expected failures whose reason names the
    section (an ``AssertionError`` of canitoolcall's, nothing else)."""
    import pytest

    out = []
    for fixture in fixtures():
        found = decided(fixture.id, engine)
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=found.reason)
                 ] if found else []
        out.append(pytest.param(fixture, id=fixture.id, marks=marks))
    return out


def decided_ids(engine: str) -> list[str]:
    """The fixtures the contract decides otherwise on ``engine``."""
    return [fixture_id for fixture_id in DECIDED if decided(fixture_id, engine)]


def finish_of(fixture: Any) -> str:
    """``length`` for an output cut by ``max_tokens`` (canitoolcall's ``truncated`` tag), else
    ``stop``."""
    return "length" if fixture.truncated else "stop"


def tools_of(fixture: Any) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(tool)) for tool in fixture.tools]


def result(reasoning: str | None, content: str | None,
           calls: Iterable[tuple[str, str | None]], exception: str | None = None) -> Any:
    """A canitoolcall ``ParseResult`` (empty text as None, as its checks compare)."""
    from canitoolcall.results import ParsedToolCall, ParseResult

    return ParseResult(content=content or None, reasoning_content=reasoning or None,
                       tool_calls=tuple(ParsedToolCall(name, args) for name, args in calls),
                       exception=exception)


def of_message(message: Mapping[str, Any]) -> Any:
    """A chat message (OpenAI's shape; ``reasoning`` or ``reasoning_content``) as a result."""
    return result(message.get("reasoning_content") or message.get("reasoning"),
                  message.get("content"),
                  [(c["function"]["name"], c["function"]["arguments"])
                   for c in message.get("tool_calls") or []])


def failed(error: BaseException) -> Any:
    """A parser that raised: an outcome canitoolcall judges (it fails every check)."""
    return result(None, None, (), f"{type(error).__name__}: {error}")


class CoreReplay:
    """The core alone: :func:`harmony_plugins.parse_ids`, and a turn fed group by group."""

    engine = "core"
    version = "harmony-ext"

    def parse(self, fixture: Any) -> Any:
        from harmony_plugins import parse_ids

        message = parse_ids(list(fixture.output_token_ids), tools_of(fixture),
                            finish_of(fixture))
        return of_message(message)

    def stream(self, fixture: Any, groups: Sequence[Sequence[int]]) -> Any:
        from canitoolcall.results import StreamAccumulator

        from harmony_plugins import ChatResult, Request, Turn

        turn, folded, fold = Turn(Request(tools_of(fixture))), ChatResult(), StreamAccumulator()
        steps = [turn.feed_ids(list(group)) for group in groups]
        for step in [*steps, turn.close(finish_of(fixture))]:
            delta = folded.add(step)
            if delta is not None:
                fold.add_openai_delta(delta)
        return fold.result()

    def close(self) -> None:
        pass


class VllmReplay:
    """vLLM's parser path for ``tool_parser`` / ``reasoning_parser`` (harmony-ext's names, or
    vLLM's own, :data:`BUILTIN`), over the offline tokenizer of the gpt_oss folder ``model``
    (:func:`model_folder`)."""

    engine = "vllm"

    def __init__(self, model: Path, tool_parser: str = NAME,
                 reasoning_parser: str = NAME) -> None:
        import vllm
        from vllm.parser.parser_manager import ParserManager
        from vllm.tokenizers import get_tokenizer

        if NAME in (tool_parser, reasoning_parser):
            from vllm_ext import plugin

            plugin.register()  # as vLLM's plugin loader does in its API server
        self.version = vllm.__version__
        self.tokenizer = get_tokenizer(str(model))
        self.parser_cls = ParserManager.get_parser(
            tool_parser_name=tool_parser, reasoning_parser_name=reasoning_parser,
            enable_auto_tools=True, model_name="gpt-oss", is_harmony=True,
            tokenizer=self.tokenizer)

    def _request(self, fixture: Any, stream: bool) -> Any:
        """The client's request, adjusted by the parser as vLLM's renderer adjusts it."""
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

        request = ChatCompletionRequest(
            model="gpt-oss", messages=[{"role": "user", "content": USER_MESSAGE}],
            stream=stream, tools=tools_of(fixture), tool_choice="auto")
        self.parser_cls(self.tokenizer, request.tools, model_config=None).adjust_request(
            request=request)
        return request

    def _texts(self, request: Any, prompt: list[int],
               groups: Sequence[Sequence[int]]) -> list[str]:
        """Each group's text as vLLM's ``IncrementalDetokenizer`` gives it (its output
        processor's use: the request's sampling parameters, the prompt before)."""
        from vllm.v1.engine import EngineCoreRequest
        from vllm.v1.engine.detokenizer import IncrementalDetokenizer

        params = request.to_sampling_params(4096, {})
        engine_request = EngineCoreRequest(
            request_id="conformance", prompt_token_ids=prompt, mm_features=None,
            sampling_params=params, pooling_params=None, arrival_time=0.0, lora_request=None,
            cache_salt=None, data_parallel_rank=None)
        detokenizer = IncrementalDetokenizer.from_new_request(self.tokenizer, engine_request)
        texts = []
        for i, group in enumerate(groups):
            detokenizer.update(list(group), False)
            texts.append(detokenizer.get_next_output_text(i == len(groups) - 1, True))
        return texts

    @staticmethod
    def _prompt(request: Any) -> list[int]:
        """The prompt's ids (harmony-ext's rendering, which vLLM serves with harmony-ext
        selected); they end ``<|start|>assistant`` as vLLM's own do, and only set where the
        detokenizer starts."""
        from harmony_plugins import chat_prompt_ids

        return chat_prompt_ids(request.model_dump(exclude_none=True))

    def parse(self, fixture: Any) -> Any:
        ids = list(fixture.output_token_ids)
        try:
            request = self._request(fixture, stream=False)
            (text,) = self._texts(request, self._prompt(request), [ids])
            parser = self.parser_cls(self.tokenizer, request.tools, model_config=None)
            reasoning, content, calls = parser.parse(
                text, request, enable_auto_tools=True, model_output_token_ids=ids)
        except Exception as e:
            return failed(e)
        return result(reasoning, content, [(c.name, c.arguments) for c in calls or []])

    def stream(self, fixture: Any, groups: Sequence[Sequence[int]]) -> Any:
        from canitoolcall.results import StreamAccumulator

        fold = StreamAccumulator()
        try:
            request = self._request(fixture, stream=True)
            prompt = self._prompt(request)
            parser = self.parser_cls(self.tokenizer, request.tools, model_config=None)
            texts = self._texts(request, prompt, groups)
            for i, (text, group) in enumerate(zip(texts, groups, strict=True)):
                delta = parser.parse_delta(text, list(group), request, prompt_token_ids=prompt,
                                           finished=i == len(groups) - 1)
                if delta is not None:
                    fold.add_openai_delta(delta.model_dump(exclude_none=True))
        except Exception as e:
            return fold.result(exception=f"{type(e).__name__}: {e}")
        return fold.result()

    def close(self) -> None:
        pass


class SglangReplay:
    """SGLang's detokenizer and chat serving with ``parser`` as tool and reasoning parser
    (``harmony-ext``, or SGLang's own ``gpt-oss``), over the gpt_oss folder ``model``
    (:func:`model_folder`). SGLang's plugins must be loaded (every SGLang process loads them)."""

    engine = "sglang"

    def __init__(self, model: Path, parser: str = NAME) -> None:
        import sglang
        from sglang.srt.managers.detokenizer_manager import DetokenizerManager
        from sglang.srt.runtime_context import publish
        from sglang.srt.server_args import PortArgs, ServerArgs

        from harmony_ext_testing.sglang_serving import shared_server

        self.version = sglang.__version__
        self.parser = parser
        args = ServerArgs(model_path=str(model), tool_call_parser=parser,
                          reasoning_parser=parser, device="cpu")
        publish(args, role="detokenizer")
        self._ports = PortArgs.init_new(args)
        self.detokenizer = DetokenizerManager(args, self._ports)  # as its process builds it
        self.server = shared_server(model)
        self._replays = 0
        self._tail = self.detokenizer.tokenizer.encode("<|end|><|start|>assistant",
                                                       add_special_tokens=False)

    def _finish(self, fixture: Any) -> dict[str, Any]:
        """The scheduler's finish reason: ``length`` for a cut output, else the stop token it
        ended at (canitoolcall's rule: ``<|call|>`` after a header with a recipient)."""
        from canitoolcall.adapters.sglang import harmony_stop_token

        if fixture.truncated:
            return {"type": "length", "length": len(fixture.output_token_ids)}
        stop = harmony_stop_token(fixture.raw_output)
        return {"type": "stop", "matched": self.detokenizer.tokenizer.convert_tokens_to_ids(stop)}

    def _texts(self, fixture: Any, groups: Sequence[Sequence[int]]) -> list[str]:
        """Each scheduler step's text as SGLang's detokenizer hands it on: the prompt's last
        tokens first (its surrogate prefix), each step's new ids, the stop id on the last
        (trimmed or kept as for the selected parser)."""
        import msgspec
        from sglang.srt.managers.io_struct import BatchTokenIDOutput

        self._replays += 1
        rid = f"conformance-{self._replays}"
        finish = self._finish(fixture)
        steps = [list(group) for group in groups]
        if finish["type"] == "stop":
            steps[-1].append(finish["matched"])
        texts = []
        for i, step in enumerate(steps):
            last = i == len(steps) - 1
            known = {"rids": [rid], "finished_reasons": [finish if last else None],
                     "decoded_texts": [""], "read_offsets": [len(self._tail)],
                     "decode_ids": [[*self._tail, *step] if i == 0 else step],
                     "output_ids": [step], "skip_special_tokens": [False],
                     "spaces_between_special_tokens": [True], "no_stop_trim": [False]}
            absent = {f.name: None for f in msgspec.structs.fields(BatchTokenIDOutput)
                      if f.required and f.name not in known}
            texts += self.detokenizer._decode_batch_token_id_output(
                BatchTokenIDOutput(**known, **absent))
        self.detokenizer.decode_status.pop(rid, None)
        return texts

    def _chat(self, fixture: Any, texts: list[str], stream: bool) -> Any:
        from harmony_ext_testing.sglang_serving import HARMONY_TEST_TEMPLATE

        body = {"model": "gpt-oss", "messages": [{"role": "user", "content": USER_MESSAGE}],
                "tools": tools_of(fixture)}
        return self.server.chat(texts, stream=stream, template=HARMONY_TEST_TEMPLATE,
                                tool_parser=self.parser, reasoning_parser=self.parser,
                                finish=self._finish(fixture), send_raw=True, body=body)

    def parse(self, fixture: Any) -> Any:
        texts = self._texts(fixture, [list(fixture.output_token_ids)])
        body = self._chat(fixture, texts, stream=False).body
        if "choices" not in body:
            return result(None, None, (), f"HTTPError: {json.dumps(body)[:200]}")
        return of_message(body["choices"][0]["message"])

    def stream(self, fixture: Any, groups: Sequence[Sequence[int]]) -> Any:
        from canitoolcall.results import StreamAccumulator

        fold = StreamAccumulator()
        for chunk in self._chat(fixture, self._texts(fixture, groups), stream=True).chunks:
            for choice in chunk.get("choices") or ():
                fold.add_openai_delta(choice.get("delta") or {})
        return fold.result()

    def close(self) -> None:
        for name in ("recv_from_scheduler", "send_to_tokenizer"):
            if hasattr(self.detokenizer, name):
                getattr(self.detokenizer, name).close(linger=0)
        for name, address in vars(self._ports).items():  # the files PortArgs named
            if name.endswith("ipc_name") and str(address).startswith("ipc://"):
                Path(address.removeprefix("ipc://")).unlink(missing_ok=True)


def observe(replay: Any, fixture: Any) -> tuple[Any, dict[str, Any]]:
    """The parse of the whole output and one per canitoolcall chunking strategy (by id)."""
    from canitoolcall.chunking import DEFAULT_STRATEGIES, split

    ids = list(fixture.output_token_ids)
    streams = {strategy.id: replay.stream(fixture, split(ids, strategy, SPECIAL_IDS))
               for strategy in DEFAULT_STRATEGIES}
    return replay.parse(fixture), streams


def against_contract(replay: Any, fixture_id: str) -> tuple[Any, dict[str, Any], Any]:
    """A fixture the contract decides otherwise: its parse, whole and per chunking strategy
    (:func:`observe`), and the parse the contract gives it (:data:`CONTRACT_ANSWERS`)."""
    fixture = next(f for f in fixtures() if f.id == fixture_id)
    return (*observe(replay, fixture), result(*CONTRACT_ANSWERS[fixture_id]))


def problems(fixture: Any, whole: Any, streams: Mapping[str, Any]) -> list[str]:
    """canitoolcall's verdict, its pytest plugin's assertions: what ``assert_conforms`` finds
    wrong with the parse of the whole output and with every stream, and what
    ``assert_equivalent`` finds between each stream and the whole (so the streams equal each
    other: split invariance), each message naming the parse; empty when all conform."""
    from canitoolcall.pytest_plugin import assert_conforms, assert_equivalent

    found = []
    checks = [("whole", lambda: assert_conforms(fixture, whole))]
    for strategy, got in streams.items():
        label = f"streamed, chunked {strategy!r}"
        checks += [(label, lambda got=got: assert_conforms(fixture, got)),
                   (f"{label}, against the whole", lambda got=got: assert_equivalent(whole, got))]
    for label, check in checks:
        try:
            check()
        except AssertionError as e:
            found.append(f"{label}: {e}")
    return found


def status(fixture: Any, whole: Any, streams: Mapping[str, Any]) -> str:
    """canitoolcall's case status (``pass``, ``soft_pass``, ``fail``, ``error``), as its
    runner derives it from every check of every parse."""
    from canitoolcall import checks
    from canitoolcall.pytest_plugin import family_for
    from canitoolcall.results import Observation

    rows = checks.run_checks(fixture, family_for(fixture), Observation(whole, dict(streams)))
    return checks.case_status(rows).value


def replay_for(engine: str, folder: Path, parser: str = NAME) -> Any:
    """The replay of ``engine`` (:data:`ENGINES`) with ``parser`` (``harmony-ext`` or the
    engine's own, :data:`BUILTIN`), its model folder written into ``folder``."""
    if engine == "core":
        return CoreReplay()
    if engine == "vllm":
        tool, reasoning = (NAME, NAME) if parser == NAME else BUILTIN["vllm"]
        return VllmReplay(model_folder(folder), tool, reasoning)
    if engine == "sglang":
        from sglang.srt.plugins import load_plugins

        load_plugins()
        return SglangReplay(model_folder(folder), NAME if parser == NAME else BUILTIN["sglang"][0])
    raise ValueError(f"unknown engine {engine!r}: one of {ENGINES}")


def main(argv: list[str] | None = None) -> int:
    """``python -m harmony_ext_testing.conformance ENGINE [builtin]``: every fixture's case
    status through harmony-ext (or the engine's own parsers), as one JSON object on standard
    output: ``{"engine", "version", "canitoolcall", "parser", "statuses": {id: status}}``.
    Writes nothing but into a temporary folder (the tokenizer, the model folder)."""
    args = sys.argv[1:] if argv is None else argv
    engine = args[0]
    builtin = args[1:] == ["builtin"]
    with tempfile.TemporaryDirectory(prefix="harmony-ext-conformance-") as folder:
        replay = replay_for(engine, Path(folder), "builtin" if builtin else NAME)
        try:
            statuses = {f.id: status(f, *observe(replay, f)) for f in fixtures()}
        finally:
            replay.close()
    parser = " / ".join(BUILTIN[engine]) if builtin else NAME
    print(json.dumps({"engine": engine, "version": replay.version,
                      "canitoolcall": check_pinned(), "parser": parser,
                      "statuses": statuses}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
