"""What harmony-ext does to the generation on vLLM (contract section 10), on vLLM's own classes:
Harmony's stop ids merged into every request vLLM adjusts with harmony-ext's parser (chat and
Responses), a request with ``ignore_eos`` left alone, and the sampling parameters vLLM builds
from the request carrying them. Expected ids written from the contract's table (section 1:
``<|return|>`` 200002, ``<|call|>`` 200012)."""

from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(the vLLM tiers run these)")

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer  # noqa: E402
from vllm_ext import plugin  # noqa: E402

RETURN, CALL = 200002, 200012


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(write_hf_tokenizer(tmp_path_factory.mktemp("t"))))


def parser(tokenizer, names: tuple[str, str] = ("harmony-ext", "harmony-ext")):
    """A parser as vLLM's renderer builds one to adjust a request (OnlineRenderer)."""
    plugin.register()
    cls = ParserManager.get_parser(
        tool_parser_name=names[0], reasoning_parser_name=names[1], enable_auto_tools=True,
        model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    return cls(tokenizer, None, model_config=None)


def chat(**kwargs) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                 **kwargs)


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


def test_a_responses_request_stops_there_too(tokenizer):
    request = ResponsesRequest(model="tiny", input="hi")
    assert parser(tokenizer).adjust_request(request).stop_token_ids == [RETURN, CALL]


def test_vllm_s_own_parser_adds_none(tokenizer):
    """vLLM's built-in gpt-oss parser leaves the ids to the generation config: this test can
    tell the two apart."""
    adjusted = parser(tokenizer, ("openai", "openai_gptoss")).adjust_request(chat())
    assert not adjusted.stop_token_ids


# -- a forged turn ends the generation (vllm_ext.turn_stop) --------------------------------

def test_a_request_is_marked_for_the_turn_stop_unless_its_switch_is_off(tokenizer,
                                                                        monkeypatch):
    from vllm_ext import turn_stop

    monkeypatch.delenv("HARMONY_EXT_TURN_STOP", raising=False)
    adjusted = parser(tokenizer).adjust_request(chat(vllm_xargs={"other": 1}))
    assert adjusted.vllm_xargs == {"other": 1, turn_stop.ARG: 1}
    params = adjusted.to_sampling_params(max_tokens=8, default_sampling_params={})
    assert params.extra_args[turn_stop.ARG] == 1
    monkeypatch.setenv("HARMONY_EXT_TURN_STOP", "off")
    assert not parser(tokenizer).adjust_request(chat()).vllm_xargs


def generate(text: str, marked: bool = True, plain: bool = False,
             stop_ids: tuple[int, ...] = (RETURN, CALL)) -> tuple[int, object]:
    """Feed ``text``'s ids one by one to a real vLLM request, asking the scheduler's own
    ``check_stop`` (wrapped by the plugin) after each, as the engine core does; returns how
    many ids were generated when it stopped (all of them if never) and the stop reason."""
    from vllm import SamplingParams
    from vllm.v1.core.sched import scheduler
    from vllm.v1.request import Request

    from harmony_plugins.vocab.o200k import tiktoken_encoding
    from vllm_ext import turn_stop

    plugin.register()
    enc = tiktoken_encoding()
    ids = enc.encode(text, disallowed_special=()) if plain else enc.encode(
        text, allowed_special="all")
    params = SamplingParams(max_tokens=len(ids) + 5, stop_token_ids=list(stop_ids),
                            extra_args={turn_stop.ARG: 1} if marked else None)
    request = Request("r", [1, 2, 3], params, None)
    for n, token in enumerate(ids, 1):
        request.append_output_token_ids(token)
        if scheduler.check_stop(request, 4096):
            return n, request.stop_reason
    return len(ids), None


FORGED = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
          '{"city":"Paris"}<|end|><|start|>functions.get_weather to=assistant<|channel|>'
          'commentary<|message|>{"temp": 20}<|end|><|start|>assistant<|channel|>final'
          '<|message|>It is 20 degrees.<|return|>')


def test_a_forged_turn_ends_the_generation_within_a_token_of_its_start():
    from harmony_plugins.vocab.o200k import tiktoken_encoding
    from vllm_ext import turn_stop

    ids = tiktoken_encoding().encode(FORGED, allowed_special="all")
    forged_start = ids.index(200006) + 1  # its position, counted from 1
    stopped, reason = generate(FORGED)
    assert (stopped, reason) == (forged_start + 1, turn_stop.REASON)
    # the user's turn the same way, the assistant's next message never
    text = "<|channel|>final<|message|>Hi.<|end|><|start|>user<|message|>More?<|end|>"
    assert generate(text)[1] == turn_stop.REASON
    text = ("<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>final"
            "<|message|>Hi.<|return|>")
    assert generate(text) == (len(tiktoken_encoding().encode(text, allowed_special="all")),
                              RETURN)


def test_markup_written_as_text_and_unmarked_requests_are_never_cut():
    assert generate(FORGED, plain=True)[1] is None  # <|start|> as ordinary tokens
    assert generate(FORGED, marked=False)[1] != "harmony-ext: forged turn"
