"""What harmony-ext does to the generation on SGLang (contract section 10), on SGLang's own code:

* the request side, through SGLang's real chat and Responses serving (only the model
  scripted): Harmony's stop ids and the guard's mark on what SGLang sends the scheduler, with
  harmony-ext's rendering and with SGLang's chat template (``HARMONY_EXT_CHAT_TEMPLATE=1``);
* the scheduler side: SGLang's own ``Req.update_finish_state`` (hooked as the plugin hooks it)
  fed one token a step, and accepted runs of 8 as speculative decoding feeds it, ends a marked
  request's output at a forged turn, never where an answer writes ``<|start|>user`` as text;
* the response: those ids through SGLang's detokenizer's stop trim and harmony-ext's parsers,
  in a process with ``--enable-metrics``, count ``forged_turn`` once and report no matched token.

Expected ids written from the contract's table (section 1: ``<|start|>`` 200006, ``<|return|>``
200002, ``<|call|>`` 200012); where each generation ends, by hand from sections 2 and 10."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sglang.srt.managers.schedule_batch import FINISH_LENGTH, FINISH_MATCHED_TOKEN, Req
from sglang.srt.sampling.sampling_params import SamplingParams

from harmony_plugins import Guard
from harmony_plugins.adapter_support.command_line import may_select
from harmony_plugins.vocab.o200k import tiktoken_encoding
from sglang_ext import guard, plugin
from tests.sglang import responses_serving as rs
from tests.sglang.sglang_process import run_script

RETURN, CALL, START = 200002, 200012, 200006
NAME = "harmony-ext"
ENCODING = tiktoken_encoding()


def ids(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


@pytest.fixture(scope="module", autouse=True)
def guard_installed() -> None:
    """The scheduler's wrap as a server that selects harmony-ext has it (pytest's command line
    selects nothing, so the plugin left it out here)."""
    assert plugin.install_guard(["sglang.launch_server", "--tool-call-parser", NAME]) == "on"


# -- the request side ---------------------------------------------------------------------------


def sent(sglang_chat: Any, parser: str = NAME, **request: Any) -> Any:
    """The sampling parameters SGLang's chat serving sends the scheduler for one request."""
    result = sglang_chat(["<|channel|>final<|message|>Hi.<|return|>"], stream=False,
                         tool_parser=parser, reasoning_parser=parser, **request)
    return result.requests[0].sampling_params


@pytest.mark.parametrize("template", [None, "1"])
def test_a_chat_request_gets_the_stop_ids_and_the_mark_whoever_renders(sglang_chat, monkeypatch,
                                                                      template):
    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    if template:
        monkeypatch.setenv("HARMONY_EXT_CHAT_TEMPLATE", template)
    else:
        monkeypatch.delenv("HARMONY_EXT_CHAT_TEMPLATE", raising=False)
    params = sent(sglang_chat, stop_token_ids=[7], custom_params={"mine": 1})
    assert set(params.stop_token_ids) == {7, RETURN, CALL}  # SGLang keeps them as a set
    assert params.custom_params["mine"] == 1 and params.custom_params[Guard.MARK] is True


def test_what_is_not_marked(sglang_chat, monkeypatch):
    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    exact = sent(sglang_chat, ignore_eos=True)
    assert not exact.stop_token_ids and Guard.MARK not in (exact.custom_params or {})
    theirs = sent(sglang_chat, parser="gpt-oss")
    assert Guard.MARK not in (theirs.custom_params or {})
    monkeypatch.setenv("HARMONY_EXT_TURN_STOP", "0")
    off = sent(sglang_chat)
    assert {RETURN, CALL} <= set(off.stop_token_ids)
    assert Guard.MARK not in (off.custom_params or {})


def test_each_generation_of_a_responses_request_is_marked(gpt_oss_model_dir, monkeypatch):
    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    ours = rs.ResponsesServer(gpt_oss_model_dir, NAME, NAME)
    got = ours.run(rs.ids_of("<|channel|>final<|message|>Hi.<|return|>"), stream=False)
    assert got.error is None and got.sampling
    assert all(p.custom_params[Guard.MARK] is True for p in got.sampling)
    theirs = rs.ResponsesServer(gpt_oss_model_dir, "gpt-oss", "gpt-oss")
    got = theirs.run(rs.ids_of("<|channel|>final<|message|>Hi.<|return|>"), stream=False)
    assert got.sampling and all(Guard.MARK not in (p.custom_params or {}) for p in got.sampling)


def test_the_scheduler_wrap_is_installed_only_where_harmony_ext_may_be_selected(monkeypatch):
    def installed(argv: list[str]) -> str:
        calls = []
        monkeypatch.setattr(guard, "install", lambda: calls.append("install"))
        status = plugin.install_guard(argv)
        assert (status == "on") is (calls == ["install"])
        return status

    assert installed(["sglang.launch_server", "--tool-call-parser", NAME]) == "on"
    assert installed(["sglang.launch_server", "--config", "server.yaml"]) == "on"
    assert installed(["sglang.launch_server", "--tool-call-parser", "gpt-oss"]).startswith("off")
    assert may_select(["x", "--reasoning_parser", NAME], NAME)


def test_the_wrap_is_sglang_s_own_method_wrapped_once():
    from sglang.srt.managers.schedule_batch import Req

    from harmony_plugins.adapter_support import hooks

    assert plugin.wrapped_targets() == (guard.TARGET,)
    assert hooks.wrapped(Req.update_finish_state)
    assert plugin.install_guard(["x", "--tool-call-parser", NAME]) == "on"  # again: no nesting
    assert not hooks.wrapped(Req.update_finish_state.__wrapped__)
    assert guard.check() is None


# -- the scheduler side -------------------------------------------------------------------------


def req(marked: bool = True, stop_ids: tuple[int, ...] = (RETURN, CALL), min_new_tokens: int = 0,
        **kwargs: Any) -> Req:
    params = SamplingParams(max_new_tokens=kwargs.pop("max_new_tokens", 400),
                            stop_token_ids=list(stop_ids),
                            custom_params={Guard.MARK: True} if marked else None, **kwargs)
    params.normalize(None)  # (with no tokenizer here, SGLang refuses min_new_tokens: set after)
    params.min_new_tokens = min_new_tokens
    return Req("r1", "", [1, 2], params)


def generate(generation: list[int], request: Req, step: int = 1) -> list[int]:
    """Feed ``generation`` to SGLang's ``Req`` as its scheduler does (extend the output by the
    step's accepted run, then ``update_finish_state`` with its length); the ids it keeps."""
    for at in range(0, len(generation), step):
        run = generation[at:at + step]
        request.output_ids.extend(run)
        request.update_finish_state(len(run))
        if request.finished():
            break
    kept = request.finished_len if request.finished_len is not None else len(request.output_ids)
    return list(request.output_ids[:kept])


FORGED = [  # (generation, what it keeps)
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
def test_a_forged_turn_ends_the_output_at_its_role(text, kept, step):
    request = req()
    assert generate(ids(text), request, step) == ids(kept)
    assert isinstance(request.finished_reason, FINISH_MATCHED_TOKEN)
    assert request.finished_reason.matched is None  # no token of the text to trim


def test_an_accepted_run_of_8_is_cut_at_the_forged_role_in_its_middle():
    text, kept = FORGED[1]
    generation, want = ids(text), ids(kept)
    start = want.index(START)
    request = req()
    generate(generation[:start - 3], request)
    run = generation[start - 3:start + 5]  # the <|start|> and its role at 4 and 5 of 8
    request.output_ids.extend(run)
    request.update_finish_state(8)
    assert request.finished_len == len(want) and list(request.output_ids[:len(want)]) == want
    assert len(request.output_ids) == len(want) + 3  # SGLang drops the rest at finished_len


def test_sglang_s_own_stop_wins_when_it_comes_first():
    """A stop id before the forged turn in one run: SGLang's own finish stands."""
    generation = ids("<|channel|>final<|message|>Hi.<|return|><|start|>user<|message|>x")
    at = generation.index(RETURN)
    request = req()
    generate(generation[:at - 1], request)
    assert generate(generation[at - 1:], request, step=8) == generation[:at + 1]
    assert request.finished_reason.matched == RETURN


def test_an_assistants_turn_and_markup_as_text_run_to_their_stop():
    assert generate(ids(HONEST), req()) == ids(HONEST)
    plain = ENCODING.encode(FORGED[0][0], disallowed_special=())
    request = req(max_new_tokens=len(plain))
    assert generate(plain, request, step=8) == plain
    assert isinstance(request.finished_reason, FINISH_LENGTH)


def test_an_unmarked_request_is_not_guarded():
    request = req(marked=False)
    assert generate(ids(FORGED[1][0]), request) == ids(FORGED[1][0])
    assert request.harmony_ext_guard is None and request.finished_reason.matched == RETURN


def test_ignore_eos_gets_exactly_its_tokens():
    generation = ids(FORGED[1][0]) + ids(" and more") * 10
    request = req(stop_ids=(), ignore_eos=True, max_new_tokens=len(generation) - 4)
    assert generate(generation, request, step=8) == generation[:len(generation) - 4]
    assert isinstance(request.finished_reason, FINISH_LENGTH)


def test_min_new_tokens_above_the_forged_turn_runs_to_min_new_tokens():
    text, kept = FORGED[1]
    generation = ids(text) + ids(" and more") * 10
    at = len(ids(kept))
    request = req(min_new_tokens=at + 6)
    assert generate(generation, request, step=8) == generation[:at + 6]
    assert request.harmony_ext_guard.ended == at - 1


def test_each_of_n_choices_stops_on_its_own():
    text, kept = FORGED[1]
    forging, honest = req(), req()
    streams = [(forging, ids(text)), (honest, ids(HONEST))]
    for index in range(max(len(g) for _, g in streams)):
        for request, generation in streams:
            if not request.finished() and index < len(generation):
                request.output_ids.append(generation[index])
                request.update_finish_state(1)
    assert generate([], forging) == ids(kept) and generate([], honest) == ids(HONEST)


# -- the response ------------------------------------------------------------------------------

SCRIPT = r"""
import json, sys, types
from sglang.srt.managers.detokenizer_manager import DetokenizerManager
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.sampling.sampling_params import SamplingParams
from transformers import AutoTokenizer
from harmony_plugins import Guard
from harmony_plugins.vocab.o200k import tiktoken_encoding
from harmony_ext_testing.sglang_serving import HARMONY_TEST_TEMPLATE, shared_server
from tests.sglang import sglang_process as mp

mp.load_plugins()
from sglang_ext import plugin
plugin.install_guard(["sglang.launch_server", "--tool-call-parser", "harmony-ext"])
model = sys.argv[1]
text = ('<|channel|>analysis<|message|>Check.<|end|><|start|>assistant<|channel|>final'
        '<|message|>Hi.<|end|><|start|>user<|message|>More?<|end|><|start|>assistant')
generation = tiktoken_encoding().encode(text, allowed_special="all")
params = SamplingParams(max_new_tokens=400, stop_token_ids=[200002, 200012],
                        custom_params={Guard.MARK: True})
params.normalize(None)
req = Req("r1", "", [1, 2], params)
for at in range(0, len(generation), 8):  # runs of 8, as speculative decoding accepts them
    run = generation[at:at + 8]
    req.output_ids.extend(run)
    req.update_finish_state(len(run))
    if req.finished():
        break
finish = req.finished_reason.to_json()
ids = list(req.output_ids[:req.finished_len])
# SGLang's detokenizer: its stop trim (the manager's two attributes it reads), then decoding
detokenizer = types.SimpleNamespace(is_tool_call_parser_gpt_oss=True, tool_close_token_ids=())
read = DetokenizerManager.trim_matched_stop(detokenizer, ids, finish, False)
decoded = AutoTokenizer.from_pretrained(model).decode(read, skip_special_tokens=False)
pieces = mp.token_pieces(model, decoded)
out = {"finish": finish, "decoded": decoded}
for stream in (False, True):
    counter = mp.Counted()
    body = {"model": "gpt-oss", "messages": [{"role": "user", "content": "Hi"}]}
    answer = shared_server(mp.Path(model), enable_metrics=True).chat(
        pieces if stream else [decoded], stream=stream, template=HARMONY_TEST_TEMPLATE,
        tool_parser="harmony-ext", reasoning_parser="harmony-ext", finish=finish,
        send_raw=True, body=body)
    if stream:
        joined = answer.joined()
        matched = [c["choices"][0].get("matched_stop") for c in answer.chunks
                   if c["choices"] and c["choices"][0].get("finish_reason")]
        got = {"content": joined["content"], "reasoning": joined["reasoning"],
               "matched_stop": matched}
    else:
        choice = answer.body["choices"][0]
        got = {"content": choice["message"]["content"],
               "reasoning": choice["message"]["reasoning_content"],
               "matched_stop": [choice.get("matched_stop")]}
    out["streamed" if stream else "whole"] = {**got, "counted": counter.added()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def response(gpt_oss_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return run_script(SCRIPT, gpt_oss_model_dir, tmp_path_factory.mktemp("guard_metrics"))


def test_the_stopped_output_keeps_the_forged_role_through_the_detokenizer(response):
    assert response["finish"] == {"type": "stop", "matched": None}
    assert response["decoded"].endswith("<|end|><|start|>user")


@pytest.mark.parametrize("way", ["whole", "streamed"])
def test_the_response_counts_the_forged_turn_once_and_names_no_token(response, way):
    got = response[way]
    assert (got["reasoning"], got["content"]) == ("Check.", "Hi.")
    assert got["counted"]["recoveries"] == {"forged_turn": 1}
    assert got["counted"]["responses"] == 1
    assert got["matched_stop"] == [None]
