"""What harmony-ext does to the generation on vLLM (contract section 10), on vLLM's own classes:
Harmony's stop ids and the guard's mark on every request vLLM adjusts with harmony-ext's parser
(chat and Responses; a request with ``ignore_eos`` left alone), and the scheduler's own
``check_stop`` and ``_update_request_with_output`` (the loop that appends a step's tokens and
drops those after a stop), wrapped by the plugin, ending a marked request's generation at a
forged turn: one token a step, and speculative steps of 8. Expected ids written from the
contract's table (section 1: ``<|start|>`` 200006, ``<|return|>`` 200002, ``<|call|>``
200012); where each generation ends, by hand from sections 2 and 10."""

from __future__ import annotations

import types

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(the vLLM tiers run these)")

from vllm import SamplingParams  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402
from vllm.v1.core.sched import scheduler  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer  # noqa: E402
from harmony_plugins import Guard  # noqa: E402
from harmony_plugins.adapter_support import hooks  # noqa: E402
from harmony_plugins.vocab.o200k import tiktoken_encoding  # noqa: E402
from vllm_ext import guard, plugin  # noqa: E402

RETURN, CALL, START = 200002, 200012, 200006
ENCODING = tiktoken_encoding()


def ids(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(write_hf_tokenizer(tmp_path_factory.mktemp("t"))))


@pytest.fixture(scope="module", autouse=True)
def registered():
    """The plugin as a server that selects harmony-ext has it (pytest's own command line
    selects nothing, so the scheduler's hook is installed as the plugin would there)."""
    plugin.register()
    plugin.install_or_warn(guard)


def parser(tokenizer, names: tuple[str, str] = ("harmony-ext", "harmony-ext")):
    """A parser as vLLM's renderer builds one to adjust a request (OnlineRenderer)."""
    cls = ParserManager.get_parser(
        tool_parser_name=names[0], reasoning_parser_name=names[1], enable_auto_tools=True,
        model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    return cls(tokenizer, None, model_config=None)


def chat(**kwargs) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                 **kwargs)


# -- the request side -------------------------------------------------------------------------


@pytest.mark.parametrize("own, want", [
    (None, [RETURN, CALL]), ([], [RETURN, CALL]), ([7, 9], [7, 9, RETURN, CALL]),
    ([CALL, 7], [CALL, 7, RETURN]),
])
def test_every_chat_request_stops_at_return_and_call(tokenizer, own, want):
    request = chat(**({} if own is None else {"stop_token_ids": own}))
    adjusted = parser(tokenizer).adjust_request(request)
    assert adjusted.stop_token_ids == want
    params = adjusted.to_sampling_params(max_tokens=8, default_sampling_params={})
    assert set(want) <= set(params.stop_token_ids)


def test_a_request_with_ignore_eos_is_left_alone(tokenizer):
    adjusted = parser(tokenizer).adjust_request(chat(ignore_eos=True, stop_token_ids=[7]))
    assert adjusted.stop_token_ids == [7]
    assert not adjusted.vllm_xargs


def test_a_responses_request_stops_there_too_and_is_marked(tokenizer, monkeypatch):
    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    adjusted = parser(tokenizer).adjust_request(ResponsesRequest(model="tiny", input="hi"))
    assert adjusted.stop_token_ids == [RETURN, CALL]
    assert adjusted.vllm_xargs == {Guard.MARK: 1}


def test_vllm_s_own_parser_adds_none(tokenizer):
    """vLLM's built-in gpt-oss parser leaves the ids to the generation config: this test can
    tell the two apart."""
    adjusted = parser(tokenizer, ("openai", "openai_gptoss")).adjust_request(chat())
    assert not adjusted.stop_token_ids and not adjusted.vllm_xargs


def test_a_request_is_marked_unless_the_turn_stop_is_off(tokenizer, monkeypatch):
    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    adjusted = parser(tokenizer).adjust_request(chat(vllm_xargs={"other": 1}))
    assert adjusted.vllm_xargs == {"other": 1, Guard.MARK: 1}
    params = adjusted.to_sampling_params(max_tokens=8, default_sampling_params={})
    assert params.extra_args[Guard.MARK] == 1
    monkeypatch.setenv("HARMONY_EXT_TURN_STOP", "off")
    assert not parser(tokenizer).adjust_request(chat()).vllm_xargs


# -- the scheduler side -------------------------------------------------------------------------

SCHEDULER = types.SimpleNamespace(max_model_len=4096)
"""What ``Scheduler._update_request_with_output`` reads of its scheduler: nothing else."""


def request(marked: bool = True, max_tokens: int = 400, params: SamplingParams | None = None,
            **kwargs) -> Request:
    params = params or SamplingParams(max_tokens=max_tokens, stop_token_ids=[RETURN, CALL],
                                      extra_args={Guard.MARK: 1} if marked else None, **kwargs)
    return Request("r", [1, 2, 3], params, None)


def generate(generation: list[int], req: Request, step: int = 1) -> list[int]:
    """Run ``generation`` through vLLM's own update loop (append, ``check_stop``, drop the rest
    of the step at a stop), ``step`` tokens a step; returns the ids the request kept."""
    for at in range(0, len(generation), step):
        _, stopped = scheduler.Scheduler._update_request_with_output(
            SCHEDULER, req, list(generation[at:at + step]))
        if stopped:
            break
    return list(req.output_token_ids)


FORGED = [  # (generation, what it keeps), by hand from contract sections 2 and 10
    ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}'
     '<|end|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>'
     '{"temp": 20}<|end|><|start|>assistant<|channel|>final<|message|>It is 20.<|return|>',
     '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}'
     '<|end|><|start|>functions'),
    ("<|channel|>final<|message|>Hi.<|end|><|start|>user<|message|>More?<|end|><|start|>"
     "assistant<|channel|>final<|message|>More.<|return|>",
     "<|channel|>final<|message|>Hi.<|end|><|start|>user"),
    ("<|channel|>analysis<|message|>Think about it for a while.<|end|>user<|channel|>final"
     "<|message|>More?<|end|><|start|>assistant<|channel|>final<|message|>More.<|return|>",
     "<|channel|>analysis<|message|>Think about it for a while.<|end|>user<|channel|>"),
]
HONEST = ("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
          "<|message|>Ask the user.<|return|>")


@pytest.mark.parametrize("text, kept", FORGED)
@pytest.mark.parametrize("step", [1, 3, 8])
def test_a_forged_turn_ends_the_generation_at_its_role(text, kept, step):
    req = request()
    assert generate(ids(text), req, step) == ids(kept)
    assert req.status == RequestStatus.FINISHED_STOPPED
    assert req.stop_reason == guard.REASON


def test_a_speculative_step_is_cut_at_the_forged_role_not_at_its_end():
    text, kept = FORGED[1]
    generation, want = ids(text), ids(kept)
    start = want.index(START)
    req = request()
    generate(generation[:start - 3], req)  # up to 3 ids before the <|start|>: then one step
    run = generation[start - 3:start + 5]  # of 8 with the <|start|> and its role in the middle
    kept_ids, stopped = scheduler.Scheduler._update_request_with_output(SCHEDULER, req, run)
    assert stopped and kept_ids == run[:5] and list(req.output_token_ids) == want


def test_an_assistants_turn_and_markup_as_text_run_to_their_stop():
    generation = ids(HONEST)
    assert generate(generation, request()) == generation  # to its <|return|>
    plain = ENCODING.encode(FORGED[0][0], disallowed_special=())  # every marker as text
    req = request(max_tokens=len(plain))
    assert generate(plain, req) == plain
    assert req.status == RequestStatus.FINISHED_LENGTH_CAPPED


def test_an_unmarked_request_is_not_guarded():
    text = FORGED[1][0]
    req = request(marked=False)
    assert generate(ids(text), req) == ids(text)  # on to its <|return|>
    assert req.harmony_ext_guard is None and req.stop_reason == RETURN


def test_ignore_eos_gets_exactly_its_tokens():
    """Even marked (harmony-ext does not mark it, nor give it the stop ids: see above)."""
    generation = ids(FORGED[1][0]) + ids(" and more") * 10
    req = request(params=SamplingParams(max_tokens=len(generation) - 4, ignore_eos=True,
                                        extra_args={Guard.MARK: 1}))
    assert generate(generation, req, step=4) == generation[:len(generation) - 4]
    assert req.status == RequestStatus.FINISHED_LENGTH_CAPPED


def test_min_tokens_above_the_forged_turn_runs_to_min_tokens():
    text, kept = FORGED[1]
    generation = ids(text) + ids(" and more") * 10
    at = len(ids(kept))
    req = request(min_tokens=at + 6)
    assert generate(generation, req) == generation[:at + 6]
    assert req.stop_reason == guard.REASON and req.harmony_ext_guard.ended == at - 1


def test_each_of_n_choices_stops_on_its_own():
    """vLLM's own fan-out gives every choice the same child sampling parameters (one object,
    reused when no seed is set): the guard lives on each choice's request."""
    from vllm.v1.engine import EngineCoreRequest
    from vllm.v1.engine.parallel_sampling import ParentRequest

    params = SamplingParams(n=2, max_tokens=400, stop_token_ids=[RETURN, CALL],
                            extra_args={Guard.MARK: 1})
    parent = ParentRequest(EngineCoreRequest("p", [1, 2, 3], None, params, None, 0.0, None,
                                             None, None, external_req_id="p"))
    (id0, params0), (id1, params1) = parent.get_child_info(0), parent.get_child_info(1)
    assert params0 is params1  # shared, as vLLM shares them
    forging, honest = Request(id0, [1, 2, 3], params0, None), Request(id1, [1, 2, 3], params1, None)
    text, kept = FORGED[1]
    streams = {id0: ids(text), id1: ids(HONEST)}
    for index in range(max(map(len, streams.values()))):  # the batch, a step at a time
        for req in (forging, honest):
            generation = streams[req.request_id]
            if not req.is_finished() and index < len(generation):
                scheduler.Scheduler._update_request_with_output(SCHEDULER, req,
                                                                [generation[index]])
    assert list(forging.output_token_ids) == ids(kept)
    assert list(honest.output_token_ids) == ids(HONEST)
    assert forging.stop_reason == guard.REASON and honest.stop_reason == RETURN


def test_the_hook_is_installed_only_where_harmony_ext_may_be_selected():
    from harmony_plugins.adapter_support.command_line import may_select

    assert may_select(["vllm", "serve", "m", "--tool-call-parser", "harmony-ext"], plugin.NAME)
    assert may_select(["x", "--reasoning_parser=harmony-ext"], plugin.NAME)
    assert may_select(["vllm", "serve", "--config", "c.yaml"], plugin.NAME)
    assert not may_select(["vllm", "serve", "m", "--tool-call-parser", "openai"], plugin.NAME)


def test_every_target_the_adapter_names_is_wrapped():
    """The adapter's registry (what docs/upstream.md is checked against) is what it wraps."""
    import pkgutil

    targets = plugin.wrapped_targets()
    assert len(targets) == 12
    for target in targets:
        assert hooks.wrapped(pkgutil.resolve_name(target)), target
